"""Firing throughput: N one-shots due at the same instant, until every outcome is durable.

cronwright (SQLite store, no-op runner) against APScheduler 3.11 (SQLAlchemyJobStore on SQLite,
ThreadPoolExecutor) in this process, and APScheduler 4 (SQLAlchemyDataStore on SQLite through aiosqlite,
thread pool) in its own venv (see aps4.py), round by round in the same run, with the same N and the same
worker count. Also the CPU an idle node spends holding 10,000 schedules none of which is due for an hour
(`idle_cpu`; run.py measures idle cost per process, see bench_idle.py).

    python bench/bench_throughput.py [--quick] [--jobs N] [--rounds R] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aps3
import aps4
from common import WORKERS, NoOp, Row, log, machine, median, table

from cronwright.clock import ManualClock, SystemClock
from cronwright.core.events import MemorySink
from cronwright.core.model import AtSchedule, CronSchedule, Job
from cronwright.node import drive
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.store.sqlite import SqliteStore
from cronwright.timing.cron import CronExpression


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
    drive.tick(node)
    elapsed = time.perf_counter() - started
    counts = store.counts()
    if counts["done"] != jobs or len(store.runs(None, jobs + 1)) != jobs:
        raise RuntimeError(f"cronwright did not finish every one-shot exactly once: {counts}")
    node.stop()
    store.close()
    return elapsed


def apscheduler_round(jobs: int, folder: Path, function: Callable[..., None] = aps3.noop) -> float:
    """Seconds from the due instant until APScheduler has run every job (`function`, in its thread pool)
    and removed it from its store."""
    scheduler = aps3.scheduler(folder / "aps.db")
    finishing = aps3.Finishing(scheduler, jobs)
    scheduler.start(paused=True)
    # Paused, so every job is stored before any runs; all are due by the time the scheduler resumes,
    # as the cronwright round's are at its first pass. One job is added through the API; the N are its
    # copies, written in one transaction (add_job commits each, ~10 ms apiece: setup, not the round).
    due = datetime.now(UTC)
    aps3.insert_due(folder / "aps.db", aps3.template_state(scheduler, function, due), "job-", jobs, due)
    started = time.perf_counter()
    scheduler.resume()
    finishing.wait()
    elapsed = time.perf_counter() - started
    scheduler.shutdown(wait=True)
    return elapsed


def idle_cpu(schedules: int, seconds: float, folder: Path) -> dict[str, float]:
    """CPU seconds and passes per minute of a node holding `schedules` that come due only in an hour.

    In-process (the whole process's CPU is counted): bench_idle.py measures it in a child of its own.
    """
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
    thread = threading.Thread(target=drive.serve_forever, args=(node,), daemon=True)
    thread.start()
    while passes == 0:  # the boot pass is not idle time
        time.sleep(0.01)
    passes = 0
    before = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(seconds)
    after = resource.getrusage(resource.RUSAGE_SELF)
    node.stop()
    thread.join(5)
    store.close()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_seconds_per_minute": cpu * 60 / seconds, "passes_per_minute": passes * 60 / seconds}


def rows(jobs: int, rounds: int, aps4_jobs: int | None = None) -> list[Row]:
    """Round by round: cronwright, APScheduler 3.11, APScheduler 4; medians and ratios.

    APScheduler 4 fires some tens of jobs a second here, so a full run gives it a smaller N
    (`aps4_jobs`), and cronwright runs that N too in the same rounds: each row compares equal work.
    """
    aps4_jobs = aps4_jobs or jobs
    aps4_version, aps4_error = aps4.ensure_venv()
    ours: list[float] = []
    ours4: list[float] = []
    theirs3: list[float] = []
    theirs4: list[float] = []
    for round_no in range(rounds):
        with tempfile.TemporaryDirectory() as folder:
            ours.append(cronwright_round(jobs, Path(folder)))
        with tempfile.TemporaryDirectory() as folder:
            theirs3.append(apscheduler_round(jobs, Path(folder)))
        if aps4_version and not aps4_error:
            if aps4_jobs == jobs:
                ours4.append(ours[-1])
            else:
                with tempfile.TemporaryDirectory() as folder:
                    ours4.append(cronwright_round(aps4_jobs, Path(folder)))
            with tempfile.TemporaryDirectory() as folder:
                try:
                    theirs4.append(aps4.throughput_round(aps4_jobs, WORKERS, Path(folder))["seconds"])
                except Exception as error:
                    aps4_error = str(error).strip().splitlines()[-1][:200]
        log(
            f"throughput round {round_no + 1}/{rounds}: {jobs}: cronwright {ours[-1]:.2f}s, "
            f"APScheduler 3.11 {theirs3[-1]:.2f}s; {aps4_jobs}: "
            + (
                f"cronwright {ours4[-1]:.2f}s, APScheduler 4 {theirs4[-1]:.2f}s"
                if theirs4 and not aps4_error
                else f"APScheduler 4 {aps4_error}"
            )
        )
    details = {"rounds": rounds, "workers": WORKERS}
    result = [
        Row(
            f"engine only: throughput, {jobs:,} one-shots due at once (in-process, no-op runner)",
            "firings/s",
            "higher",
            jobs / median(ours),
            "APScheduler 3.11",
            jobs / median(theirs3),
            details={**details, "jobs": jobs, "cronwright_seconds": ours, "peer_seconds": theirs3},
        ),
        Row(
            f"engine only: throughput, {aps4_jobs:,} one-shots due at once (in-process, no-op runner)",
            "firings/s",
            "higher",
            aps4_jobs / median(ours4) if ours4 else None,
            f"APScheduler {aps4_version or '4'}",
            aps4_jobs / median(theirs4) if theirs4 and not aps4_error else None,
            note=f"peer unavailable: {aps4_error}" if aps4_error else "",
            details={**details, "jobs": aps4_jobs, "cronwright_seconds": ours4, "peer_seconds": theirs4},
        ),
    ]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer jobs and rounds")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--aps4-jobs", type=int, help="APScheduler 4's N (default: 2,000; --quick: --jobs)")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--idle-seconds", type=float)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args()
    jobs = options.jobs or (200 if options.quick else 10_000)
    rounds = options.rounds or (1 if options.quick else 3)
    idle_seconds = options.idle_seconds or (10.0 if options.quick else 60.0)
    found = rows(jobs, rounds, options.aps4_jobs or (None if options.quick else 2000))
    with tempfile.TemporaryDirectory() as folder:
        idle = idle_cpu(10_000, idle_seconds, Path(folder))
    print(table(found))
    print(
        f"idle node, 10k schedules (in-process): {idle['cpu_seconds_per_minute']:.4f} CPU s/min, "
        f"{idle['passes_per_minute']:.1f} passes/min"
    )
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        document = {"rows": [row.as_dict() for row in found], "idle_10k": idle, "machine": machine()}
        options.json.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
