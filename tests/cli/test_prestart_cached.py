"""A `tick` starts the fork servers its config made last time before it reads the config (SpecCache): the
parse, and pydantic's import before it, no longer delay its first python runs. In-process, on a real config,
real fork servers and the real cache file."""

from __future__ import annotations

import os
import threading
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest

from cronwright.fronts.cli.runtime import Runtime
from cronwright.targets.cache import SpecCache, cache_dir

from .blackbox import children, wait_for

ACTIONS = """
import cronwright

@cronwright.action
def noop() -> None:
    pass
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "acts.py").write_text(ACTIONS)
    path = tmp_path / "cronwright.toml"
    path.write_text(
        f'[node]\nstore = "sqlite:///{tmp_path}/cw.db"\n\n'
        '[targets.py]\nkind = "python"\nmodule = "acts"\npath = ["scripts"]\n'
    )
    return path


def servers() -> set[int]:
    """This process's live fork servers."""
    found = set()
    for pid in children(os.getpid()):
        try:
            if b"cronwright.targets.forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
        except OSError:
            continue  # it ended while being read
    return found


def starters() -> set[threading.Thread]:
    """The threads of this process starting a fork server in the background (`Pool.prestart`)."""
    return {thread for thread in threading.enumerate() if thread.name == "cronwright-forkserver-start"}


def starting(before: AbstractSet[threading.Thread] = frozenset()) -> bool:
    """Whether a server start begun since `before` runs: an earlier test's start, still finishing on a
    busy machine, is not this test's."""
    return bool(starters() - before)


def test_a_tick_starts_the_servers_its_config_made_last_time_before_it_parses_it(config: Path) -> None:
    first = Runtime(str(config))
    try:
        first.app(boot=True)  # a tick's app: it puts its specs in the cache
    finally:
        first.close()
    [spec] = SpecCache(cache_dir()).get(config)
    assert (spec.module, spec.paths) == ("acts", (str(config.parent / "scripts"),))
    before, earlier = servers(), starters()

    second = Runtime(str(config))
    try:
        second.prestart_workers()
        assert second._config is None  # started before the config was parsed, and without parsing it
        wait_for("the fork server", lambda: len(servers() - before) == 1)
    finally:
        second.close()  # no app was built: the close ends the servers started for it
    wait_for("the server's start to end", lambda: not starting(earlier))
    wait_for("no server left", lambda: not servers() - before)


def test_a_config_edited_since_starts_nothing_early(config: Path) -> None:
    first = Runtime(str(config))
    try:
        first.app(boot=True)
    finally:
        first.close()
    config.write_text(config.read_text() + "\n# edited\n")
    before, earlier = servers(), starters()

    runtime = Runtime(str(config))
    try:
        runtime.prestart_workers()
        assert not starting(earlier)
        assert not servers() - before
    finally:
        runtime.close()
