"""Jobs and runs to and from JSON, for stores. Instants are UTC ISO strings with microseconds.

A record (`job_data`, `run_data`) holds its instants as UTC datetimes, which `encode` writes as those
strings; the readers take the decoded JSON. The record carries `format`, so a later release can read
what an earlier one wrote.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from cronwright.core.model import (
    AtSchedule,
    CronSchedule,
    EverySchedule,
    InFlight,
    Job,
    LastRun,
    Misfire,
    Outcome,
    Overlap,
    PausedBy,
    Run,
    Schedule,
    State,
)
from cronwright.timing.cron_set import CronSet

FORMAT = 1


class Decoded:
    """How many job and run records this process has decoded, ever: what a request reads, counted where
    every durable store reads it (semantic 42: a request decodes no row it does not answer with). The
    tests read it before and after a request; the cost is one addition per record."""

    jobs = 0
    runs = 0


def instant(value: datetime | None) -> str | None:
    """An instant as a record's JSON holds it: UTC, ISO 8601 with microseconds."""
    at = _at(value)
    return None if at is None else at.isoformat()


def _at(value: datetime | None) -> datetime | None:
    """An instant of a record, in UTC: `encode` writes it as `instant` renders it."""
    if value is None or value.tzinfo is UTC:
        return value
    return value.astimezone(UTC)


def encode(record: Any) -> str:
    """The JSON text of a record, compact, UTF-8 unescaped, its datetimes as ISO strings.

    orjson writes it about ten times faster than the standard library, and every firing writes its
    job's row twice; the standard library writes what orjson refuses (an integer past 64 bits).
    """
    try:
        return orjson.dumps(record).decode()
    except TypeError:
        return _fallback(record)


def _iso(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


_fallback = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_iso).encode


def read_instant(value: Any) -> datetime | None:
    if value is None:
        return None
    at = datetime.fromisoformat(value)
    # What `encode` wrote parses as UTC already, and astimezone, though it would return `at` itself,
    # costs as much as the parse: each job read parses four instants or more.
    return at if at.tzinfo is UTC else at.astimezone(UTC)


def _required_instant(value: Any) -> datetime:
    parsed = read_instant(value)
    if parsed is None:
        raise ValueError("a required instant is missing")
    return parsed


def micros(value: datetime | None) -> int | None:
    """An instant as integer microseconds since the epoch: the sortable form that stores index."""
    if value is None:
        return None
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)


_MS = timedelta(milliseconds=1)


def schedule_data(schedule: Schedule) -> dict[str, Any]:
    if isinstance(schedule, AtSchedule):
        return {"at": _at(schedule.at)}
    if isinstance(schedule, CronSchedule):
        data: dict[str, Any] = {"cron": schedule.expression.shown, "tz": schedule.tz}
    else:
        data = {"every_ms": schedule.period // _MS}
    if schedule.jitter is not None:
        data["jitter_ms"] = schedule.jitter // _MS
    if schedule.exclude:
        data["exclude"] = list(schedule.exclude)
    return data


def _exclude(data: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(name) for name in data.get("exclude") or ())


def _jitter(data: dict[str, Any]) -> timedelta | None:
    return None if data.get("jitter_ms") is None else timedelta(milliseconds=data["jitter_ms"])


def read_schedule(data: dict[str, Any]) -> Schedule:
    if "cron" in data:
        # Stored expressions were validated when written, and are not re-checked here, so a row written
        # behind the service's back still loads and lists every other row.
        return CronSchedule(CronSet.stored(data["cron"]), data["tz"], _jitter(data), _exclude(data))
    if "every_ms" in data:
        return EverySchedule(timedelta(milliseconds=data["every_ms"]), _jitter(data), _exclude(data))
    return AtSchedule(_required_instant(data["at"]))


def job_data(job: Job) -> dict[str, Any]:
    # Built key by key, in the order the record has always had (so rows are written byte for byte as
    # before): a `**({...} if ... else {})` per optional field made and merged a dict each, and every
    # firing encodes its job twice.
    last = job.last_run
    flight = job.in_flight
    data: dict[str, Any] = {
        "format": FORMAT,
        "id": job.id,
        "name": job.name,
        "target": job.target,
        "action": job.action,
        "args": dict(job.args),
        "schedule": schedule_data(job.schedule),
        "ends_at": _at(job.ends_at),
        "created_at": _at(job.created_at),
        "updated_at": _at(job.updated_at),
        "created_by": job.created_by,
        "state": job.state.value,
        "paused_by": job.paused_by.value if job.paused_by else None,
    }
    if job.pause_note is not None:
        data["pause_note"] = job.pause_note
    if job.paused_at is not None:
        data["paused_at"] = _at(job.paused_at)
    data["next_run_at"] = _at(job.next_run_at)
    if job.nominal_next != job.next_run_at:
        data["next_nominal"] = _at(job.next_nominal)
    data["last_run"] = (
        None
        if last is None
        else {
            "fire_id": last.fire_id,
            "fired_at": _at(last.fired_at),
            "attempt": last.attempt,
            "outcome": last.outcome.value,
            "message": last.message,
            "took_ms": last.took_ms,
        }
    )
    data["consecutive_failures"] = job.consecutive_failures
    data["skipped_overlap"] = job.skipped_overlap
    data["skipped_misfire"] = job.skipped_misfire
    if job.skipped_calendar:
        data["skipped_calendar"] = job.skipped_calendar
    if job.overlap is not Overlap.SKIP:
        data["overlap"] = job.overlap.value
    if job.buffered:
        data["buffered"] = job.buffered
    if job.buffered_for is not None:
        data["buffered_for"] = _at(job.buffered_for)
    if job.buffered_nominal is not None:
        data["buffered_nominal"] = _at(job.buffered_nominal)
    if job.cancelled:
        data["cancelled"] = job.cancelled
    if job.backfill:
        data["backfill"] = [_at(t) for t in job.backfill]
    if job.backfill_covered:
        data["backfill_covered"] = [[_at(a), _at(b)] for a, b in job.backfill_covered]
    if job.backfilled:
        data["backfilled"] = job.backfilled
    data["misfire"] = job.misfire.value
    data["max_attempts"] = job.max_attempts
    data["retry_backoff_ms"] = job.retry_backoff_ms
    data["breaker_threshold"] = job.breaker_threshold
    data["dedupe_key"] = job.dedupe_key
    data["once"] = job.once
    data["origin"] = dict(job.origin)
    data["in_flight"] = None if flight is None else _flight_data(flight)
    if job.alongside:
        data["alongside"] = [_flight_data(other) for other in job.alongside]
    if job.overlapped:
        data["overlapped"] = job.overlapped
    data["occurrences"] = job.occurrences
    data["version"] = job.version
    return data


def read_job(data: dict[str, Any]) -> Job:
    Decoded.jobs += 1
    last = data.get("last_run")
    flight = data.get("in_flight")
    # Every field, each read and checked as `Job(...)` would take it; `Job.stored` skips only the frozen
    # __init__'s one object.__setattr__ per field (a pass reads each due job's row).
    return Job.stored(
        id=data["id"],
        name=data["name"],
        target=data["target"],
        action=data["action"],
        args=data["args"],
        schedule=read_schedule(data["schedule"]),
        ends_at=_required_instant(data["ends_at"]),
        created_at=_required_instant(data["created_at"]),
        updated_at=_required_instant(data["updated_at"]),
        created_by=data["created_by"],
        state=State(data["state"]),
        paused_by=PausedBy(data["paused_by"]) if data.get("paused_by") else None,
        pause_note=data.get("pause_note"),
        paused_at=read_instant(data.get("paused_at")),
        next_run_at=read_instant(data.get("next_run_at")),
        next_nominal=read_instant(data.get("next_nominal")),
        last_run=None
        if last is None
        else LastRun(
            last["fire_id"],
            _required_instant(last["fired_at"]),
            last["attempt"],
            Outcome(last["outcome"]),
            last["message"],
            last["took_ms"],
        ),
        consecutive_failures=data["consecutive_failures"],
        skipped_overlap=data["skipped_overlap"],
        skipped_misfire=data["skipped_misfire"],
        skipped_calendar=data.get("skipped_calendar", 0),
        overlap=Overlap(data.get("overlap", "skip")),
        buffered=data.get("buffered", 0),
        buffered_for=read_instant(data.get("buffered_for")),
        buffered_nominal=read_instant(data.get("buffered_nominal")),
        cancelled=data.get("cancelled", 0),
        backfill=tuple(_required_instant(t) for t in data.get("backfill", ())),
        backfill_covered=tuple(
            (_required_instant(a), _required_instant(b)) for a, b in data.get("backfill_covered", ())
        ),
        backfilled=data.get("backfilled", 0),
        misfire=Misfire(data["misfire"]),
        max_attempts=data["max_attempts"],
        retry_backoff_ms=data["retry_backoff_ms"],
        breaker_threshold=data["breaker_threshold"],
        dedupe_key=data.get("dedupe_key"),
        once=data["once"],
        origin=data.get("origin") or {},
        in_flight=None if flight is None else _read_flight(flight),
        alongside=tuple(_read_flight(other) for other in data.get("alongside", ())),
        overlapped=data.get("overlapped", 0),
        occurrences=data["occurrences"],
        version=data["version"],
    )


def _flight_data(flight: InFlight) -> dict[str, Any]:
    return {
        "fire_id": flight.fire_id,
        "scheduled_for": _at(flight.scheduled_for),
        "attempt": flight.attempt,
        "started_at": _at(flight.started_at),
        "node": flight.node,
        "manual": flight.manual,
        "retry_at": _at(flight.retry_at),
        **({"handed_off": True} if flight.handed_off else {}),
        **({"nominal": _at(flight.nominal)} if flight.nominal is not None else {}),
        **({"cancel": True} if flight.cancel else {}),
    }


def _read_flight(flight: dict[str, Any]) -> InFlight:
    return InFlight(
        flight["fire_id"],
        _required_instant(flight["scheduled_for"]),
        flight["attempt"],
        _required_instant(flight["started_at"]),
        flight["node"],
        flight["manual"],
        read_instant(flight.get("retry_at")),
        bool(flight.get("handed_off", False)),
        read_instant(flight.get("nominal")),
        bool(flight.get("cancel", False)),
    )


def run_data(run: Run) -> dict[str, Any]:
    return {
        "job_id": run.job_id,
        "job_name": run.job_name,
        "fire_id": run.fire_id,
        "attempt": run.attempt,
        "scheduled_for": _at(run.scheduled_for),
        "started_at": _at(run.started_at),
        "finished_at": _at(run.finished_at),
        "outcome": run.outcome.value,
        "message": run.message,
        "took_ms": run.took_ms,
        "node": run.node,
        "output": run.output,
    }


def read_run(data: dict[str, Any]) -> Run:
    Decoded.runs += 1
    return Run(
        job_id=data["job_id"],
        job_name=data["job_name"],
        fire_id=data["fire_id"],
        attempt=data["attempt"],
        scheduled_for=_required_instant(data["scheduled_for"]),
        started_at=_required_instant(data["started_at"]),
        finished_at=_required_instant(data["finished_at"]),
        outcome=Outcome(data["outcome"]),
        message=data["message"],
        took_ms=data["took_ms"],
        node=data["node"],
        output=data.get("output", ""),
    )
