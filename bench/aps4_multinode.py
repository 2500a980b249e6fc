"""APScheduler 4 schedulers sharing one SQLAlchemyDataStore on PostgreSQL (run in bench/.venv-aps4).

bench_multinode.py runs this file in the APScheduler 4 venv, as several children:

    python bench/aps4_multinode.py add   --url URL --dsn DSN --schema S --channel C --jobs N --due ISO
    python bench/aps4_multinode.py serve --url URL --dsn DSN --schema S --channel C --workers W

`add` adds N schedules (named `--prefix` and a number) with a DateTrigger at `due`, each keeping its result
for an hour (the durable outcome, as cronwright's run row is), and prints JSON; its data store creates the
tables, so the first `add` precedes the schedulers. `serve` is one scheduler process: it prints `ready`
once started, and stops when its stdin closes. The data store is asyncpg on SQLAlchemy; the event broker
is asyncpg (LISTEN/NOTIFY), so that a scheduler wakes when another changes the store, as cronwright's
nodes do. The child imports nothing of cronwright.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from typing import Any


def noop() -> None:
    pass


def _parts(options: argparse.Namespace, workers: int = 16) -> tuple[Any, Any, dict[str, Any]]:
    from apscheduler.datastores.sqlalchemy import SQLAlchemyDataStore
    from apscheduler.eventbrokers.asyncpg import AsyncpgEventBroker
    from apscheduler.executors.thread import ThreadPoolJobExecutor

    store = SQLAlchemyDataStore(options.url, schema=options.schema)
    broker = AsyncpgEventBroker(options.dsn, channel=options.channel)
    executors = {"threadpool": ThreadPoolJobExecutor(max_workers=workers)}
    return store, broker, executors


def serve(options: argparse.Namespace) -> None:
    from apscheduler import Scheduler

    store, broker, executors = _parts(options, options.workers)
    with Scheduler(store, broker, max_concurrent_jobs=options.workers, job_executors=executors) as scheduler:
        scheduler.start_in_background()
        print("ready", flush=True)
        sys.stdin.read()  # until the parent closes our stdin
        scheduler.stop()


def add(options: argparse.Namespace) -> dict[str, Any]:
    # Imported by module name, so that every scheduler process resolves the same reference.
    from aps4_multinode import noop as target
    from apscheduler import Scheduler
    from apscheduler.triggers.date import DateTrigger

    due = datetime.fromisoformat(options.due)
    store, broker, executors = _parts(options)
    began = time.perf_counter()
    with Scheduler(store, broker, job_executors=executors) as scheduler:
        for index in range(options.jobs):
            scheduler.add_schedule(
                target,
                DateTrigger(due),
                id=f"{options.prefix}{index}",
                misfire_grace_time=None,
                job_result_expiration_time=3600,
            )
    return {"add_seconds": time.perf_counter() - began, "finished_at": time.time()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="APScheduler 4 on PostgreSQL (run in .venv-aps4)")
    parser.add_argument("mode", choices=["serve", "add"])
    parser.add_argument("--url", required=True, help="SQLAlchemy URL (postgresql+asyncpg://...)")
    parser.add_argument("--dsn", required=True, help="libpq URL for the asyncpg event broker")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--channel", required=True)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--due", default="")
    parser.add_argument("--prefix", default="job-")
    parsed = parser.parse_args()
    if parsed.mode == "serve":
        serve(parsed)
    else:
        print(json.dumps(add(parsed)))
