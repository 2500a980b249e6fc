"""django-celery-beat's periodic tasks (the rows of its tables, already read and joined by the caller) as
`celery` target actions, mapped as a beat_schedule's entries are (celery_beat.py's functions): the same
target, the same action shape, the same seed keyed `celery:NAME`, so a task its DatabaseScheduler copied
from the app's beat_schedule (under the same name) is the same seed whichever source it is imported from.

| django_celery_beat_periodictask | cronwright |
| --- | --- |
| `crontab` (its five fields and its `timezone`) | `schedule.cron` and `tz` (a day AND a weekday: refused) |
| `interval` (`every` `period`) | `schedule.every` (at least 60 s) |
| `clocked` (`clocked_time`) | `run_at` |
| `solar` | refused |
| `args`, `kwargs` (JSON text) | `positional = ["arg0", ...]` and the seed's `args` |
| `queue`, `routing_key`, `priority` | the action's own keys |
| `enabled` false | paused after its create (`--apply`), noted |
| `expires` | `lifetime` (an end instant), noted |
| `one_off`, `start_time`, `expire_seconds`, `exchange`, `headers` | noted, not carried |

A time without a zone (SQLite, or USE_TZ off) is read as UTC, as Django stores it under USE_TZ, and noted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from cronwright.errors import Invalid
from cronwright.importers.celery_beat import (
    GENERAL,
    SOLAR,
    TARGET,
    Task,
    add_task,
    celery_target,
    crontab_schedule,
    period_schedule,
)
from cronwright.importers.outcome import Batch, Reading
from cronwright.timing.zones import zone

FORMAT = "django-celery-beat"
TABLE = "django_celery_beat_periodictask"
PERIODS = ("days", "hours", "minutes", "seconds", "microseconds")
KINDS = ("crontab", "interval", "clocked", "solar")
CRON_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")


def read(rows: Sequence[Mapping[str, Any]], label: str = TABLE) -> Batch:
    """The mapping of the periodic tasks: one row each, with its schedule's columns joined in (`crontab_id`
    and the crontab's fields and `timezone`, `interval_id`, `every`, `period`, `clocked_id`, `clocked_time`,
    `solar_id`, `event`, `latitude`, `longitude`)."""
    batch = Batch(FORMAT, GENERAL)
    batch.target(TARGET, celery_target())
    for row in rows:
        where = f"{label} {row['name']}"
        problem = _one(batch, where, row)
        if problem:
            batch.refuse(where, f"{row['name']} ({row.get('task')})", problem)
    return batch


def _one(batch: Batch, where: str, row: Mapping[str, Any]) -> str | None:
    values = _json(row, "args", "[]", list)
    if isinstance(values, str):
        return values
    named = _json(row, "kwargs", "{}", dict)
    if isinstance(named, str):
        return named
    notes: list[str] = []
    timing = _timing(row, notes)
    if isinstance(timing, str):
        return timing
    fields, reading = timing
    problem = _limits(row, fields, notes)
    if problem:
        return problem
    options = {
        key: row[key] for key in ("queue", "routing_key", "priority") if row.get(key) not in (None, "")
    }
    task = Task(str(row["name"]), str(row["task"]), options, values, named)
    entry = add_task(batch, where, task, (fields, reading), notes)
    if isinstance(entry, str):
        return entry
    if not row.get("enabled") and entry.seed is not None:
        batch.paused.add(entry.seed["dedupe_key"])
    return None


def _json(row: Mapping[str, Any], column: str, empty: str, kind: type) -> Any:
    """A JSON text column as a `kind` value, or the reason it is not one."""
    text = row.get(column) or empty
    try:
        value = json.loads(text)
    except ValueError as error:
        return f"{column} is not JSON ({error}): {text[:60]!r}"
    if not isinstance(value, kind):
        return f"{column} is JSON, but not a {'list' if kind is list else 'object'}: {text[:60]!r}"
    return value


def _timing(row: Mapping[str, Any], notes: list[str]) -> tuple[dict[str, Any], Reading] | str:
    kinds = [kind for kind in KINDS if row.get(f"{kind}_id") is not None]
    if not kinds:
        return "no schedule: none of crontab, interval, clocked, solar is set"
    if len(kinds) > 1:
        return f"more than one schedule ({', '.join(kinds)}): django-celery-beat allows one"
    if kinds == ["solar"]:
        place = ", ".join(repr(float(row.get(axis) or 0)) for axis in ("latitude", "longitude"))
        return f"{SOLAR} ({row.get('event')} at {place})"
    if kinds == ["interval"]:
        period, every = str(row.get("period")), row.get("every")
        if period not in PERIODS or not isinstance(every, int):
            return f"an interval of {every!r} {period!r}: every takes a whole number of {', '.join(PERIODS)}"
        return period_schedule(timedelta(**{period: every}))
    if kinds == ["clocked"]:
        when = _instant(row, "clocked_time", notes)
        if when is None or isinstance(when, str):
            return when or "a clocked schedule without a clocked_time"
        why = "a clocked task fires once, at its clocked_time, on both sides"
        return {"run_at": when.isoformat()}, Reading("none", why=why)
    name = row.get("timezone") or "UTC"
    if not row.get("timezone"):
        notes.append("the crontab has no timezone: read in UTC")
    try:
        zone(name, "timezone")
    except Invalid as error:
        return f"crontab timezone: {error.message}"
    # Blank fields read as `*`, as django-celery-beat's own cron rendering does.
    parts = [str(row.get(field) or "*").replace(" ", "") for field in CRON_FIELDS]
    return crontab_schedule(parts, str(name))


def _limits(row: Mapping[str, Any], fields: dict[str, Any], notes: list[str]) -> str | None:
    """What the row bounds or adds beyond its schedule: mapped where cronwright has it, else noted; the
    reason when a time column cannot be read."""
    if not row.get("enabled"):
        notes.append("disabled: `--apply` pauses it after its create; otherwise run `cronwright pause`")
    if row.get("one_off") and "run_at" not in fields:
        notes.append("one_off: beat sends it once, then disables it; cronwright sends every occurrence")
    expires, start = _instant(row, "expires", notes), _instant(row, "start_time", notes)
    if isinstance(expires, str) or isinstance(start, str):
        return expires if isinstance(expires, str) else str(start)
    if expires is not None:
        if "run_at" in fields:
            notes.append(f"expires {expires.isoformat()} is not carried: a one-shot runs once, at run_at")
        else:
            fields["lifetime"] = expires.isoformat()
            notes.append("expires becomes the lifetime's end (refused if beyond the node's max_lifetime)")
    if start is not None:
        notes.append(f"start_time {start.isoformat()} is not carried: it runs from its create")
    if row.get("expire_seconds") is not None:
        notes.append(
            f"expire_seconds={row['expire_seconds']} is not carried (the message expires at due + grace)"
        )
    if row.get("exchange"):
        notes.append(f"exchange {row['exchange']!r} is not carried (queue and routing_key are)")
    if (row.get("headers") or "{}").strip() not in ("{}", ""):
        notes.append("headers are not carried")
    return None


def _instant(row: Mapping[str, Any], column: str, notes: list[str]) -> datetime | str | None:
    """A datetime column (a datetime from PostgreSQL, text from SQLite), aware; None when empty."""
    value = row.get(column)
    if value is None or value == "":
        return None
    if not isinstance(value, datetime):
        try:
            value = datetime.fromisoformat(str(value))
        except ValueError:
            return f"{column} {value!r} is not a date and time"
    if value.tzinfo is None:
        notes.append(f"{column} has no zone: read as UTC, as Django stores it under USE_TZ")
        value = value.replace(tzinfo=UTC)
    return value
