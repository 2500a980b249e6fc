"""When a schedule's life ends (semantic 5).

A lifetime is a duration read from now ("30d", "PT12H") or an end instant (an offset-less one is wall time in
the node zone). Either way it resolves to one UTC instant, which must lie after now and within the ceiling.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from cronwright.errors import Invalid, LifetimeTooLong
from cronwright.timing.durations import format_duration, parse_duration
from cronwright.timing.iso import as_utc, parse_instant, render

# A duration starts with "P" (ISO-8601) or is digits and unit letters; an instant starts with a year.
_LOOKS_LIKE_DURATION = re.compile(r"\s*(P|-?[0-9]+[a-z]+([0-9]+[a-z]+)*\s*$)")
_LOOKS_LIKE_INSTANT = re.compile(r"\s*[0-9]{4}")
_MAX_TEXT = 64


def resolve_end(
    spec: object, now: datetime, zone: ZoneInfo, ceiling: timedelta, field: str = "lifetime"
) -> datetime:
    """The end instant (UTC) that `spec` asks for, refused if it is past or beyond now + `ceiling`."""
    start = as_utc(now)
    if not isinstance(spec, str):
        raise Invalid(
            field,
            f"{field} must be a string: a duration such as '30d' or 'P30D', or an end instant such as "
            f"'2026-06-30T00:00:00+02:00', not {type(spec).__name__}",
        )
    forms = "a duration such as '30d', '12h' or 'P30D', or an end instant such as '2026-06-30T00:00:00+02:00'"
    if not spec.strip():
        raise Invalid(field, f"{field} is empty: give {forms}")
    if len(spec) > _MAX_TEXT:
        raise Invalid(field, f"{field} is longer than {_MAX_TEXT} characters: give {forms}")
    if _LOOKS_LIKE_DURATION.match(spec):
        end = start + parse_duration(spec, field)
    elif _LOOKS_LIKE_INSTANT.match(spec):
        end = parse_instant(spec, zone, field)
    else:
        raise Invalid(field, f"{field} {spec!r} is neither a duration nor an instant: give {forms}")
    if end <= start:
        raise Invalid(
            field,
            f"{field} {spec!r} ends in the past ({render(end, zone)}, now is {render(start, zone)}): "
            "give a later end or a duration such as '30d'",
        )
    if end > start + ceiling:
        limit = format_duration(ceiling)
        raise LifetimeTooLong(
            f"{field} {spec!r} ends at {render(end, zone)}, beyond the ceiling of {limit} from now "
            f"({render(start + ceiling, zone)}): ask for at most {limit}",
        )
    return end
