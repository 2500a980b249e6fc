"""Idle cost: CPU seconds and wake-ups per minute of an idle scheduler holding 10,000 schedules.

Each side runs in a child process of its own, so CPU is accounted per process (getrusage of the child):

- cronwright: a node serving (`Node.serve_forever`, `SystemClock`, SQLite) 10,000 cron schedules that
  come due only in an hour. A wake-up is one scheduling pass of its wait loop after boot.
- APScheduler 3.11: a BackgroundScheduler (SQLAlchemyJobStore on SQLite) holding 10,000 cron jobs due in an
  hour. A wake-up is one `_process_jobs` call of its main loop after the first.

Both stores are filled before the children start: one schedule made through the API, copied in SQL.
The window runs from the end of each child's first pass until the parent says stop (at most 50 minutes,
so nothing comes due): run.py keeps both children idle for the whole run, beside the other benchmarks,
which cost them nothing but wall time. A window shorter than a minute may miss cronwright's once-a-minute
safety wake-up, so --quick figures for wake-ups are coarse.

    python bench/bench_idle.py [--seconds S]
    python bench/bench_idle.py --child cronwright|apscheduler PATH   (prints "ready", then JSON on stdin EOF)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import aps3
from common import BENCH, Row, clone_rows, cpu_seconds, create_request, log, stack, table, utc_now

from cronwright.clock import SystemClock

SCHEDULES = 10_000
MAX_WINDOW = 50 * 60.0


def prepare_cronwright(path: Path) -> None:
    later = utc_now() + timedelta(hours=1)
    node = stack(path, SystemClock())
    node.call(create_request("idle-0", {"cron": f"{later.minute} {later.hour} * * *", "tz": "UTC"}))
    node.close()
    clone_rows(path, "idle-0", "idle-copy-", SCHEDULES - 1)


def prepare_apscheduler(path: Path) -> None:
    later = utc_now() + timedelta(hours=1)
    scheduler = aps3.scheduler(path)
    scheduler.start(paused=True)
    scheduler.add_job(aps3.noop, "cron", hour=later.hour, minute=later.minute, id=aps3.job_id("i", 0))
    scheduler.shutdown()
    aps3.clone_jobs(path, aps3.job_id("i", 0), "i", 1, SCHEDULES - 1)


def _window(wakeups: list[int], stop: Any) -> dict[str, float]:
    """Measures from "ready" until stdin closes (or MAX_WINDOW): CPU of this process, and wake-ups."""
    print("ready", flush=True)
    before_cpu, before_wakeups, began = cpu_seconds(), wakeups[0], time.monotonic()
    reader = threading.Thread(target=sys.stdin.read, daemon=True)
    reader.start()
    reader.join(MAX_WINDOW)
    window = time.monotonic() - began
    cpu = cpu_seconds() - before_cpu
    count = wakeups[0] - before_wakeups
    stop()
    return {
        "window_s": window,
        "cpu_s": cpu,
        "wakeups": count,
        "cpu_seconds_per_minute": cpu * 60 / window,
        "wakeups_per_minute": count * 60 / window,
    }


def child_cronwright(path: Path) -> dict[str, float]:
    from common import NoOp

    from cronwright.events import MemorySink
    from cronwright.node import Node
    from cronwright.store.sqlite import SqliteStore

    store = SqliteStore(path)
    node = Node(store, NoOp(), SystemClock(), MemorySink())
    passes = [0]
    booted = threading.Event()
    original = node.run_pass

    def counting_pass() -> Any:
        report = original()
        passes[0] += 1
        booted.set()
        return report

    node.run_pass = counting_pass  # type: ignore[method-assign]
    thread = threading.Thread(target=node.serve_forever, daemon=True)
    thread.start()
    booted.wait(120)

    def stop() -> None:
        node.stop()
        thread.join(10)
        store.close()

    return _window(passes, stop)


def child_apscheduler(path: Path) -> dict[str, float]:
    scheduler = aps3.scheduler(path)
    calls = [0]
    booted = threading.Event()
    original = scheduler._process_jobs

    def counting_process_jobs() -> Any:
        result = original()
        calls[0] += 1
        booted.set()
        return result

    scheduler._process_jobs = counting_process_jobs  # type: ignore[method-assign]
    scheduler.start()
    booted.wait(120)
    return _window(calls, scheduler.shutdown)


class IdlePair:
    """Both idle children, started together and stopped together."""

    def __init__(self, folder: Path) -> None:
        self.children: dict[str, subprocess.Popen[str]] = {}
        self.logs = {kind: (folder / f"idle-{kind}.log").open("w+") for kind in ("cronwright", "apscheduler")}
        paths = {"cronwright": folder / "idle-cw.db", "apscheduler": folder / "idle-aps.db"}
        prepare_cronwright(paths["cronwright"])
        prepare_apscheduler(paths["apscheduler"])
        for kind, path in paths.items():
            self.children[kind] = subprocess.Popen(
                [sys.executable, str(BENCH / "bench_idle.py"), "--child", kind, str(path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.logs[kind],
                text=True,
            )
        for kind, child in self.children.items():
            assert child.stdout is not None
            line = child.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"the idle {kind} child did not start: {self._log(kind)}")
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def finish(self) -> list[Row]:
        found: dict[str, dict[str, float]] = {}
        for child in self.children.values():
            assert child.stdin is not None
            child.stdin.close()
        for kind, child in self.children.items():
            assert child.stdout is not None
            lines = child.stdout.read().strip().splitlines()
            if child.wait(120) != 0 or not lines:
                raise RuntimeError(f"the idle {kind} child failed: {self._log(kind)}")
            found[kind] = json.loads(lines[-1])
        ours, theirs = found["cronwright"], found["apscheduler"]
        log(f"idle: cronwright {ours}, APScheduler {theirs}")
        window = f"{min(ours['window_s'], theirs['window_s']):.0f}s window"
        peer = "APScheduler 3.11"
        return [
            Row(
                f"idle, 10,000 schedules: CPU s per minute ({window})",
                "CPU s/min",
                "lower",
                ours["cpu_seconds_per_minute"],
                peer,
                theirs["cpu_seconds_per_minute"],
                details={"cronwright": ours, "peer": theirs},
            ),
            Row(
                f"idle, 10,000 schedules: wake-ups per minute ({window})",
                "/min",
                "lower",
                ours["wakeups_per_minute"],
                peer,
                theirs["wakeups_per_minute"],
            ),
        ]

    def _log(self, kind: str) -> str:
        self.logs[kind].seek(0)
        return self.logs[kind].read()[-500:]

    def abandon(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                child.kill()
                child.wait()
        for file in self.logs.values():
            file.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the idle window")
    parser.add_argument("--child", choices=["cronwright", "apscheduler"])
    parser.add_argument("path", nargs="?", type=Path)
    options = parser.parse_args()
    if options.child:
        measure = child_cronwright if options.child == "cronwright" else child_apscheduler
        print(json.dumps(measure(options.path)), flush=True)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        pair = IdlePair(Path(folder))
        try:
            time.sleep(options.seconds)
            print(table(pair.finish()))
        finally:
            pair.abandon()


if __name__ == "__main__":
    main()
