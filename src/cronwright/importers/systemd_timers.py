"""A systemd `.timer` and the `.service` it starts, as one command schedule.

| timer / service | cronwright |
| --- | --- |
| `OnCalendar=` (several: their union), read by the `oncalendar` library | `schedule.cron` (several: a list) |
| its zone suffix (`Europe/Berlin`) | `schedule.tz`; none: the node zone, as systemd uses the host's |
| `RandomizedDelaySec=` | `schedule.jitter` |
| `Persistent=true` (runs a missed firing at boot) | `misfire = "coalesce"` |
| `ExecStart=` (several run in turn) | the argv (several: a marked `sh -c` joining them with `&&`) |
| `Environment=` | variables set through env(1) |
| `OnBootSec=`, `OnUnitActiveSec=` and the other monotonic triggers | refused |

An `OnCalendar=` that cron cannot say is refused with the reason: a year, a second other than 0, a day
counted from the month's end other than the last (`~01`), or both a weekday and a day of the month (systemd
requires both; cron fires on either), except a weekday in the days 1-7, 8-14, ... (`Mon *-*-1..7`: `MON#1`).
"""

from __future__ import annotations

import shlex
from datetime import datetime
from typing import Any

from cronwright.errors import Invalid
from cronwright.importers.outcome import Batch, Reading, slug
from cronwright.importers.shell_words import with_environment
from cronwright.importers.unit_files import parse_unit, seconds
from cronwright.timing.cron import CronExpression
from cronwright.timing.durations import format_duration
from cronwright.timing.zones import zone as named_zone

FORMAT = "systemd"
TARGET = "systemd"
MONOTONIC = ("OnBootSec", "OnStartupSec", "OnActiveSec", "OnUnitActiveSec", "OnUnitInactiveSec")
GENERAL = (
    "on a DST night systemd skips a wall time the clocks jump over and runs one they repeat twice; "
    "cronwright (cronie's rule) runs a fixed time just after the jump, and once: --compare shows each "
    "such night.",
    "systemd may start a timer up to AccuracySec= (1min by default) late; cronwright starts it on time.",
)


def read(timer: str, timer_name: str, service: str | None, service_name: str) -> Batch:
    """The mapping of one timer (`timer_name`, its text) and its service's text (None if not found)."""
    batch = Batch(FORMAT, GENERAL)
    batch.target(TARGET, {"kind": "command"})
    problem = _one(batch, timer, timer_name, service, service_name)
    if problem:
        batch.refuse(timer_name, timer_name, problem)
    return batch


def _one(batch: Batch, timer_text: str, name: str, service_text: str | None, service_name: str) -> str | None:
    timer = parse_unit(timer_text).get("Timer", {})
    monotonic = [key for key in MONOTONIC if timer.get(key)]
    if monotonic:
        return f"{', '.join(monotonic)}: a monotonic timer counts from boot or the last run, not a calendar"
    calendars = timer.get("OnCalendar") or []
    if not calendars:
        return "no OnCalendar=: nothing says when it fires"
    if service_text is None:
        return f"its service {service_name} was not found beside the timer"
    converted = [_to_cron(expression) for expression in calendars]
    for expression, found in zip(calendars, converted, strict=True):
        if isinstance(found, str):
            return f"OnCalendar={expression}: {found}"
    crons = [found for found in converted if not isinstance(found, str)]
    zones = {zone for _, zone in crons}
    if len(zones) > 1:
        return "its OnCalendar= lines name different zones; a schedule has one"
    zone_name = zones.pop()
    notes: list[str] = []
    schedule: dict[str, Any] = {"cron": [cron for cron, _ in crons] if len(crons) > 1 else crons[0][0]}
    if zone_name:
        schedule["tz"] = zone_name
    delay = timer.get("RandomizedDelaySec")
    if delay:
        span = seconds(delay[-1])
        if span is None:
            return f"RandomizedDelaySec={delay[-1]} is not a time span"
        if span >= 1:
            from datetime import timedelta

            schedule["jitter"] = format_duration(timedelta(seconds=int(span)))
    if (timer.get("FixedRandomDelay") or ["no"])[-1] in ("yes", "true", "1"):
        notes.append("FixedRandomDelay: cronwright's jitter is fixed per schedule and instant, not per host")
    persistent = (timer.get("Persistent") or ["no"])[-1].lower() in ("yes", "true", "1", "on")
    service = parse_unit(service_text).get("Service", {})
    run = _exec(service, notes)
    if isinstance(run, str):
        return run
    argv, shell = run
    for key in ("User", "Group", "WorkingDirectory", "EnvironmentFile"):
        if service.get(key):
            notes.append(f"{key}={service[key][-1]} is not carried: set it on the node, or in the command")
    seed: dict[str, Any] = {
        "name": slug(name.removesuffix(".timer"), 90),
        "dedupe_key": f"systemd:{name}",
        "schedule": schedule,
        "misfire": "coalesce" if persistent else "skip",
    }
    action = {"argv": list(argv), "timeout": "1d"}
    reading = Reading("oncalendar", tuple(calendars), zone_name)
    batch.add(name, f"{name} + {service_name}", TARGET, action, seed, notes, shell, reading)
    return None


def _exec(service: dict[str, list[str]], notes: list[str]) -> tuple[tuple[str, ...], bool] | str:
    """The service's ExecStart= lines as one argv (and whether it is a marked shell), or why not."""
    lines = service.get("ExecStart") or []
    if not lines:
        return "its service has no ExecStart="
    commands, ignore = [], []
    for line in lines:
        prefix = len(line) - len(line.lstrip("-@+!:"))
        flags, line = line[:prefix], line[prefix:]
        if "@" in flags or "+" in flags or "!" in flags:
            return f"ExecStart prefix {flags!r} (another argv[0], or privileges) has no equivalent"
        if "%" in line.replace("%%", ""):
            return f"ExecStart={line}: % specifiers are the service manager's to expand"
        try:
            words = shlex.split(line.replace("%%", "%"))
        except ValueError as error:
            return f"ExecStart={line}: {error}"
        commands.append(words)
        ignore.append("-" in flags)
    variables: dict[str, str] = {}
    for assignment in service.get("Environment") or []:
        for word in shlex.split(assignment):
            key, _, value = word.partition("=")
            variables[key] = value
    dollar = any("$" in word for words in commands for word in words)
    if len(commands) == 1 and not ignore[0] and not dollar:
        return with_environment(tuple(commands[0]), variables), False
    parts = [
        " ".join(_quote(word) for word in words) + (" || true" if skip else "")
        for words, skip in zip(commands, ignore, strict=True)
    ]
    if dollar:
        notes.append("$VARIABLES in ExecStart= are expanded by sh here, not by systemd")
    notes.append("several ExecStart= lines (or '-') run in turn through sh -c, stopping at a failure")
    return with_environment(("/bin/sh", "-c", " && ".join(parts)), variables), True


def _quote(word: str) -> str:
    """A word for sh: quoted whole, in double quotes where it holds a variable, so sh expands it (as one
    word, as systemd does `${NAME}`) and nothing else in it."""
    if "$" not in word:
        return shlex.quote(word)
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    return f'"{escaped}"'


def _to_cron(expression: str) -> tuple[str, str | None] | str:
    """(cron expression, zone name or None) for one OnCalendar= expression, or why cron cannot say it."""
    import oncalendar

    text, zone_name = expression.strip(), None
    head, _, last = text.rpartition(" ")
    if head and last[0] not in "0123456789*" and oncalendar.parse_tz(last) is not None:
        text, zone_name = head, named_zone(last).key
    try:
        parsed = oncalendar.BaseIterator(text, datetime(2000, 1, 1))
    except oncalendar.OnCalendarError as error:
        return f"oncalendar cannot read it ({error})"
    if len(parsed.years) != len(oncalendar.RANGES[oncalendar.Field.YEAR]):
        return "it names years, which cron cannot"
    if parsed.seconds != {0}:
        return "it fires at seconds other than :00, and a cron minute starts at :00"
    weekdays = {(day + 1) % 7 for day in parsed.weekdays}
    every_weekday = len(weekdays) == 7
    if any(day < 0 for day in parsed.days):
        if parsed.days != {-1}:
            return "a day counted from the month's end other than the last (~01) has no cron form"
        dom = "L"
    else:
        dom = _field(parsed.days, 1, 31)
    dow = "*" if every_weekday else _field(weekdays, 0, 6)
    if dom != "*" and not every_weekday:
        week = sorted(parsed.days)
        if len(weekdays) == 1 and len(week) == 7 and week[0] in (1, 8, 15, 22) and week[-1] == week[0] + 6:
            dom, dow = "*", f"{weekdays.pop()}#{(week[0] + 6) // 7}"
        else:
            return "it needs both its weekday and its day of the month, and cron fires on either"
    fields = [
        _field(parsed.minutes, 0, 59),
        _field(parsed.hours, 0, 23),
        dom,
        _field(parsed.months, 1, 12),
        dow,
    ]
    try:
        return str(CronExpression.parse(" ".join(fields))), zone_name
    except Invalid as error:
        return error.message


def _field(values: set[int], low: int, high: int) -> str:
    """A cron field for a set of values: `*`, or a list of values and ranges."""
    if values == set(range(low, high + 1)):
        return "*"
    ordered, parts, start = sorted(values), [], None
    for index, value in enumerate(ordered):
        start = value if start is None else start
        if index + 1 == len(ordered) or ordered[index + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ",".join(parts)
