from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from cronwright.core.notifications import Alert, JobRef, Transition

BERLIN = ZoneInfo("Europe/Berlin")
JOB = JobRef(id=7, name="nightly-backup", target="backup", action="nightly", source="cli")


def alert(
    transition: Transition = Transition.FAILED,
    at: str = "2026-03-01T03:00:05+01:00",
    key: str | None = None,
    job: JobRef | None = JOB,
    fire_id: str | None = "f-1",
) -> Alert:
    instant = datetime.fromisoformat(at)
    return Alert(
        transition=transition,
        at=instant,
        key=key or f"{transition.value}:{job.id if job else '-'}:{fire_id}",
        message="exit status 2",
        job=job,
        fire_id=fire_id,
        scheduled_for=instant.replace(second=0) if fire_id else None,
    )
