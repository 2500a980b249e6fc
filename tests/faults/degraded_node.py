"""A node process whose database fails under it, for test_disk_full.py: `python degraded_node.py DB MODE`.

MODE picks a real fault: `fsize` (a file-size limit of 0: every write fails with EFBIG, as on a full
disk), `tmpfs` (DB lives on a tiny tmpfs, which a ballast file fills: ENOSPC), or `immutable`
(`chattr +i` on the database and its log: every write fails with EPERM, as on a read-only file). It drives
one scenario with a manual clock and prints what it saw as one JSON line; the test asserts on it.
It runs in a process of its own because a file-size limit would also break pytest's own files.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.store.sqlite import SqliteStore


class Fault:
    def __init__(self, db: Path, mode: str) -> None:
        self.db, self.mode = db, mode
        self.ballast = db.parent / "ballast"

    def _chattr(self, flag: str) -> None:
        # Not the -shm file: SQLite maps it into memory, and a write to a mapped page of an immutable file
        # is a SIGBUS, not an error, whenever that page was not yet dirty. It is SQLite's shared memory,
        # not durable data: the database and its log are what a failing disk takes away.
        for suffix in ("", "-wal"):
            subprocess.run(["chattr", flag, f"{self.db}{suffix}"], check=True)

    def on(self) -> None:
        if self.mode == "fsize":
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the process
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
        elif self.mode == "tmpfs":
            fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT)
            try:
                while True:
                    os.write(fd, b"\0" * 65536)
            except OSError as full:
                assert full.errno == 28, full  # ENOSPC: the disk is full
            finally:
                os.close(fd)
        else:
            self._chattr("+i")

    def off(self) -> None:
        if self.mode == "fsize":
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        elif self.mode == "tmpfs":
            self.ballast.unlink()
        else:
            self._chattr("-i")


def on_disk(db: Path) -> dict[str, Any]:
    """What the file holds, read through SQLite read-only, behind the node's back."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        jobs = {
            name: {"state": state, "last_run": json.loads(data)["last_run"]}
            for name, state, data in connection.execute("SELECT name, state, data FROM jobs")
        }
        runs = sorted(f"{fire_id} {attempt}" for fire_id, attempt in connection.execute(
            "SELECT fire_id, attempt FROM runs"))  # fmt: skip
    connection.close()
    return {"jobs": jobs, "runs": runs}


def finish_runs(harness: Harness) -> None:
    """Waits until every started attempt has returned, without recording it: a pass must do that."""
    for future in harness.node.runs.futures():
        future.result(30)


def main() -> None:
    db, mode = Path(sys.argv[1]), sys.argv[2]
    fault = Fault(db, mode)
    clock = ManualClock(at("2026-03-02T09:00:00+01:00"))
    harness = make_harness(SqliteStore(db), clock)
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})  # fire_id 1-1
    harness.create("quiet", {"cron": "0 12 * * *"})
    harness.create("shot", run_at="2026-03-02T10:00:04+01:00")  # fire_id 3-1
    seen: dict[str, Any] = {}

    clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()  # "slow" starts, and is held
    assert harness.runner.started.wait(10)

    fault.on()
    seen["pause"] = harness.call("pause", name="quiet")
    seen["create"] = harness.call(
        "create_job", job={"name": "new", "target": "reports", "action": "daily", "schedule": {"every": "5m"}}
    )
    gate.set()
    finish_runs(harness)
    # A pass while the disk is full: it records the finished run in memory, and claims "shot", but a
    # claim that is not durable never runs.
    clock.set(at("2026-03-02T10:00:05+01:00"))
    seen["tick_failing"] = harness.call("tick")
    seen["slow_failing"] = harness.call("get", name="slow")
    seen["shot_failing"] = harness.call("get", name="shot")["job"]
    seen["status_failing"] = harness.call("status")["node"]["persistence"]
    # Later the lease must be renewed, and cannot be: the pass fails, and says so; nothing crashes.
    clock.set(at("2026-03-02T10:00:20+01:00"))
    seen["tick_beat_failing"] = harness.call("tick")
    seen["disk_failing"] = on_disk(db)
    seen["calls_failing"] = harness.runner.fire_ids()
    seen["events_failing"] = harness.events.kinds()

    fault.off()
    clock.set(at("2026-03-02T10:00:30+01:00"))
    seen["tick_recovered"] = harness.call("tick")
    seen["status_recovered"] = harness.call("status")["node"]["persistence"]
    seen["pause_recovered"] = harness.call("pause", name="slow")
    seen["disk_recovered"] = on_disk(db)
    seen["calls"] = harness.runner.fire_ids()
    seen["events"] = harness.events.kinds()
    harness.node.stop()
    sys.stdout.write(json.dumps(seen) + "\n")


if __name__ == "__main__":
    main()
