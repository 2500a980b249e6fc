"""A Celery beat schedule (`app.conf.beat_schedule`, already loaded by the caller) as `celery` target
actions: each entry's task is sent by name to the user's workers, as beat sent it.

The target's shape is the one docs/celery.md fixes (`kind = "celery"`, `broker_secret`, actions with `task`,
`queue`, `routing_key`, `priority`, `positional`, `args_schema`); `celery_target` and `celery_action` are the
one place that writes it.

| beat entry | cronwright |
| --- | --- |
| `crontab(...)` in the app's `timezone` | `schedule.cron` and `tz` (a day AND a weekday: refused) |
| a number of seconds, a `timedelta`, `schedule(run_every=...)` | `schedule.every` |
| `solar(...)` | refused |
| `args`, `kwargs` | `positional = ["arg0", ...]` and the seed's `args` |
| `options.queue`, `routing_key`, `priority` | the action's own keys |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from cronwright.errors import Invalid
from cronwright.importers.outcome import Batch, Entry, Reading, slug
from cronwright.timing.cron import CronExpression
from cronwright.timing.durations import format_duration

FORMAT = "celery"
SOLAR = "solar (sunrise or sunset at a place) has no cron or period form"
TARGET = "celery"
GENERAL = (
    "each entry's task is sent by name to your Celery workers through the `celery` target; set the "
    "secret CELERY_BROKER_URL to the broker's URL. cronwright sends each occurrence once (no beat needed).",
)


def celery_target() -> dict[str, Any]:
    return {"kind": "celery", "broker_secret": "CELERY_BROKER_URL"}


def celery_action(task: str, options: Mapping[str, Any], positional: list[str]) -> dict[str, Any]:
    action: dict[str, Any] = {"task": task}
    for key in ("queue", "routing_key", "priority"):
        if options.get(key) is not None:
            action[key] = options[key]
    if positional:
        action["positional"] = positional
    action["args_schema"] = {"type": "object"}
    return action


def read(schedule: Mapping[str, Any], zone_name: str, label: str) -> Batch:
    """The mapping of a beat_schedule read in `zone_name` (the app's timezone; UTC when enable_utc)."""
    batch = Batch(FORMAT, GENERAL)
    batch.target(TARGET, celery_target())
    for name, entry in schedule.items():
        where = f"{label} {name}"
        problem = _one(batch, where, str(name), entry, zone_name)
        if problem:
            batch.refuse(where, str(name), problem)
    return batch


def _one(batch: Batch, where: str, name: str, entry: Any, zone_name: str) -> str | None:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("task"), str):
        return "an entry needs a task name (entry['task'])"
    timing = _timing(entry.get("schedule"), zone_name)
    if isinstance(timing, str):
        return timing
    notes: list[str] = []
    options = dict(entry.get("options") or {})
    for key in sorted(set(options) - {"queue", "routing_key", "priority"}):
        notes.append(f"option {key}={options[key]!r} is not carried (the message expires at due + grace)")
    if entry.get("relative"):
        notes.append("relative=True: the period is not rounded to the clock here")
    task = Task(name, entry["task"], options, list(entry.get("args") or ()), dict(entry.get("kwargs") or {}))
    added = add_task(batch, where, task, timing, notes)
    return added if isinstance(added, str) else None


@dataclass(frozen=True, slots=True)
class Task:
    """One scheduled task as beat sends it: its entry's name, the task's name, the options the action
    keeps (queue, routing_key, priority), and its args and kwargs."""

    name: str
    task: str
    options: Mapping[str, Any]
    args: list[Any]
    kwargs: dict[str, Any]


def add_task(
    batch: Batch, where: str, task: Task, timing: tuple[dict[str, Any], Reading], notes: list[str]
) -> Entry | str:
    """Adds `task` as a `celery` target action and its seed, keyed `celery:NAME` (beat's entry names are
    unique, and django-celery-beat's scheduler stores the app's entries under the same names); the
    reason when it cannot be mapped."""
    positional = [f"arg{index}" for index in range(len(task.args))]
    clash = set(positional) & set(task.kwargs)
    if clash:
        return f"kwargs {sorted(clash)} clash with the names given to positional args"
    fields, reading = timing
    seed: dict[str, Any] = {"name": slug(task.name, 90), "dedupe_key": f"celery:{task.name}", **fields}
    values = {**dict(zip(positional, task.args, strict=True)), **task.kwargs}
    if values:
        seed["args"] = values
    action = celery_action(task.task, task.options, positional)
    return batch.add(where, f"{task.name} ({task.task})", TARGET, action, seed, notes, reading=reading)


def _timing(value: object, zone_name: str) -> tuple[dict[str, Any], Reading] | str:
    kind = type(value).__name__
    period: timedelta | None = None
    if isinstance(value, bool):
        return "a schedule of True/False is not a period"
    if isinstance(value, int | float):
        period = timedelta(seconds=value)
    elif isinstance(value, timedelta):
        period = value
    elif kind == "schedule" and isinstance(getattr(value, "run_every", None), timedelta):
        period = value.run_every  # type: ignore[attr-defined]
    elif kind == "solar":
        return SOLAR
    elif kind == "crontab":
        return _crontab(value, zone_name)
    if period is None:
        return f"a {kind} schedule has no cronwright form (crontab, seconds, timedelta do)"
    return period_schedule(period)


def period_schedule(period: timedelta) -> tuple[dict[str, Any], Reading] | str:
    """A period as `schedule.every` (at least the 60 s floor), or the reason it cannot be."""
    if period < timedelta(seconds=60):
        return f"every {period.total_seconds():g}s is below the 60s floor of `every` (node min_period)"
    why = "an interval's phase depends on when each side started it"
    return {"schedule": {"every": format_duration(period)}}, Reading("none", why=why)


def _crontab(value: Any, zone_name: str) -> tuple[dict[str, Any], Reading] | str:
    parts = [
        _field(getattr(value, f"_orig_{name}", "*"))
        for name in ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
    ]
    return crontab_schedule(parts, zone_name)


def crontab_schedule(parts: list[str], zone_name: str) -> tuple[dict[str, Any], Reading] | str:
    """Celery crontab fields in cron's order (minute, hour, day_of_month, month_of_year, day_of_week)
    as `schedule.cron` in `zone_name`, or the reason they cannot be."""
    if parts[2] != "*" and parts[4] != "*":
        return "both day_of_month and day_of_week: Celery requires both, cron fires on either"
    text = " ".join(parts)
    try:
        expression = CronExpression.parse(text)
    except Invalid as error:
        return f"crontab({text}): {error.message}"
    reading = Reading("cron", (text,), zone_name)
    return {"schedule": {"cron": str(expression), "tz": zone_name}}, reading


def _field(value: object) -> str:
    if isinstance(value, str | int):
        return str(value).replace(" ", "")
    return ",".join(str(item) for item in sorted(value))  # type: ignore[call-overload]
