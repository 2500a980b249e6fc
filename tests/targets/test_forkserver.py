"""Python workers are forked by a fork server per target: never by the node, each in its own session, each
importing the target module itself; the server is replaced when it dies and ends with the pool or the node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cli.blackbox import alive
from cronwright.core.model import Outcome, Result
from cronwright.targets.executor import TargetRunner
from cronwright.targets.pool import Pool

from .conftest import MakeRunner, job, occurrence, write_module

# Each action answers with what the test needs to see of the worker process that ran it.
ACTIONS = """
    import json, os, random, time
    from pathlib import Path
    import cronwright

    # Import time: each process that imports the module leaves its pid here.
    if "CW_MARKS" in os.environ:
        Path(os.environ["CW_MARKS"], f"imported.{os.getpid()}").write_text("")

    @cronwright.action
    def family(gate: str = "") -> str:
        if gate:
            Path(f"{gate}.{os.getpid()}").write_text("")
            while not Path(gate).exists():
                time.sleep(0.005)
        return json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0),
                           "random": random.getrandbits(64)})
"""


def _runner(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: Pool | None = None
) -> TargetRunner:
    (tmp_path / "marks").mkdir()
    monkeypatch.setenv("CW_MARKS", str(tmp_path / "marks"))
    write_module(tmp_path / "scripts", "fam", ACTIONS)
    target = {"kind": "python", "module": "fam", "path": ["scripts"], "env": ["CW_MARKS"]}
    _, runner = make_runner({"fam": target}, pool=pool)
    return runner


def _family(result: Result) -> dict[str, int]:
    assert result.outcome is Outcome.OK, result
    found: dict[str, int] = json.loads(result.message)
    return found


def _together(runner: TargetRunner, tmp_path: Path, count: int) -> list[dict[str, int]]:
    """`count` runs held in flight at once (so each has a worker of its own), then let go."""
    gate = tmp_path / "gate"
    with ThreadPoolExecutor(count) as threads:
        futures = [
            threads.submit(runner.run, job("fam", "family", {"gate": str(gate)}), occurrence())
            for _ in range(count)
        ]
        wait_for(lambda: len(list(tmp_path.glob("gate.*"))) == count)
        gate.touch()
        return [_family(future.result(timeout=30)) for future in futures]


def test_workers_are_forked_by_one_server_that_is_not_the_node(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(make_runner, tmp_path, monkeypatch)
    seen = _together(runner, tmp_path, 3)
    assert len({worker["pid"] for worker in seen}) == 3
    [server] = {worker["ppid"] for worker in seen}
    assert server != os.getpid()
    command = Path(f"/proc/{server}/cmdline").read_bytes().split(b"\0")
    assert b"cronwright.targets.forkserver" in command
    # Each worker leads a session of its own, so that a kill takes whatever it spawned with it.
    assert all(worker["sid"] == worker["pid"] for worker in seen)
    # Forked workers do not share a random state (Python reseeds `random` in a forked child).
    assert len({worker["random"] for worker in seen}) == 3


def test_the_target_module_is_imported_by_each_worker_and_never_by_the_server(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(make_runner, tmp_path, monkeypatch)
    seen = _together(runner, tmp_path, 2)
    # The registry's describe (at boot) imported it in a one-off worker too: only workers ever do.
    imported = {int(mark.name.split(".")[1]) for mark in (tmp_path / "marks").glob("imported.*")}
    workers = {worker["pid"] for worker in seen}
    assert workers <= imported and len(imported - workers) == 1  # the workers, and describe's
    assert seen[0]["ppid"] not in imported


def test_a_killed_fork_server_is_replaced_and_the_next_run_is_ok(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(make_runner, tmp_path, monkeypatch)
    first = _family(runner.run(job("fam", "family"), occurrence()))
    os.kill(first["ppid"], signal.SIGKILL)
    # The idle worker it forked is killed with it (nobody could tell how it ends); a new server forks anew.
    wait_for(lambda: not alive(first["pid"]))
    second = _family(runner.run(job("fam", "family"), occurrence()))
    assert second["ppid"] not in (first["ppid"], os.getpid())
    assert second["pid"] != first["pid"]


def test_closing_the_pool_ends_its_server_and_workers(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(make_runner, tmp_path, monkeypatch, pool=Pool())
    seen = _together(runner, tmp_path, 2)
    runner.close()
    for pid in (seen[0]["ppid"], *(worker["pid"] for worker in seen)):
        assert not alive(pid), pid


def _servers_of(pid: int) -> list[int]:
    """The live fork servers whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue  # it ended while being read
        if parent == pid and b"cronwright.targets.forkserver" in command:
            found.append(int(entry.name))
    return found


def _prestarted(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[TargetRunner, set[int]]:
    """A runner whose pool was told to prestart its one target's server, and the servers alive before."""
    runner = _runner(make_runner, tmp_path, monkeypatch, pool=Pool())
    before = set(_servers_of(os.getpid()))
    runner.pool.prestart(runner.registry.python_workers()[0])
    return runner, before


def test_a_prestarted_server_starts_no_worker_and_forks_the_first_run_s(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, before = _prestarted(make_runner, tmp_path, monkeypatch)
    wait_for(lambda: len(set(_servers_of(os.getpid())) - before) == 1)
    [server] = set(_servers_of(os.getpid())) - before
    # Only the server: no worker has imported the target module (describe's one-off worker did, at boot).
    assert len(list((tmp_path / "marks").glob("imported.*"))) == 1
    assert _family(runner.run(job("fam", "family"), occurrence()))["ppid"] == server


def test_a_pool_closed_while_its_prestarted_server_starts_leaves_no_server_behind(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, before = _prestarted(make_runner, tmp_path, monkeypatch)
    # Closed as soon as the server's process exists, while its interpreter still starts (tens of ms):
    # it comes up after the close, and the thread that started it ends it. (Under load it may be up
    # first; then the close ends it. Either way none is left.)
    wait_for(lambda: bool(set(_servers_of(os.getpid())) - before))
    runner.close()
    wait_for(lambda: not any(t.name == "cronwright-forkserver-start" for t in threading.enumerate()))
    assert not set(_servers_of(os.getpid())) - before


NODE_THAT_DIES = """
    import json, os, sys
    from datetime import UTC, datetime
    from cronwright.targets.attempt import Call
    from cronwright.targets.specs import WorkerSpec
    from cronwright.targets.pool import Pool

    envelope = {"schedule": "s", "job_id": 1, "target": "fam", "action": "family", "args": {},
                "cron": {"fire_id": "1", "attempt": 1, "scheduled_for": "2026-03-02T08:00:00+00:00",
                         "nominal": "2026-03-02T08:00:00+00:00", "fired_at": "2026-03-02T08:00:00+00:00"}}
    finished = Pool().run(WorkerSpec("fam", (sys.argv[1],), sys.argv[1]), "family",
                          Call(envelope, {}, 30.0, datetime.now(UTC)))
    print(finished.message, flush=True)
    os._exit(0)  # no close: the node dies with its server and a worker alive
"""


def test_a_node_that_dies_leaves_neither_its_server_nor_its_workers_behind(tmp_path: Path) -> None:
    write_module(tmp_path / "scripts", "fam", ACTIONS)
    script = tmp_path / "node.py"
    script.write_text(textwrap.dedent(NODE_THAT_DIES))
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "scripts")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = _family(Result(Outcome.OK, done.stdout.strip()))
    # The server reads the end of the node's socket, the worker the end of its stdin: both exit.
    wait_for(lambda: not alive(seen["ppid"]) and not alive(seen["pid"]))


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
