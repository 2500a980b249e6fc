"""APScheduler 3 jobs (the rows of an SQLAlchemy job store) as python schedules, read without importing
the user's code (restricted_pickle.py).

| APScheduler 3 | cronwright |
| --- | --- |
| `func` "module:name" | a python target of that module, action `name` (it must be `@cronwright.action`) |
| `kwargs` | `args`; positional `args` are refused (a python action takes its args by name) |
| `cron` trigger and its `timezone` | `schedule.cron` and `tz` (day_of_week renumbered: 0 is Monday there) |
| `interval` trigger | `schedule.every` (its phase starts at the create) |
| `date` trigger | `run_at` |
| `coalesce` | `misfire` coalesce, else skip (cronwright never runs every missed one) |
| `max_instances` 1 / more | `overlap` skip / allow |
| `jitter`, `end_date` | `schedule.jitter`, `lifetime` (an end instant) |
| `next_run_time` null (a paused job) | paused after its create (`--apply`) |

A cron trigger with both a day and a weekday is refused (APScheduler requires both, cron fires on either),
except the `1st mon` and `last fri` day forms, which cron says as `1#1` and `5L`.
"""

from __future__ import annotations

import pickle
import re
from datetime import datetime, timedelta
from typing import Any

from cronwright.errors import Invalid
from cronwright.importers.outcome import Batch, Reading, slug
from cronwright.importers.restricted_pickle import Refused, load_state
from cronwright.timing.cron import CronExpression
from cronwright.timing.durations import format_duration

FORMAT = "apscheduler"
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_ORDINAL = {"1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5}
GENERAL = (
    "each function runs in a worker process of a python target, as a `@cronwright.action`; its module is "
    "named here, never imported by the import.",
    "misfire_grace_time is per job in APScheduler; cronwright's grace is the node's misfire_grace.",
)


def read(rows: list[tuple[str, bytes]], label: str) -> Batch:
    """The mapping of a job store's rows, (id, job_state) each."""
    batch = Batch(FORMAT, GENERAL)
    for job_id, blob in rows:
        where = f"{label} job {job_id}"
        try:
            state = load_state(blob)
        except Refused as error:
            batch.refuse(where, job_id, f"not loaded: {error}")
            continue
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as error:
            batch.refuse(where, job_id, f"not an APScheduler 3 job state: {error}")
            continue
        problem = _one(batch, where, state)
        if problem:
            batch.refuse(where, f"{job_id} ({state.get('func')})", problem)
    return batch


def _one(batch: Batch, where: str, state: dict[str, Any]) -> str | None:
    func = str(state.get("func", ""))
    module, _, name = func.partition(":")
    if not module or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"func {func!r} is not a module-level function (module:name), which a python action must be"
    if state.get("args"):
        return f"positional args {tuple(state['args'])!r}: a python action takes its args by name (kwargs)"
    timing = _trigger(state.get("trigger"))
    if isinstance(timing, str):
        return timing
    fields, notes, reading = timing
    target = slug(module.replace(".", "-"), 60)
    batch.target(target, {"kind": "python", "module": module})
    seed: dict[str, Any] = {
        "name": slug(str(state.get("id")), 90),
        "dedupe_key": f"apscheduler:{state.get('id')}",
        **fields,
    }
    if state.get("kwargs"):
        seed["args"] = dict(state["kwargs"])
    if "run_at" not in seed:
        seed["misfire"] = "coalesce" if state.get("coalesce") else "skip"
        if not state.get("coalesce"):
            notes.append("coalesce=False ran every missed firing; cronwright runs none of them (skip)")
        instances = int(state.get("max_instances") or 1)
        seed["overlap"] = "skip" if instances == 1 else "allow"
        if instances > 1:
            notes.append(f"max_instances={instances}: overlap allow runs any number side by side")
    if state.get("executor") not in (None, "default"):
        notes.append(f"executor {state['executor']!r}: a python target runs it in its own worker processes")
    if module.split(".")[0] not in ("__main__",):
        notes.append(f"add the folder holding {module} to [targets.{target}] path, and decorate {name}")
    entry = batch.add(where, f"{state.get('id')} ({func})", target, None, seed, notes, reading=reading,
                      action_name=name)  # fmt: skip
    if state.get("next_run_time") is None and entry.seed is not None:
        batch.paused.add(entry.seed["dedupe_key"])
    return None


def _trigger(trigger: object) -> tuple[dict[str, Any], list[str], Reading] | str:
    kind = type(trigger).__name__
    if kind == "DateTrigger":
        run_date: datetime = trigger.run_date  # type: ignore[attr-defined]
        return {"run_at": run_date.isoformat()}, [], Reading("trigger", trigger=trigger)
    if kind == "IntervalTrigger":
        return _interval(trigger)
    if kind == "CronTrigger":
        return _cron(trigger)
    return f"a {kind} trigger has no cronwright schedule (cron, interval and date triggers do)"


def _interval(trigger: Any) -> tuple[dict[str, Any], list[str], Reading] | str:
    interval: timedelta = trigger.interval
    if interval < timedelta(seconds=60):
        return f"every {interval.total_seconds():g}s is below the 60s floor of `every` (node min_period)"
    schedule: dict[str, Any] = {"every": format_duration(interval)}
    fields: dict[str, Any] = {"schedule": schedule}
    notes = [f"its phase starts at the create, not at start_date {trigger.start_date.isoformat()}"]
    _common(trigger, schedule, fields, notes)
    why = "an interval's phase depends on when each side started it"
    return fields, notes, Reading("none", why=why)


def _cron(trigger: Any) -> tuple[dict[str, Any], list[str], Reading] | str:
    field = {f.name: f for f in trigger.fields}
    for name, plain in (("year", "*"), ("week", "*"), ("second", "0")):
        if str(field[name]) != plain:
            return f"{name}={field[name]}: cron has no {name} field (only {plain} maps)"
    dom, dow = str(field["day"]), _weekdays(str(field["day_of_week"]))
    if dow is None:
        return f"day_of_week={field['day_of_week']}: a step over weekdays has no cron form"
    position = re.fullmatch(r"(1st|2nd|3rd|4th|5th|last) (\w{3})", dom)
    if position:
        if dow != "*":
            return "both a day position and day_of_week: APScheduler requires both, cron fires on either"
        day = _DAYS.index(position.group(2)) + 1
        ordinal = position.group(1)
        dom, dow = "*", f"{day}L" if ordinal == "last" else f"{day}#{_ORDINAL[ordinal]}"
    elif dom == "last":
        dom = "L"
    if dom != "*" and dow != "*":
        return f"day={dom} and day_of_week: APScheduler requires both, cron fires on either"
    text = f"{field['minute']} {field['hour']} {dom} {field['month']} {dow}"
    try:
        expression = CronExpression.parse(text)
    except Invalid as error:
        return f"{text}: {error.message}"
    zone = getattr(trigger.timezone, "key", str(trigger.timezone))
    schedule: dict[str, Any] = {"cron": str(expression), "tz": zone}
    fields: dict[str, Any] = {"schedule": schedule}
    notes: list[str] = []
    _common(trigger, schedule, fields, notes)
    return fields, notes, Reading("trigger", trigger=trigger, zone=zone)


def _weekdays(text: str) -> str | None:
    """APScheduler's day_of_week (0 or mon is Monday) in cron's numbers (1 Monday ... 7 Sunday)."""
    if "/" in text:
        return None
    if text == "*":
        return text

    def day(word: str) -> str:
        return str(int(word) + 1) if word.isdigit() else str(_DAYS.index(word.lower()[:3]) + 1)

    return ",".join("-".join(day(end) for end in part.split("-")) for part in text.split(","))


def _common(trigger: Any, schedule: dict[str, Any], fields: dict[str, Any], notes: list[str]) -> None:
    if getattr(trigger, "jitter", None):
        schedule["jitter"] = format_duration(timedelta(seconds=int(trigger.jitter)))
    if getattr(trigger, "end_date", None) is not None:
        fields["lifetime"] = trigger.end_date.isoformat()
        notes.append("end_date becomes the lifetime's end (refused if beyond the node's max_lifetime)")
