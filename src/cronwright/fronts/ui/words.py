"""A schedule in plain English, for people: "at 09:00 on Monday to Friday, Europe/Berlin", "every 15 minutes".

Pure. It reads the protocol's schedule row ({cron, tz}, {every, every_ms} or {at}, with `jitter` and `exclude`
when set), so the dashboard says only what the protocol answered. Cron is worded by cronsim's `explain()` (the
parser DESIGN names), with the commonest steps said more plainly. The text is plain: the page escapes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import timedelta

from cronwright.errors import CronwrightError
from cronwright.timing.cron_set import CronSet
from cronwright.timing.durations import parse_duration

# Each unit a period is said in, largest first; a period is said as the sum of these.
_UNITS = (
    ("day", timedelta(days=1)),
    ("hour", timedelta(hours=1)),
    ("minute", timedelta(minutes=1)),
    ("second", timedelta(seconds=1)),
    ("millisecond", timedelta(milliseconds=1)),
)
_EVERY_NTH_MINUTE = re.compile(r"\*/(\d+) \* \* \* \*")
_EVERY_NTH_SECOND = re.compile(r"\*/(\d+) \* \* \* \* \*")
_EVERY_NTH_HOUR = re.compile(r"0 \*/(\d+) \* \* \*")


def duration_in_words(delta: timedelta) -> str:
    """'1 hour and 30 minutes', '15 minutes', '1 day': whole units, largest first (below a millisecond
    is not said)."""
    parts: list[str] = []
    rest = delta
    for unit, size in _UNITS:
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count} {unit}{'' if count == 1 else 's'}")
    if not parts:
        return "0 seconds"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def every_in_words(delta: timedelta) -> str:
    """'every 15 minutes'; a single unit is said alone: 'every hour', 'every day'."""
    said = duration_in_words(delta)
    return "every " + said.removeprefix("1 ") if re.fullmatch(r"1 [a-z]+", said) else "every " + said


def cron_in_words(texts: str | Sequence[str]) -> str:
    """One expression or several (their union), in words; unreadable text is named as such, not guessed."""
    try:
        cron = CronSet.parse(texts if isinstance(texts, str) else list(texts))
    except CronwrightError:
        return f"cron expression {_listed(texts)} (which cannot be read)"
    said = [_one_cron(expression.text, expression.explain()) for expression in cron.expressions]
    return "; or ".join(said)


def _one_cron(text: str, explained: str) -> str:
    for pattern, unit in ((_EVERY_NTH_SECOND, "second"), (_EVERY_NTH_MINUTE, "minute")):
        match = pattern.fullmatch(text)
        if match:
            return every_in_words(_UNITS_BY_NAME[unit] * int(match.group(1)))
    match = _EVERY_NTH_HOUR.fullmatch(text)
    if match:
        return every_in_words(timedelta(hours=int(match.group(1)))) + ", on the hour"
    if text == "* * * * *":
        return "every minute"
    said = explained.replace(" through ", " to ")
    return said[:1].lower() + said[1:]


_UNITS_BY_NAME = dict(_UNITS)


def _listed(texts: str | Sequence[str]) -> str:
    return repr(texts) if isinstance(texts, str) else ", ".join(repr(text) for text in texts)


def _quoted(names: Sequence[str]) -> str:
    words = [f"'{name}'" for name in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def schedule_in_words(schedule: Mapping[str, object]) -> str:
    """The protocol's schedule row in words: its timing, its zone, its jitter and its excluded calendars."""
    if isinstance(schedule.get("at"), str):
        return f"once at {schedule['at']}"
    cron = schedule.get("cron")
    if isinstance(cron, str | list):
        said = cron_in_words(cron if isinstance(cron, str) else [str(text) for text in cron])
        tz = schedule.get("tz")
        said += f", {tz}" if isinstance(tz, str) else ""
    else:
        said = _every_of(schedule)
    jitter = _duration(schedule.get("jitter"))
    if jitter:
        said += f", up to {duration_in_words(jitter)} later at random (jitter)"
    exclude = schedule.get("exclude")
    if isinstance(exclude, list) and exclude:
        names = [str(name) for name in exclude]
        noun = "calendar" if len(names) == 1 else "calendars"
        said += f", except on the dates of {noun} {_quoted(names)}"
    return said


def _every_of(schedule: Mapping[str, object]) -> str:
    every_ms = schedule.get("every_ms")
    if isinstance(every_ms, int) and not isinstance(every_ms, bool) and every_ms > 0:
        return every_in_words(timedelta(milliseconds=every_ms))
    period = _duration(schedule.get("every"))
    if period:
        return every_in_words(period)
    return "a schedule that cannot be read"


def _duration(value: object) -> timedelta | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_duration(value, "jitter")
    except CronwrightError:
        return None
