"""`cronwright init`'s starter: a config and an example target that fire for real, never overwriting."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronwright.config.settings import load
from cronwright.core.model import Outcome
from cronwright.targets.executor import TargetRunner
from cronwright.targets.registry import build_registry
from cronwright.targets.secrets import Secrets
from cronwright.targets.starter import write_starter

from .conftest import job, occurrence


def test_the_starter_config_loads_and_its_hello_action_runs(tmp_path: Path) -> None:
    written = write_starter(tmp_path)
    assert written == [tmp_path / "cronwright.toml", tmp_path / "scripts" / "hello.py"]
    loaded = load(str(tmp_path / "cronwright.toml"))
    assert loaded.node.store == "sqlite:///.cronwright/cronwright.db"
    [seed] = loaded.seed
    assert (seed["target"], seed["action"], seed["schedule"], seed["lifetime"]) == (
        "hello",
        "greet",
        {"cron": "* * * * *"},
        "7d",
    )
    registry = build_registry(loaded, cache_dir=tmp_path / "cache")
    registry.check("hello", "greet", seed["args"])
    runner = TargetRunner(registry, Secrets())
    try:
        result = runner.run(job("hello", "greet", seed["args"]), occurrence())
    finally:
        runner.close()
    assert (result.outcome, result.message) == (Outcome.OK, "hello, world")
    assert "fire fire-1, attempt 1" in result.output


def test_the_starter_never_overwrites_and_writes_nothing_when_refused(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "hello.py").write_text("# mine\n")
    with pytest.raises(FileExistsError, match=r"hello\.py already exists"):
        write_starter(tmp_path)
    assert not (tmp_path / "cronwright.toml").exists()
    assert (tmp_path / "scripts" / "hello.py").read_text() == "# mine\n"
