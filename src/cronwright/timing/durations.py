"""Durations as people and ISO-8601 write them: "90s", "1h30m", "P30D", "PT12H".

Everything is counted in whole microseconds, so a duration read and written back is exactly the same value.
"""

from __future__ import annotations

import re
from datetime import timedelta

from cronwright.errors import Invalid

MAX_TEXT = 64
# No schedule lives longer, and the bound keeps every later sum far from datetime's year 9999.
MAX_DURATION = timedelta(days=36525)

_US = 1
_MS = 1000 * _US
_S = 1000 * _MS
_M = 60 * _S
_H = 60 * _M
_D = 24 * _H
_W = 7 * _D

# Largest first: a compound must list its units in this order, each at most once ("1h30m", not "30m1h").
_UNITS: dict[str, int] = {"w": _W, "d": _D, "h": _H, "m": _M, "s": _S, "ms": _MS, "us": _US}
_RANK = {unit: rank for rank, unit in enumerate(_UNITS)}
# "ms" and "us" come before "m" and "s" so that the longest unit wins.
_SHORT_PART = re.compile(r"([0-9]+)(ms|us|w|d|h|m|s)")
_SHORT = re.compile(r"(?:[0-9]+(?:ms|us|w|d|h|m|s))+")
_ISO = re.compile(
    r"P(?:(?P<Y>[0-9]+)Y)?(?:(?P<MO>[0-9]+)M)?(?:(?P<W>[0-9]+)W)?(?:(?P<D>[0-9]+)D)?"
    r"(?:T(?:(?P<H>[0-9]+)H)?(?:(?P<MI>[0-9]+)M)?(?:(?P<S>[0-9]+)S)?)?"
)
_EXAMPLES = "such as '90s', '5m', '1h30m', '30d' or ISO-8601 'PT12H', 'P30D'"


def _garbage(field: str, text: str) -> Invalid:
    return Invalid(
        field,
        f"{field} {text!r} is not a duration: use whole numbers with the units ms, s, m, h, d or w, "
        f"{_EXAMPLES}",
    )


def _short_us(field: str, text: str) -> int:
    total = 0
    last_rank = -1
    for number, unit in _SHORT_PART.findall(text):
        if _RANK[unit] <= last_rank:
            raise Invalid(
                field,
                f"{field} {text!r} repeats a unit or lists them out of order: "
                "write the largest unit first, each once, e.g. '1h30m'",
            )
        last_rank = _RANK[unit]
        total += int(number) * _UNITS[unit]
    return total


def _iso_us(field: str, text: str) -> int:
    match = _ISO.fullmatch(text)
    if match is None or text in ("P", "PT") or text.endswith("T"):
        raise _garbage(field, text)
    parts = match.groupdict()
    if parts["Y"] is not None or parts["MO"] is not None:
        raise Invalid(
            field,
            f"{field} {text!r} counts years or months, which have no fixed length: "
            "count days instead, e.g. 'P30D' or 'P365D'",
        )
    scale = {"W": _W, "D": _D, "H": _H, "MI": _M, "S": _S}
    return sum(int(parts[key]) * unit for key, unit in scale.items() if parts[key] is not None)


def parse_duration(text: object, field: str = "duration") -> timedelta:
    """Read a positive duration of at most 100 years, or refuse it with `Invalid` naming `field`."""
    if not isinstance(text, str):
        raise Invalid(field, f"{field} must be a string {_EXAMPLES}, not {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise Invalid(field, f"{field} is longer than {MAX_TEXT} characters: give a duration {_EXAMPLES}")
    stripped = text.strip()
    if not stripped:
        raise Invalid(field, f"{field} is empty: give a duration {_EXAMPLES}")
    if stripped.startswith("-"):
        raise Invalid(field, f"{field} {text!r} is negative: give a positive duration {_EXAMPLES}")
    if _SHORT.fullmatch(stripped):
        micros = _short_us(field, stripped)
    elif stripped.startswith("P"):
        micros = _iso_us(field, stripped)
    else:
        raise _garbage(field, stripped)
    if micros == 0:
        raise Invalid(field, f"{field} {text!r} is zero: give a positive duration {_EXAMPLES}")
    # Compared as integers, before any timedelta exists, so that a huge number cannot overflow.
    if micros > MAX_DURATION // timedelta(microseconds=1):
        raise Invalid(field, f"{field} {text!r} is more than 100 years: give a shorter duration")
    return timedelta(microseconds=micros)


def format_duration(delta: timedelta) -> str:
    """The shortest shorthand for `delta` ("1h30m", "2d3h", "250ms"), which parse_duration reads back exactly.

    Weeks are never used: "14d" reads more plainly than "2w". Zero is "0s"; a negative duration gets a leading
    "-" (parse_duration refuses both, but they can still be shown).
    """
    micros = delta // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    if micros < 0:
        return "-" + format_duration(-delta)
    parts: list[str] = []
    for unit in ("d", "h", "m", "s", "ms", "us"):
        count, micros = divmod(micros, _UNITS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
