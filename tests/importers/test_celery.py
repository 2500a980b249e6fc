"""A Celery beat_schedule, with Celery's own schedule objects, as `celery` target actions."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronwright.importers import celery_beat
from cronwright.importers.outcome import Status

from .conftest import refused, seed_of

schedules = pytest.importorskip("celery.schedules")


def test_a_beat_schedule_maps_crontabs_and_periods_and_refuses_solar() -> None:
    beat = {
        "refresh": {
            "task": "app.tasks.refresh",
            "schedule": schedules.crontab(minute="*/15", hour="8-18", day_of_week="mon-fri"),
            "args": ("eu", 3),
            "kwargs": {"full": True},
            "options": {"queue": "reports", "priority": 5, "expires": 60},
        },
        "cleanup": {"task": "app.tasks.cleanup", "schedule": timedelta(hours=6)},
        "poll": {"task": "app.tasks.poll", "schedule": 30.0},
        # A solar schedule needs the ephem library to be built; its class is what the import reads.
        "sunrise": {"task": "app.tasks.lights", "schedule": schedules.solar.__new__(schedules.solar)},
        "odd": {"task": "app.tasks.odd", "schedule": schedules.crontab(day_of_month="1", day_of_week="mon")},
    }
    batch = celery_beat.read(beat, "Europe/Berlin", "proj.celery:app")
    entries = {entry.where.rsplit(" ", 1)[1]: entry for entry in batch.entries}

    refresh = entries["refresh"]
    assert refresh.status is Status.NOTED and "option expires=60" in refresh.notes[0]
    assert seed_of(refresh) == {
        "dedupe_key": "celery:refresh", "name": "refresh", "target": "celery", "action": "refresh",
        "schedule": {"cron": "*/15 8-18 * * MON-FRI", "tz": "Europe/Berlin"},
        "args": {"arg0": "eu", "arg1": 3, "full": True},
    }  # fmt: skip
    assert batch.targets["celery"]["kind"] == "celery"
    assert batch.targets["celery"]["broker_secret"] == "CELERY_BROKER_URL"
    assert batch.targets["celery"]["actions"]["refresh"] == {
        "task": "app.tasks.refresh", "queue": "reports", "priority": 5, "positional": ["arg0", "arg1"],
        "args_schema": {"type": "object"},
    }  # fmt: skip
    assert seed_of(entries["cleanup"])["schedule"] == {"every": "6h"}
    assert refused(batch) == {
        "proj.celery:app poll": "every 30s is below the 60s floor of `every` (node min_period)",
        "proj.celery:app sunrise": "solar (sunrise or sunset at a place) has no cron or period form",
        "proj.celery:app odd": (
            "both day_of_month and day_of_week: Celery requires both, cron fires on either"
        ),
    }
