"""SIGKILL of a real `cronwright serve` in the middle of a burst of python runs (semantic 19, "never twice").

The product as users run it: the binary, its warm python workers, SQLite. A serving node claims only as
many occurrences as it has free slots and starts each at once, so when it dies the runs it had claimed are
the ones in flight (at most max_concurrency); the next process records those `interrupted`, runs what was
never claimed, and nothing runs twice or is lost.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cli.blackbox import Cronwright, alive, descendants, wait_for
from faketime import needs_faketime

from .helpers import one_shots

JOBS = 40
SLOTS = 4  # max_concurrency
BEFORE_KILL = 10  # runs started before the kill

ACTIONS = """
import os, time
import cronwright

RAN_LOG = {ran!r}

@cronwright.action
def work(ctx: cronwright.Context) -> None:
    # One write, made durable: a kill never tears a line, and a line means the action started.
    fd = os.open(RAN_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{{ctx.fire_id}} {{ctx.attempt}}\\n".encode())
    os.fsync(fd)
    os.close(fd)
    time.sleep(0.2)  # the work itself: long enough that the kill finds runs in flight
"""


@needs_faketime
def test_serve_killed_mid_burst_interrupts_only_its_runs_in_flight_and_loses_none(tmp_path: Path) -> None:
    cw = Cronwright(tmp_path, max_concurrency=SLOTS)
    ran = tmp_path / "ran.log"
    (tmp_path / "acts.py").write_text(ACTIONS.format(ran=str(ran)), encoding="utf-8")
    with cw.config.open("a", encoding="utf-8") as config:
        config.write('\n[targets.py]\nkind = "python"\nmodule = "acts"\npath = ["."]\n')
    now = datetime.now(UTC).replace(microsecond=0)
    one_shots(cw.store, JOBS, now, prefix="burst", target="py", action="work")
    serve = cw.popen("serve")
    try:
        wait_for(
            f"{BEFORE_KILL} runs to start",
            lambda: ran.exists() and len(ran.read_text().splitlines()) >= BEFORE_KILL,
            timeout=60,
        )
        workers = descendants(serve.pid)  # the workers' fork server, and the workers it forked
        os.kill(serve.pid, signal.SIGKILL)
        serve.wait(timeout=30)
        # Its python workers outlive it by the action in hand: count the starts once they are gone.
        wait_for("the dead node's workers to exit", lambda: not any(alive(pid) for pid in workers))
    finally:
        if serve.poll() is None:
            serve.kill()
        serve.communicate(timeout=30)
    assert serve.returncode == -signal.SIGKILL
    killed_at = len(ran.read_text().splitlines())

    # Past the dead node's lease, a tick records its runs interrupted and runs what it never claimed.
    later = (now + timedelta(minutes=3)).isoformat()
    tick = cw.json("tick", at=later)
    history = cw.json("history", "--limit", "1000", at=later)["runs"]
    listed = cw.json("list", "--limit", "1000", at=later)["jobs"]

    started = Counter(line.split()[0] for line in ran.read_text().splitlines())
    assert started and max(started.values()) == 1, "an occurrence started twice"
    assert len(history) == JOBS and len({run["fire_id"] for run in history}) == JOBS, "one run each"
    outcomes = Counter(run["outcome"] for run in history)
    assert set(outcomes) <= {"ok", "interrupted"}, outcomes
    interrupted = {run["fire_id"] for run in history if run["outcome"] == "interrupted"}
    # Only what the dead node had claimed, its runs in flight, is interrupted: at most its slots.
    assert 1 <= len(interrupted) <= SLOTS, outcomes
    assert not interrupted & set(tick["fire_ids"]), "an interrupted run ran again"
    for run in history:
        if run["outcome"] == "ok":
            assert started[run["fire_id"]] == 1, run  # it really ran, once
        else:
            assert "stopped renewing its lease" in run["message"], run
    # The tick ran only what the dead node never claimed: each of its runs started after the kill.
    late_starts = set(list(started)[killed_at:])
    assert set(tick["fire_ids"]) == late_starts, (tick["fire_ids"], late_starts)
    states = Counter(job["state"] for job in listed)
    assert states == Counter({"done": JOBS - len(interrupted), "failed": len(interrupted)}), states
