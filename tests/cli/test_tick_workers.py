"""`cronwright tick`'s python runs, black-box: each in a worker of its own, forked by one fork server that
is a child of the tick process (never the tick process itself), and nothing of them outlives the tick."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from .blackbox import TIMEOUT, Cronwright, alive, children, wait_for

RUNS = 4
ACTIONS = """
import json, os, time
from pathlib import Path
import cronwright

@cronwright.action
def hold(gate: str) -> str:
    Path(f"{gate}.{os.getpid()}").write_text("")
    while not Path(gate).exists():
        time.sleep(0.005)
    return json.dumps({"pid": os.getpid(), "ppid": os.getppid()})
"""


def test_a_ticks_python_runs_are_forked_workers_of_its_fork_server_and_none_outlives_it(
    cw: Cronwright,
) -> None:
    cw.add_python_target(ACTIONS)
    gate = cw.folder / "gate"
    now = datetime.now(UTC).isoformat()
    for index in range(RUNS):
        args = json.dumps({"gate": str(gate)})
        cw.json("add", f"hold-{index}", "--target", "py", "--action", "hold", "--args", args, "--at", now)

    with cw.popen("tick", "--json") as tick:
        # Every run holds its worker until the gate opens: RUNS workers at once.
        wait_for("every run to start", lambda: len(list(cw.folder.glob("gate.*"))) == RUNS, timeout=TIMEOUT)
        servers = children(tick.pid)
        gate.touch()
        out, err = tick.communicate(timeout=TIMEOUT)
    assert tick.returncode == 0, err
    assert json.loads(out)["fired"] == RUNS

    runs = cw.json("history", "--limit", "100")["runs"]
    assert [run["outcome"] for run in runs] == ["ok"] * RUNS, runs
    seen = [json.loads(run["message"]) for run in runs]
    assert len({worker["pid"] for worker in seen}) == RUNS
    [server] = {worker["ppid"] for worker in seen}
    assert server in servers and server != tick.pid
    for pid in (server, *(worker["pid"] for worker in seen)):
        assert not alive(pid), f"process {pid} outlived the tick"


def _servers_in(folder: Path) -> list[int]:
    """Live fork servers started for a target of this folder's config (their working directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
            here = os.readlink(entry / "cwd")
        except (OSError, ValueError):
            continue  # not a process, one of another user, or it ended while being read
        if b"cronwright.targets.forkserver" in command and here == str(folder) and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_a_tick_with_nothing_due_ends_and_leaves_no_fork_server_behind(cw: Cronwright) -> None:
    # A tick starts its python targets' fork servers while it boots, before it knows whether anything
    # is due, and waits for none of them: with nothing due, each one still ends with it.
    cw.add_python_target(ACTIONS)
    for _ in range(3):
        assert cw.json("tick")["fired"] == 0
    wait_for("the fork servers to end", lambda: not _servers_in(cw.folder), timeout=TIMEOUT)
