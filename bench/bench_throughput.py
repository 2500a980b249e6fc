"""Firing throughput: N one-shots due at the same instant, until every outcome is durable.

cronwright (SQLite store, no-op runner) against APScheduler 3.11 (SQLAlchemyJobStore on SQLite,
ThreadPoolExecutor), side by side in one process, the same N and the same worker count. Also the CPU
an idle node spends holding 10,000 schedules none of which is due for an hour.

    python bench/bench_throughput.py [--quick] [--jobs N] [--rounds R] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cronwright.clock import ManualClock, SystemClock
from cronwright.events import MemorySink
from cronwright.model import AtSchedule, CronSchedule, Job, Occurrence, Outcome, Result
from cronwright.node import Node, NodeSettings
from cronwright.store.sqlite import SqliteStore
from cronwright.timing.cron import CronExpression

WORKERS = 16


class NoOp:
    def run(self, job: Job, occurrence: Occurrence) -> Result:
        return Result(Outcome.OK)

    def close(self) -> None:
        pass


def one_shot(index: int, due: datetime) -> Job:
    return Job(
        id=0,
        name=f"job-{index}",
        target="bench",
        action="noop",
        args={},
        schedule=AtSchedule(due),
        ends_at=due + timedelta(days=1),
        created_at=due,
        updated_at=due,
        next_run_at=due,
    )


def cronwright_round(jobs: int, folder: Path) -> float:
    """Seconds from the first pass until every one-shot is done and its run row is on disk."""
    due = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    store = SqliteStore(folder / "cw.db")
    for index in range(jobs):
        store.insert(one_shot(index, due))
    node = Node(
        store,
        NoOp(),
        ManualClock(due + timedelta(seconds=1)),
        MemorySink(),
        NodeSettings(max_concurrency=WORKERS),
    )
    started = time.perf_counter()
    while node.run_pass().fired or node.in_flight():
        node.wait_for_runs()
    elapsed = time.perf_counter() - started
    assert store.counts()["done"] == jobs, store.counts()
    node.stop()
    store.close()
    return elapsed


def apscheduler_round(jobs: int, folder: Path) -> float:
    """Seconds from the due instant until APScheduler has run every job and removed it from its store."""
    from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MISSED
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler

    done = threading.Event()
    count = 0
    lock = threading.Lock()

    def listener(event: Any) -> None:
        nonlocal count
        with lock:
            count += 1
            if count == jobs:
                done.set()

    scheduler = BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{folder / 'aps.db'}")},
        executors={"default": ThreadPoolExecutor(WORKERS)},
        job_defaults={"misfire_grace_time": None, "coalesce": False, "max_instances": 1},
        timezone="UTC",
    )
    scheduler.add_listener(listener, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED)
    scheduler.start(paused=True)
    # Paused, so every job is stored before any runs; all are due by the time the scheduler resumes,
    # as the cronwright round's are at its first pass.
    due = datetime.now(UTC)
    for index in range(jobs):
        scheduler.add_job(noop, "date", run_date=due, id=f"job-{index}")
    store = scheduler._jobstores["default"]
    started = time.perf_counter()
    scheduler.resume()
    if not done.wait(600):
        raise RuntimeError(f"APScheduler ran only {count} of {jobs} jobs")
    # The outcome is durable when the one-shot is gone from the job store.
    while store.get_next_run_time() is not None:
        time.sleep(0.001)
    elapsed = time.perf_counter() - started
    scheduler.shutdown(wait=True)
    return elapsed


def noop() -> None:
    pass


def idle_cpu(schedules: int, seconds: float, folder: Path) -> dict[str, float]:
    """CPU seconds and passes per minute of a node holding `schedules` that come due only in an hour."""
    store = SqliteStore(folder / "idle.db")
    now = datetime.now(UTC)
    later = now + timedelta(hours=1)
    expression = CronExpression.parse(f"{later.minute} {later.hour} * * *")
    for index in range(schedules):
        job = one_shot(index, later).evolve(schedule=CronSchedule(expression, "UTC"))
        store.insert(job)
    node = Node(store, NoOp(), SystemClock(), MemorySink())
    passes = 0
    original = node.run_pass

    def counting_pass() -> Any:
        nonlocal passes
        passes += 1
        return original()

    node.run_pass = counting_pass  # type: ignore[method-assign]
    node.boot()
    passes = 0
    thread = threading.Thread(target=node.serve_forever, daemon=True)
    before = resource.getrusage(resource.RUSAGE_SELF)
    thread.start()
    time.sleep(seconds)
    after = resource.getrusage(resource.RUSAGE_SELF)
    node.stop()
    thread.join(5)
    store.close()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_seconds_per_minute": cpu * 60 / seconds, "passes_per_minute": passes * 60 / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer jobs and rounds; under a minute")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--idle-seconds", type=float)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args()
    jobs = options.jobs or (2000 if options.quick else 10_000)
    rounds = options.rounds or (1 if options.quick else 3)
    idle_seconds = options.idle_seconds or (10.0 if options.quick else 60.0)
    ours, theirs = [], []
    for round_no in range(rounds):
        with tempfile.TemporaryDirectory() as folder:
            ours.append(cronwright_round(jobs, Path(folder)))
        with tempfile.TemporaryDirectory() as folder:
            theirs.append(apscheduler_round(jobs, Path(folder)))
        print(
            f"round {round_no + 1}: cronwright {ours[-1]:.2f}s, APScheduler 3.11 {theirs[-1]:.2f}s",
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory() as folder:
        idle = idle_cpu(10_000, idle_seconds, Path(folder))
    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
    result = {
        "jobs": jobs,
        "rounds": rounds,
        "workers": WORKERS,
        "cronwright_seconds": ours_median,
        "cronwright_firings_per_second": jobs / ours_median,
        "apscheduler3_seconds": theirs_median,
        "apscheduler3_firings_per_second": jobs / theirs_median,
        "ratio": theirs_median / ours_median,
        "idle_10k": idle,
        "machine": f"{platform.machine()} {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system()} {platform.release()}",
    }
    print(f"{'row':44} {'cronwright':>12} {'peer':>12} {'ratio':>8}")
    print(
        f"{f'{jobs} one-shots due at once, firings/s':44} {result['cronwright_firings_per_second']:12.0f} "
        f"{result['apscheduler3_firings_per_second']:12.0f} {result['ratio']:7.1f}x  (peer: APScheduler 3.11)"
    )
    print(f"{'idle node, 10k schedules: CPU s/min':44} {idle['cpu_seconds_per_minute']:12.4f}")
    print(f"{'idle node, 10k schedules: passes/min':44} {idle['passes_per_minute']:12.1f}")
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
