"""SIGKILL of a node in the middle of 1,000 runs, then a restart (DESIGN semantics 19 and "never twice").

A run whose process died is recorded `interrupted` and never run again; every occurrence is accounted for.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

from conftest import ScriptedRunner, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.leases import LEASE_TTL
from cronwright.core.model import Outcome, State
from cronwright.store.sqlite import SqliteStore
from faketime import faketime_env, needs_faketime

from .helpers import CRONWRIGHT, cli, one_shots, read_line

RUNS = 1000
QUICK = 400  # runs that finish (and are recorded) before the kill
IN_FLIGHT = 8  # max_concurrency: runs started and still running when the node dies

# A node process on the store, whose runner appends "fire_id attempt" to a file (one write, so a kill
# never tears a line) and makes it durable. The first `quick` runs return at once; every later one is
# still running when the node dies. Once the quick ones are recorded (a `job_run` event follows each
# durable write) it says "halfway", and it is killed: 8 runs in flight, the rest still due and unclaimed
# (a firing beyond max_concurrency waits for a slot without a claim).
NODE = r"""
import os, sys, threading
from datetime import datetime
from cronwright.clock import ManualClock
from cronwright.core.events import EventKind
from cronwright.core.model import Outcome, Result
from cronwright.node import drive
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.store.sqlite import SqliteStore

db, log, now, quick = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

class Recorder:
    def __init__(self):
        self.fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self.lock = threading.Lock()
        self.started = 0
        self.never = threading.Event()
    def run(self, job, occurrence):
        os.write(self.fd, f"{occurrence.fire_id} {occurrence.attempt}\n".encode())
        os.fsync(self.fd)
        with self.lock:
            self.started += 1
            slow = self.started > quick
        if slow:
            self.never.wait()  # a long run: the kill comes first
        return Result(Outcome.OK, "ran", 1)
    def close(self):
        pass

class Halfway:
    recorded = 0
    def emit(self, event):
        if event.kind is EventKind.JOB_RUN:
            self.recorded += 1
            if self.recorded == quick:
                sys.stdout.write("halfway\n")
                sys.stdout.flush()

node = Node(SqliteStore(db), Recorder(), ManualClock(datetime.fromisoformat(now)), Halfway(),
            NodeSettings(max_concurrency=8))
drive.serve_forever(node)
"""


def test_a_node_killed_mid_way_through_1000_runs_loses_nothing_and_runs_nothing_twice(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "cronwright.db", tmp_path / "ran.log"
    due = at("2026-03-02T10:00:00+01:00")
    jobs = one_shots(db, RUNS, due)
    started = due + timedelta(seconds=5)
    node = subprocess.Popen(
        [sys.executable, "-c", NODE, str(db), str(log), started.isoformat(), str(QUICK)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert read_line(node, timeout=120) == b"halfway\n"
        os.kill(node.pid, signal.SIGKILL)
    finally:
        node.kill()
        _, err = node.communicate(timeout=30)
    assert node.returncode == -signal.SIGKILL, err.decode()

    # The killed node beat last at `started`; the restarted one comes up after its lease ran out.
    clock = ManualClock(started + LEASE_TTL + timedelta(seconds=1))
    restarted = make_harness(SqliteStore(db), clock, ScriptedRunner())
    try:
        restarted.tick()
    finally:
        restarted.node.stop()
        restarted.raw_store.close()

    ran = Counter(log.read_text().splitlines())
    assert max(ran.values()) == 1, [line for line, count in ran.items() if count > 1]
    assert all(line.endswith(" 1") for line in ran)  # one attempt each: nothing retried
    # At the kill, up to max_concurrency runs had been claimed (and most had started); no more.
    assert QUICK <= len(ran) <= QUICK + IN_FLIGHT
    # The restarted node runs what was never claimed (one-shots always fire late), and nothing that was.
    rerun = Counter(f"{call.fire_id} {call.attempt}" for call in restarted.runner.calls)
    assert max(rerun.values()) == 1
    assert not set(rerun) & set(ran), "an occurrence the dead node started ran again"

    store = SqliteStore(db)
    try:
        counts = store.counts()
        finals = {job.id: job for job in store.jobs()}
        runs = store.runs(None, RUNS * 2)
    finally:
        store.close()
    assert counts["running"] == counts["active"] == 0
    interrupted = counts["failed"]  # every run the dead node had claimed was interrupted
    assert len(ran) - QUICK <= interrupted <= IN_FLIGHT
    assert counts["done"] == RUNS - interrupted  # recorded before the kill, or run after the restart
    assert len(rerun) == RUNS - QUICK - interrupted
    assert len(runs) == RUNS and len({run.job_id for run in runs}) == RUNS  # one run recorded each
    for run in runs:
        job = finals[run.job_id]
        if run.outcome is Outcome.OK:
            assert job.state is State.DONE
            assert (f"{run.fire_id} 1" in ran) != (f"{run.fire_id} 1" in rerun)  # it really ran, once
        else:
            # Started by the dead node: recorded interrupted, never run again.
            assert run.outcome is Outcome.INTERRUPTED, run
            assert job.state is State.FAILED
            assert "stopped renewing its lease" in run.message
    assert {job.id for job in jobs} == set(finals)


CONFIG = """
[node]
zone = "Europe/Berlin"
store = "sqlite:///{db}"
max_concurrency = 4

[targets.note]
kind = "command"
env = ["RAN_LOG", "RAN_FIFO"]
[targets.note.actions.write]
argv = ["{python}", "-c", "{script}"]
"""

# What a run executes: it appends its fire_id, then tells the test through a FIFO that it ran (opened
# without blocking, so a run that outlives the test's reader fails instead of hanging).
COMMAND = (
    "import os; "
    "fd = os.open(os.environ['RAN_LOG'], os.O_WRONLY | os.O_APPEND | os.O_CREAT); "
    "os.write(fd, (os.environ['CRONWRIGHT_FIRE_ID'] + chr(10)).encode()); os.fsync(fd); "
    "os.write(os.open(os.environ['RAN_FIFO'], os.O_WRONLY | os.O_NONBLOCK), b'.')"
)


def wait_for_bytes(fd: int, count: int, timeout: float) -> None:
    got = 0
    while got < count:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"only {got} runs started within {timeout} s"
        got += len(os.read(fd, count - got))


@needs_faketime
def test_the_real_binary_killed_during_tick_is_recovered_by_the_next_tick(tmp_path: Path) -> None:
    db, log, fifo = tmp_path / "cronwright.db", tmp_path / "ran.log", tmp_path / "ran.fifo"
    count = 40
    config = tmp_path / "cronwright.toml"
    config.write_text(CONFIG.format(db=db, python=sys.executable, script=COMMAND))
    one_shots(db, count, at("2026-03-02T10:00:00+01:00"), prefix="note", target="note", action="write")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(fifo, os.O_WRONLY)  # a writer of our own: the reader never sees end-of-file
    env = {"TZ": "UTC", "RAN_LOG": str(log), "RAN_FIFO": str(fifo)}
    try:
        # libfaketime starts the process clock at the given UTC instant, and lets it run.
        tick = subprocess.Popen(
            [str(CRONWRIGHT), "--config", str(config), "tick"],
            env={**os.environ, **env, **faketime_env("@2026-03-02 09:00:05")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            wait_for_bytes(reader, 10, timeout=60)
            os.killpg(tick.pid, signal.SIGKILL)  # the node; commands run in their own sessions
        finally:
            tick.kill()
            _, err = tick.communicate(timeout=30)
        assert tick.returncode == -signal.SIGKILL, err.decode()

        # Two minutes later the killed node's lease is long gone: the next tick records its runs
        # interrupted, and runs the one-shots that were never claimed (they always fire, late).
        again = cli(config, "tick", "--json", env=env, faketime="2026-03-02 09:02:00")
        assert again.returncode == 0, again.stderr
        refired = json.loads(again.stdout)["fire_ids"]
        listed = cli(config, "list", "--json", env=env, faketime="2026-03-02 09:02:10")
        history = cli(config, "history", "--limit", "1000", "--json", env=env, faketime="2026-03-02 09:02:10")
    finally:
        os.close(keeper)
        os.close(reader)

    states = Counter(job["state"] for job in json.loads(listed.stdout)["jobs"])
    runs = json.loads(history.stdout)["runs"]
    ran = Counter(log.read_text().splitlines())
    assert max(ran.values()) == 1
    assert states["done"] + states["failed"] == count and states["failed"] > 0
    interrupted = {run["fire_id"] for run in runs if run["outcome"] == "interrupted"}
    assert len(interrupted) == states["failed"]
    assert not interrupted & set(refired), "a run of the killed tick ran again"
    assert len(runs) == count and len({run["fire_id"] for run in runs}) == count
    for run in runs:
        assert run["outcome"] in ("ok", "interrupted"), run
        if run["outcome"] == "ok":
            assert ran[run["fire_id"]] == 1
