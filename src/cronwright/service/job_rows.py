"""Jobs and runs as the protocol shows them: JSON values, every instant ISO-8601 in the node zone."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.core.engine import Planned, schedule_problem
from cronwright.core.model import AtSchedule, CronSchedule, Job, Run, Schedule
from cronwright.timing.durations import format_duration
from cronwright.timing.iso import render


def _iso(instant: datetime | None, zone: ZoneInfo) -> str | None:
    return None if instant is None else render(instant, zone)


def schedule_row(schedule: Schedule, zone: ZoneInfo) -> dict[str, Any]:
    if isinstance(schedule, AtSchedule):
        return {"at": render(schedule.at, zone)}
    if isinstance(schedule, CronSchedule):
        row: dict[str, Any] = {"cron": schedule.expression.shown, "tz": schedule.tz}
    else:
        row = {
            "every": format_duration(schedule.period),
            "every_ms": schedule.period // timedelta(milliseconds=1),
        }
    if schedule.jitter is not None:
        row["jitter"] = format_duration(schedule.jitter)
    if schedule.exclude:
        row["exclude"] = list(schedule.exclude)
    return row


def job_row(job: Job, zone: ZoneInfo) -> dict[str, Any]:
    last = job.last_run
    # A schedule edited into something unreadable behind the service's back has no next occurrence:
    # the row says so, and why (an extension of the contract, see docs/protocol.md).
    schedule_error = schedule_problem(job.schedule)
    return {
        "id": job.id,
        "name": job.name,
        "target": job.target,
        "action": job.action,
        "args": dict(job.args),
        "kind": job.kind,
        "schedule": schedule_row(job.schedule, zone),
        "state": job.state.value,
        "paused_by": job.paused_by.value if job.paused_by else None,
        "pause_note": job.pause_note,
        "paused_at": _iso(job.paused_at, zone),
        "next_run_at": None if schedule_error else _iso(job.next_run_at, zone),
        "schedule_error": schedule_error,
        "ends_at": _iso(job.ends_at, zone),
        "last_run": None
        if last is None
        else {
            "fire_id": last.fire_id,
            "fired_at": render(last.fired_at, zone),
            "attempt": last.attempt,
            "outcome": last.outcome.value,
            "message": last.message,
            "took_ms": last.took_ms,
        },
        "consecutive_failures": job.consecutive_failures,
        "skipped": {
            "overlap": job.skipped_overlap,
            "misfire": job.skipped_misfire,
            "calendar": job.skipped_calendar,
        },
        "misfire": job.misfire.value,
        "overlap": job.overlap.value,
        # buffer_one: how many occurrences waited for a running one, and the one that waits now.
        "buffered": job.buffered,
        "buffered_for": _iso(job.buffered_for, zone),
        # replace: how many occurrences ended cancelled, stopped for a newer one.
        "cancelled": job.cancelled,
        # allow: how many occurrences started beside another, and how many are in flight now.
        "overlapped": job.overlapped,
        "in_flight": len(job.flights),
        # Backfill: the occurrences queued to run, and how many backfilled ones have started.
        "backfill_queued": len(job.backfill),
        "backfilled": job.backfilled,
        "max_attempts": job.max_attempts,
        "retry_backoff_ms": job.retry_backoff_ms,
        "breaker_threshold": job.breaker_threshold,
        "dedupe_key": job.dedupe_key,
        "once": job.once,
        "origin": dict(job.origin),
        "created_by": job.created_by,
        "created_at": render(job.created_at, zone),
        "updated_at": render(job.updated_at, zone),
    }


def firing_row(planned: Planned, zone: ZoneInfo) -> dict[str, Any]:
    """An occurrence to come: `at` when it fires (jitter included) and `nominal`, its timetable instant."""
    row = {"at": render(planned.at, zone), "nominal": render(planned.nominal, zone)}
    if planned.excluded is not None:
        row["excluded"] = planned.excluded
    return row


def run_row(run: Run, zone: ZoneInfo) -> dict[str, Any]:
    return {
        "id": run.id,
        "job_id": run.job_id,
        "schedule": run.job_name,
        "fire_id": run.fire_id,
        "attempt": run.attempt,
        "scheduled_for": render(run.scheduled_for, zone),
        "started_at": render(run.started_at, zone),
        "finished_at": render(run.finished_at, zone),
        "outcome": run.outcome.value,
        "message": run.message,
        "took_ms": run.took_ms,
        "node": run.node,
        "output": run.output,
    }
