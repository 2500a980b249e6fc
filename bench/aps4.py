"""APScheduler 4 (the newest pre-release), which cannot share a venv with APScheduler 3.x.

From the bench's venv, `ensure_venv()` makes bench/.venv-aps4 on first use (`python -m venv`, then pip
installs 'apscheduler[sqlalchemy]==4.*' --pre with aiosqlite), and `throughput_round()` runs this file
there as a child that reports JSON. The child imports nothing of cronwright or of the bench's venv.

    bench/.venv-aps4/bin/python bench/aps4.py --jobs N --workers W --folder DIR

The child's round: N schedules with a DateTrigger at one instant are added to a SQLAlchemyDataStore on
SQLite (aiosqlite), then the scheduler starts, with `max_concurrent_jobs` and a thread pool of W; the round
ends when APScheduler has released every job, that is when each job's result is committed to the store
(a result kept for an hour, so the outcome is durable, as cronwright's run row is).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

VENV = Path(__file__).resolve().parent / ".venv-aps4"
READY = VENV / ".cronwright-bench-ready"
REQUIREMENTS = ["apscheduler[sqlalchemy]==4.*", "aiosqlite", "sniffio"]


def python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> tuple[str | None, str]:
    """(the installed APScheduler 4 version, "") or (None, why it is unavailable). Never raises."""
    try:
        if not READY.exists():
            subprocess.run(
                [sys.executable, "-m", "venv", "--clear", str(VENV)],
                check=True,
                capture_output=True,
                text=True,
                timeout=300,
            )
            install = subprocess.run(
                [str(python()), "-m", "pip", "install", "--quiet", "--pre", *REQUIREMENTS],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if install.returncode != 0:
                lines = (install.stderr or install.stdout).strip().splitlines()
                return None, f"pip install failed: {lines[-1] if lines else install.returncode}"
            READY.write_text("ok\n")
        version = subprocess.run(
            [str(python()), "-c", "from importlib.metadata import version; print(version('apscheduler'))"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
        if not version.startswith("4."):
            return None, f"bench/.venv-aps4 holds APScheduler {version}, not 4.x"
        return version, ""
    except (OSError, subprocess.SubprocessError) as error:
        detail = getattr(error, "stderr", None) or str(error)
        return None, f"cannot make bench/.venv-aps4: {str(detail).strip().splitlines()[-1][:200]}"


def throughput_round(jobs: int, workers: int, folder: Path, timeout: float = 900) -> dict[str, float]:
    """Runs one round in the APScheduler 4 venv; the child's JSON (seconds, add_seconds)."""
    done = subprocess.run(
        [str(python()), __file__, "--jobs", str(jobs), "--workers", str(workers), "--folder", str(folder)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the APScheduler 4 round failed: {done.stderr.strip()[-500:]}")
    result: dict[str, float] = json.loads(lines[-1])
    return result


def noop() -> None:
    pass


def child(jobs: int, workers: int, folder: Path) -> dict[str, float]:
    from datetime import UTC, datetime

    from apscheduler import JobReleased, Scheduler
    from apscheduler.datastores.sqlalchemy import SQLAlchemyDataStore
    from apscheduler.executors.thread import ThreadPoolJobExecutor
    from apscheduler.triggers.date import DateTrigger

    released = 0
    outcomes: dict[str, int] = {}
    finished = threading.Event()
    lock = threading.Lock()

    def on_release(event: JobReleased) -> None:
        nonlocal released
        with lock:
            released += 1
            outcomes[str(event.outcome)] = outcomes.get(str(event.outcome), 0) + 1
            if released == jobs:
                finished.set()

    store = SQLAlchemyDataStore(f"sqlite+aiosqlite:///{folder / 'aps4.db'}")
    executors = {"threadpool": ThreadPoolJobExecutor(max_workers=workers)}
    with Scheduler(store, max_concurrent_jobs=workers, job_executors=executors) as scheduler:
        scheduler.subscribe(on_release, {JobReleased})
        due = datetime.now(UTC)
        began = time.perf_counter()
        for index in range(jobs):
            scheduler.add_schedule(
                noop,
                DateTrigger(due),
                id=f"job-{index}",
                misfire_grace_time=None,
                job_result_expiration_time=3600,
            )
        added = time.perf_counter() - began
        started = time.perf_counter()
        scheduler.start_in_background()
        if not finished.wait(1800):
            raise RuntimeError(f"APScheduler 4 released only {released} of {jobs} jobs")
        elapsed = time.perf_counter() - started
        scheduler.stop()
    return {"seconds": elapsed, "add_seconds": added, "released": released, "outcomes": outcomes}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="one APScheduler 4 throughput round (run in .venv-aps4)")
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--folder", type=Path, required=True)
    options = parser.parse_args()
    print(json.dumps(child(options.jobs, options.workers, options.folder)))
