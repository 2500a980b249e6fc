"""APScheduler 3.11 as the benchmarks set it up: SQLAlchemyJobStore on SQLite, a ThreadPoolExecutor.

Its job functions live here, so that the textual references APScheduler pickles ("aps3:noop") resolve in
every process that imports this module from bench/.
"""

from __future__ import annotations

import pickle
import sqlite3
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.util import datetime_to_utc_timestamp
from common import WORKERS

# Job defaults that make APScheduler run every job however late (its default grace is 1 s, which would
# drop jobs queued behind a busy pool), with no coalescing: the same work cronwright does.
JOB_DEFAULTS = {"misfire_grace_time": None, "coalesce": False, "max_instances": 1}


def noop(*_: object) -> None:
    pass


STARTS: dict[str, float] = {}
STARTS_LOCK = threading.Lock()


def record_start(key: str) -> None:
    """A job that records the wall time at which it started, for the start-latency benchmark."""
    now = time.time()
    with STARTS_LOCK:
        STARTS[key] = now


def scheduler(path: Path, workers: int = WORKERS) -> BackgroundScheduler:
    return BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{path}")},
        executors={"default": ThreadPoolExecutor(workers)},
        job_defaults=JOB_DEFAULTS,
        timezone="UTC",
    )


def job_id(prefix: str, index: int) -> str:
    # Fixed width, so that a pickled job state can be copied with its id swapped in place.
    return f"{prefix}{index:08d}"


def clone_jobs(path: Path, template: str, prefix: str, start: int, count: int) -> None:
    """Copies a job the scheduler stored, `count` times with ids prefix<start>.., in one transaction.

    Only to fill a job store fast where the time to add is measured elsewhere: every copy is the template's
    pickled state with another id, so it reads back as a job `add_job` could have made.
    """
    connection = sqlite3.connect(path, isolation_level=None, timeout=60)
    try:
        connection.execute("BEGIN IMMEDIATE")
        next_run_time, state = connection.execute(
            "SELECT next_run_time, job_state FROM apscheduler_jobs WHERE id = ?", (template,)
        ).fetchone()
        old = template.encode()
        if state.count(old) != 1:
            raise RuntimeError(f"the template id {template!r} is not unique in its pickled state")
        if len(job_id(prefix, start + count - 1)) != len(template):
            raise ValueError("clone ids must be as long as the template's")
        rows = (
            (new, next_run_time, state.replace(old, new.encode()))
            for new in (job_id(prefix, index) for index in range(start, start + count))
        )
        connection.executemany("INSERT INTO apscheduler_jobs VALUES (?, ?, ?)", rows)
        connection.execute("COMMIT")
    finally:
        connection.close()


def insert_due(path: Path, template_state: dict[str, Any], prefix: str, count: int, due: datetime) -> None:
    """Inserts `count` date jobs due at `due`, from a template job's state, in one transaction.

    Each job gets its own id as its one argument (which `record_start` files its start under).
    """
    rows = []
    stamp = datetime_to_utc_timestamp(due)
    for index in range(count):
        state = dict(template_state)
        state["id"] = job_id(prefix, index)
        state["next_run_time"] = due
        state["trigger"] = _date_trigger(due)
        state["args"] = (state["id"],)  # record_start files its start under the job's id
        rows.append((state["id"], stamp, pickle.dumps(state, pickle.HIGHEST_PROTOCOL)))
    connection = sqlite3.connect(path, isolation_level=None, timeout=60)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany("INSERT INTO apscheduler_jobs VALUES (?, ?, ?)", rows)
        connection.execute("COMMIT")
    finally:
        connection.close()


def _date_trigger(due: datetime) -> Any:
    from apscheduler.triggers.date import DateTrigger

    return DateTrigger(run_date=due, timezone="UTC")


def count_jobs(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        (count,) = connection.execute("SELECT count(*) FROM apscheduler_jobs").fetchone()
    finally:
        connection.close()
    return int(count)


def true_command(*_: object) -> None:
    """The command peer's job: what cronwright's `sh.true` action runs, through subprocess.run."""
    subprocess.run(["/bin/true"], check=False)


LAGS: dict[str, list[float]] = {}


def record_lag(kind: str) -> None:
    """A job due on whole seconds, noting how far past its second it started (its start lag)."""
    late = time.time() % 1.0
    with STARTS_LOCK:
        LAGS.setdefault(kind, []).append(late)


class Finishing:
    """Counts the jobs `runner` ends (run, failed or missed); `wait` returns once `jobs` have ended and
    each is gone from the job store (APScheduler's durable change: it keeps no outcome)."""

    def __init__(self, runner: BackgroundScheduler, jobs: int) -> None:
        from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MISSED

        self.runner, self.jobs, self.count = runner, jobs, 0
        self._lock = threading.Lock()
        self._done = threading.Event()
        runner.add_listener(self._ended, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED)

    def _ended(self, _: Any) -> None:
        with self._lock:
            self.count += 1
            if self.count == self.jobs:
                self._done.set()

    def wait(self, timeout: float = 1800) -> None:
        if not self._done.wait(timeout):
            raise RuntimeError(f"APScheduler ran only {self.count} of {self.jobs} jobs")
        store = self.runner._jobstores["default"]
        while store.get_next_run_time() is not None:
            time.sleep(0.001)


def template_state(runner: BackgroundScheduler, function: Any, due: datetime) -> dict[str, Any]:
    """The stored state of a date job of `function` due at `due`, made through the API and removed: what
    `insert_due` copies. `runner` must be started (paused, so that the job cannot run)."""
    template = runner.add_job(function, "date", run_date=due, id="template")
    state: dict[str, Any] = template.__getstate__()
    runner.remove_job("template")
    return state


def run_due_process(path: Path, jobs: int) -> None:
    """The body of an APScheduler process that runs the `jobs` due in the store at `path` and exits: the
    peer of a `cronwright tick`, started as a process the way a cron entry or a timer starts one."""
    runner = scheduler(path)
    finishing = Finishing(runner, jobs)
    runner.start()
    finishing.wait()
    runner.shutdown(wait=True)
