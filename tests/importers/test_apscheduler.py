"""An APScheduler 3 job store made by a real APScheduler 3.11, in another process whose functions live in a
module this process cannot import: the import reads every job without importing them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cronwright.importers.outcome import Status
from cronwright.service.import_sources import read_source

from .conftest import loads, refused, seed_of

pytest.importorskip("apscheduler", minversion="3.11")
pytest.importorskip("sqlalchemy")

MAKER = """
import sys
from datetime import datetime, timezone
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
import nightly_tasks as tasks

store = SQLAlchemyJobStore(url=sys.argv[1])
scheduler = BackgroundScheduler(jobstores={"default": store}, timezone="Europe/Berlin")
scheduler.start(paused=True)
scheduler.add_job(tasks.report, "cron", hour=3, minute=30, day_of_week="mon-fri", kwargs={"kind": "full"},
                  id="nightly", misfire_grace_time=300, coalesce=True, max_instances=1,
                  timezone="Europe/Berlin")
scheduler.add_job(tasks.report, "cron", day="last fri", hour=18, id="month-end", coalesce=False,
                  max_instances=3, timezone="America/New_York")
scheduler.add_job(tasks.ping, "interval", minutes=15, id="ping")
scheduler.add_job(tasks.ping, "interval", seconds=20, id="too-often")
scheduler.add_job(tasks.ping, "date", run_date=datetime(2027, 1, 5, 9, 0, tzinfo=timezone.utc), id="once")
scheduler.add_job(tasks.report, "cron", hour=4, args=[tasks.Settings()], id="with-object")
scheduler.add_job(tasks.report, "cron", hour=5, id="held").pause()
scheduler.shutdown()
"""
TASKS = """
class Settings:
    pass

def report(*args, **kwargs):
    pass

def ping():
    pass
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("aps")
    (folder / "nightly_tasks.py").write_text(textwrap.dedent(TASKS))
    (folder / "make.py").write_text(textwrap.dedent(MAKER))
    url = f"sqlite:///{folder / 'jobs.db'}"
    made = subprocess.run(
        [sys.executable, str(folder / "make.py"), url], cwd=folder, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    (folder / "nightly_tasks.py").unlink()  # from here on, nobody can import the user's code
    return url


def test_a_real_store_imports_without_importing_its_functions(store: str) -> None:
    batch = read_source("apscheduler", store)
    assert "nightly_tasks" not in sys.modules
    loads(batch)
    jobs = {entry.where.rsplit(" ", 1)[1]: entry for entry in batch.entries}

    assert seed_of(jobs["nightly"]) == {
        "dedupe_key": "apscheduler:nightly", "name": "nightly", "target": "nightly_tasks",
        "action": "report", "schedule": {"cron": "30 3 * * 1-5", "tz": "Europe/Berlin"},
        "args": {"kind": "full"}, "misfire": "coalesce", "overlap": "skip",
    }  # fmt: skip
    assert batch.used_targets()["nightly_tasks"] == {"kind": "python", "module": "nightly_tasks"}

    month_end = seed_of(jobs["month-end"])
    assert month_end["schedule"] == {"cron": "0 18 * * 5L", "tz": "America/New_York"}
    assert (month_end["misfire"], month_end["overlap"]) == ("skip", "allow")
    assert any("coalesce=False" in note for note in jobs["month-end"].notes)

    assert seed_of(jobs["ping"])["schedule"] == {"every": "15m"}
    assert seed_of(jobs["once"])["run_at"] == "2027-01-05T09:00:00+00:00"
    assert batch.paused == {"apscheduler:held"}

    reasons = refused(batch)
    assert reasons["apscheduler_jobs job too-often"].startswith("every 20s is below the 60s floor")
    assert reasons["apscheduler_jobs job with-object"] == (
        "not loaded: nightly_tasks.Settings is not an APScheduler trigger class; loading it would import it"
    )
    assert len(batch.entries) == 7


def test_compare_walks_the_stored_trigger_itself(store: str) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from cronwright.importers.compare import compare

    batch = read_source("apscheduler", store)
    nightly = next(entry for entry in batch.entries if entry.where.endswith(" nightly"))
    berlin = ZoneInfo("Europe/Berlin")
    found = compare(nightly, datetime(2026, 3, 27, 12, tzinfo=berlin), berlin)
    assert found["reading"] == "trigger"
    assert found["next"][:2] == ["2026-03-30T03:30:00+02:00", "2026-03-31T03:30:00+02:00"]
    assert found["differences"] == 0


def test_a_pickle_that_names_anything_else_is_refused_unloaded() -> None:
    import pickle

    from cronwright.importers import apscheduler_jobs

    rows = [("evil", pickle.dumps({"func": "x:y", "trigger": Path("/etc")})), ("junk", b"not a pickle")]
    batch = apscheduler_jobs.read(rows, "t")
    assert [entry.status for entry in batch.entries] == [Status.REFUSED, Status.REFUSED]
    assert (
        "pathlib" in batch.entries[0].reason
        and "is not an APScheduler trigger class" in batch.entries[0].reason
    )
