"""ISO-8601 instants in and out.

Out: every instant cronwright prints carries its offset and stops at the second (semantic 17).
In: an instant without an offset is wall time in a named zone; a wall time the zone skipped means the first
instant after the gap, and one it repeated means the first copy, so that every wall time names one instant.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from cronwright.errors import Invalid

MAX_TEXT = 64
_DATE_ONLY = re.compile(r"[0-9W-]+")
_SECOND = timedelta(seconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def as_utc(instant: datetime) -> datetime:
    """`instant` in UTC. A naive datetime is a programming error (ValueError): its instant is unknown."""
    return _aware(instant).astimezone(UTC)


def _aware(instant: datetime, zone: ZoneInfo | None = None) -> datetime:
    """`instant`, ready for `astimezone(zone)`; ValueError if it is naive."""
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"naive datetime {instant.isoformat()} has no offset; pass an aware datetime")
    # astimezone leaves a datetime already in `zone` as it is, a wall time the zone skipped included:
    # through UTC it becomes the instant it names.
    return instant.astimezone(UTC) if instant.tzinfo is zone else instant


def render(instant: datetime, zone: ZoneInfo) -> str:
    """`instant` as wall time in `zone` with its offset, to the second: "2026-03-29T03:00:00+02:00"."""
    # Truncated, not rounded (isoformat cuts the fraction): a firing at 03:00:00.9 has not happened at
    # 03:00:01. Straight into `zone`, not through UTC first: a page of 50 rows renders 300 of these, and
    # the detour was a third of each (bench/README.md, session 5).
    return _aware(instant, zone).astimezone(zone).isoformat(timespec="seconds")


def render_exact(instant: datetime, zone: ZoneInfo) -> str:
    """`instant` as wall time in `zone` with its offset, to the microsecond where it has a fraction.

    For the envelope's `scheduled_for`, the exact instant an occurrence was due: an action that measures
    its own start lag against a truncated instant would read up to a second too much.
    """
    return _aware(instant, zone).astimezone(zone).isoformat()


def _is_real(wall: datetime, zone: ZoneInfo) -> bool:
    aware = wall.replace(tzinfo=zone, fold=0)
    return aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall


def _gap_end(wall: datetime, zone: ZoneInfo) -> datetime:
    """The first instant after the spring-forward gap that holds the (skipped) wall time `wall`."""
    # Read with the offset after the gap, the wall time lands before the transition; with the offset before
    # it, after. Bisect the whole seconds in between (zones change offset on whole seconds).
    early = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    late = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    after_offset = late.astimezone(zone).utcoffset()
    lo = (early - _EPOCH) // _SECOND
    hi = -((_EPOCH - late) // _SECOND)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (_EPOCH + mid * _SECOND).astimezone(zone).utcoffset() == after_offset:
            hi = mid
        else:
            lo = mid
    return _EPOCH + hi * _SECOND


def wall_to_utc(wall: datetime, zone: ZoneInfo) -> datetime:
    """The instant a naive wall time names in `zone`: after a gap if skipped, the first copy if repeated."""
    if wall.tzinfo is not None:
        raise ValueError("wall_to_utc takes a naive wall time")
    if _is_real(wall, zone):
        return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    return _gap_end(wall, zone)


def parse_instant(text: object, default_zone: ZoneInfo, field: str = "at") -> datetime:
    """Read an ISO-8601 instant ("...+02:00", "...Z", or offset-less wall time in `default_zone`), in UTC."""
    example = "e.g. 2026-03-29T03:00:00+02:00, 2026-03-29T01:00:00Z, or 2026-03-29T03:00"
    if not isinstance(text, str):
        raise Invalid(field, f"{field} must be an ISO-8601 string ({example}), not {type(text).__name__}")
    if not text.strip():
        raise Invalid(field, f"{field} is empty: give an ISO-8601 instant, {example}")
    if len(text) > MAX_TEXT:
        raise Invalid(
            field, f"{field} is longer than {MAX_TEXT} characters: give an ISO-8601 instant, {example}"
        )
    stripped = text.strip()
    if _DATE_ONLY.fullmatch(stripped):
        raise Invalid(
            field,
            f"{field} {text!r} is a date without a time of day: add one, e.g. {stripped}T00:00:00",
        )
    try:
        parsed = datetime.fromisoformat(stripped)
    except ValueError:
        raise Invalid(field, f"{field} {text!r} is not an ISO-8601 instant: write it {example}") from None
    try:
        if parsed.tzinfo is None:
            return wall_to_utc(parsed, default_zone)
        return as_utc(parsed)
    except (OverflowError, ValueError):
        raise Invalid(
            field, f"{field} {text!r} is out of range: give an instant between the years 2 and 9998"
        ) from None
