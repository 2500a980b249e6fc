"""What a create or an update would do, said without doing it (`dry_run: true`): the schedule it would
leave, its next firings and the quota it would use. Pure: it takes the would-be job and the counts."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.core import engine
from cronwright.core.model import Job
from cronwright.timing.iso import render

FIRINGS = 5  # how many firings a dry run shows (DESIGN, protocol)


def firings(job: Job, count: int = FIRINGS) -> list[datetime]:
    """The job's next `count` occurrences from its `next_run_at`, within its lifetime, jitter included
    (a new job's jitter is that of id 0: its own id is only known once it is stored)."""
    return [planned.at for planned in engine.ahead(job, count)]


def reply(row: dict[str, Any], job: Job, used: int, limit: int | None, zone: ZoneInfo) -> dict[str, Any]:
    """A dry run's reply: the would-be row, its firings, its end, and the source's live schedules once
    the request were made (`used`) against its `max_schedules` (`max`, null without one)."""
    return {
        "dry_run": True,
        "job": row,
        "firings": [render(instant, zone) for instant in firings(job)],
        "ends_at": render(job.ends_at, zone),
        "quota": {"used": used, "max": limit},
    }
