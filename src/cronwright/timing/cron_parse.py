"""Cron expressions as text: normalizing them, refusing what cannot be read or can never fire, and
explaining them. The walks are in cron_forward.py and cron_backward.py; `CronExpression` (cron.py) ties them.

The normalized text is upper case (cronsim reads it so anyway), with macros expanded and fields separated by
one space: " @daily " becomes "0 0 * * *" and "0 9 * jan mon-fri" becomes "0 9 * JAN MON-FRI".
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import NamedTuple

from cronsim import CronSim
from cronsim.cronsim import Field

from cronwright.errors import Invalid

MAX_TEXT = 200

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# Where the "can it ever fire?" walk starts. The calendar repeats every 400 years and the longest wait between
# two firings of any expression is about 40 years (Feb 29 on a given weekday), inside cronsim's 50-year walk.
_REFERENCE = datetime(2000, 1, 1, tzinfo=UTC)

_ALLOWED = re.compile(r"[0-9A-Za-z*/,#\- \t]+")
_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


class _Spec(NamedTuple):
    field: Field
    name: str
    low: int
    high: int
    # The most a step may be: a larger step can only ever pick the start, which is surely not what was meant.
    max_step: int
    names: tuple[str, ...]
    name_base: int


_SPECS = {
    Field.SECOND: _Spec(Field.SECOND, "second", 0, 59, 60, (), 0),
    Field.MINUTE: _Spec(Field.MINUTE, "minute", 0, 59, 60, (), 0),
    Field.HOUR: _Spec(Field.HOUR, "hour", 0, 23, 24, (), 0),
    Field.DAY: _Spec(Field.DAY, "day-of-month", 1, 31, 31, (), 0),
    Field.MONTH: _Spec(Field.MONTH, "month", 1, 12, 12, tuple(_MONTHS), 1),
    Field.DOW: _Spec(Field.DOW, "day-of-week", 0, 7, 7, tuple(_DAYS), 0),
}
_FIVE = (Field.MINUTE, Field.HOUR, Field.DAY, Field.MONTH, Field.DOW)
_SIX = (Field.SECOND, *_FIVE)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# -- reading the text --------------------------------------------------------------------------------


def _normalize(text: object, field: str) -> str:
    """Expand macros, upper-case, and join the fields with single spaces; refuse what is not cron at all."""
    if not isinstance(text, str):
        raise Invalid(
            field,
            f"{field} must be a string such as '0 3 * * *' or '@daily', not {type(text).__name__}",
        )
    if len(text) > MAX_TEXT:
        raise Invalid(
            field, f"{field} is longer than {MAX_TEXT} characters: a cron expression is 5 or 6 short fields"
        )
    stripped = text.strip()
    if not stripped:
        raise Invalid(field, f"{field} is empty: give a cron expression such as '0 3 * * *' or '@daily'")
    if stripped.startswith("@"):
        expanded = MACROS.get(stripped.lower())
        if expanded is None:
            raise Invalid(
                field,
                f"unknown cron macro {stripped!r}: use one of {', '.join(MACROS)}, or write the 5 fields",
            )
        return expanded
    if not _ALLOWED.fullmatch(stripped):
        bad = next(ch for ch in stripped if not _ALLOWED.fullmatch(ch))
        raise Invalid(
            field,
            f"cron expression {stripped!r} contains {bad!r}, which cron does not use: "
            "write fields of digits, names, and * , - / # L W, separated by spaces",
        )
    parts = stripped.upper().split()
    if len(parts) not in (5, 6):
        raise Invalid(
            field,
            f"cron expression {stripped!r} has {len(parts)} fields: write 5 "
            "(minute hour day-of-month month day-of-week), or 6 with seconds first",
        )
    return " ".join(parts)


def _value_problem(spec: _Spec, value: str, whole: str, alone: bool) -> str | None:
    if value in spec.names:
        return None
    if not value.isdigit():
        if spec.names:
            first, last = spec.names[0], spec.names[-1]
            hint = f"use a number {spec.low}-{spec.high} or a name {first}-{last}"
        else:
            hint = f"use a number {spec.low}-{spec.high}"
        if alone:
            return f"{spec.name} field {whole!r} is not a number or a range: {hint}"
        return f"{spec.name} field {whole!r} has {value!r}, which is not a number: {hint}"
    if not spec.low <= int(value) <= spec.high:
        if alone:
            return f"{spec.name} field {whole!r} is out of range {spec.low}-{spec.high}"
        return f"{spec.name} field {whole!r} has {int(value)}, which is out of range {spec.low}-{spec.high}"
    return None


def _term_problem(spec: _Spec, term: str, whole: str) -> str | None:
    """What is wrong with one comma-separated term (None if nothing), checked in cronsim's order."""
    alone = term == whole
    if term == "*":
        return None
    if spec.field == Field.DOW and "L" in term:
        if not term.endswith("L") or not term[:-1].isdigit():
            return (
                f"{spec.name} field {whole!r} is not valid: write nL for the last weekday n of the month, "
                "e.g. 5L for the last Friday"
            )
        return _value_problem(spec, term[:-1], whole, alone=False)
    if spec.field == Field.DOW and "#" in term:
        day, nth = term.split("#", 1)
        if not nth.isdigit() or not 1 <= int(nth) <= 5:
            return (
                f"{spec.name} field {whole!r} is not valid: write day#n with n from 1 to 5, "
                "e.g. 5#3 for the third Friday"
            )
        return _value_problem(spec, day, whole, alone=False)
    if "/" in term:
        base, step = term.split("/", 1)
        if not step.isdigit():
            return f"{spec.name} field {whole!r} has the step {step!r}, which is not a number"
        if int(step) == 0:
            return f"{spec.name} field {whole!r} has a step of 0: use a step of 1 or more"
        if int(step) > spec.max_step:
            return (
                f"{spec.name} field {whole!r} has a step of {int(step)}, larger than the field's range "
                f"{spec.low}-{spec.high}: use a step from 1 to {spec.max_step}"
            )
        if spec.field == Field.DAY and base in ("L", "LW"):
            return None
        return _term_problem(spec, base, whole)
    if "-" in term:
        start, end = term.split("-", 1)
        problem = _value_problem(spec, start, whole, alone=False) or _value_problem(
            spec, end, whole, alone=False
        )
        if problem is not None:
            return problem
        if _index(spec, end) < _index(spec, start):
            # Sunday is 0 to cronsim, so "MON-SUN" runs backwards; 7 is Sunday too, and ends a week.
            hint = (
                ", e.g. 1-7 for Monday to Sunday" if spec.field == Field.DOW and end in ("0", "SUN") else ""
            )
            backward = f"{spec.name} field {whole!r} has the backward range {term!r}"
            return f"{backward}: write the smaller end first{hint}"
        return None
    if spec.field == Field.DAY and term in ("L", "LW"):
        return None
    return _value_problem(spec, term, whole, alone)


def _index(spec: _Spec, value: str) -> int:
    return spec.names.index(value) + spec.name_base if value in spec.names else int(value)


def _field_problem(spec: _Spec, text: str) -> str | None:
    for term in text.split(","):
        if not term:
            return f"{spec.name} field {text!r} has an empty list item: remove the extra comma"
        problem = _term_problem(spec, term, text)
        if problem is not None:
            return problem
    return None


def _impossible_day(text: str, parts: list[str]) -> str | None:
    """cronsim's own check for "30 2"-like expressions, worded for a person."""
    day_part, month_part, dow_part = parts[-3:]
    if not (day_part.startswith("*") or dow_part.startswith("*")):
        # Day-of-month OR day-of-week: the weekday alone can make it fire.
        return None
    days = {d for d in Field.DAY.parse(day_part) if isinstance(d, int) and d > 0}
    months = sorted(m for m in Field.MONTH.parse(month_part) if isinstance(m, int))
    if len(days) != len(Field.DAY.parse(day_part)) or not days:
        return None
    first = min(days)
    if any(first <= _DAYS_IN_MONTH[m - 1] for m in months):
        return None
    names = [_MONTH_NAMES[m - 1] for m in months]
    verb = "has" if len(names) == 1 else "have"
    return (
        f"cron expression {text!r} can never fire: {_join(names)} {verb} no {_ordinal(first)} "
        "(L means the last day of the month)"
    )


@lru_cache(maxsize=512)
def _problem(text: str) -> str | None:
    """Why the normalized `text` is refused, or None. Cached: parse and the constructor both ask."""
    parts = text.split()
    for spec_field, part in zip(_FIVE if len(parts) == 5 else _SIX, parts, strict=True):
        problem = _field_problem(_SPECS[spec_field], part)
        if problem is not None:
            return problem
    try:
        impossible = _impossible_day(text, parts)
        if impossible is not None:
            return impossible
        sim = CronSim(text, _REFERENCE)
    except Exception:
        # cronsim is a third-party parser reading untrusted text: whatever it raises means "cannot read this".
        return f"cron expression {text!r} is not valid: check each field against 'man 5 crontab'"
    try:
        next(sim)
    except StopIteration:
        return (
            f"cron expression {text!r} can never fire: no date matches its day-of-month, month and "
            "day-of-week fields together"
        )
    except Exception:
        return f"cron expression {text!r} is not valid: check each field against 'man 5 crontab'"
    return None


@lru_cache(maxsize=4096)
def _stored_problem(text: str) -> str | None:
    """Why a stored text is not an expression as `parse` writes it (normalized and valid), or None."""
    try:
        normalized = _normalize(text, "cron")
    except Invalid as refusal:
        return refusal.message
    if normalized != text:
        # The walks read the text as stored, and cronsim reads no macros: only the written form is safe.
        return f"cron expression {text!r} is not in the form cronwright stores ({normalized!r})"
    return _problem(text)


# -- the zone's offset changes ----------------------------------------------------------------------


def _is_fixed_time(text: str) -> bool:
    """cronsim's (and cronie's) test for the DST fix-up: 5 fields, minute and hour not starting with '*'."""
    parts = text.split()
    return len(parts) == 5 and not parts[0].startswith("*") and not parts[1].startswith("*")
