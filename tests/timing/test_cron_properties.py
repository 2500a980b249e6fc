"""Properties of the forward walk over random numeric expressions, zones and instants, DST changes included.

For each example: the firings are strictly increasing, all after `after`, each one's wall time in the zone
matches the expression (unless cronie's fix-up moved it out of a gap), each renders with the zone's offset at
that instant, and, within a day, none is missing compared with a minute-by-minute reading of the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cronwright.errors import Invalid
from cronwright.timing.cron import CronExpression
from cronwright.timing.iso import render, wall_to_utc

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "America/Santiago",
    "America/Havana",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Antarctica/Troll",
    "Asia/Kolkata",
]
MINUTE = timedelta(minutes=1)
WINDOW = timedelta(days=1)
DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]  # February 29 exists, in leap years


def _changes(zone: ZoneInfo) -> list[datetime]:
    """Each offset change of 2026-2027, to the hour: where the interesting `after`s are."""
    found = []
    here = datetime(2026, 1, 1, tzinfo=UTC)
    before = here.astimezone(zone).utcoffset()
    while here.year < 2028:
        here += timedelta(hours=1)
        offset = here.astimezone(zone).utcoffset()
        if offset != before:
            found.append(here)
        before = offset
    return found or [datetime(2026, 6, 1, tzinfo=UTC)]


CHANGES = {name: _changes(ZoneInfo(name)) for name in ZONES}


@st.composite
def fields(draw: st.DrawFn, low: int, high: int, star: float) -> str:
    if draw(st.floats(0, 1)) < star:
        return "*"
    kind = draw(st.sampled_from(["value", "range", "step", "range-step", "list"]))
    if kind == "value":
        return str(draw(st.integers(low, high)))
    if kind == "step":
        return f"*/{draw(st.integers(1, high - low + 1))}"
    if kind == "list":
        values = draw(st.lists(st.integers(low, high), min_size=2, max_size=4, unique=True))
        return ",".join(str(value) for value in sorted(values))
    start = draw(st.integers(low, high - 1))
    end = draw(st.integers(start + 1, high))
    # (cronsim reads "a-a/n" as "a-max/n", so ranges here always span two values or more.)
    return f"{start}-{end}" if kind == "range" else f"{start}-{end}/{draw(st.integers(1, 5))}"


@st.composite
def expressions(draw: st.DrawFn) -> str:
    return " ".join(
        [
            draw(fields(0, 59, 0.2)),
            draw(fields(0, 23, 0.4)),
            draw(fields(1, 31, 0.7)),
            draw(fields(1, 12, 0.8)),
            draw(fields(0, 7, 0.7)),
        ]
    )


def _values(text: str, low: int, high: int) -> set[int]:
    found: set[int] = set()
    for term in text.split(","):
        base, _, step = term.partition("/")
        if base == "*":
            start, end = low, high
        elif "-" in base:
            start, end = (int(part) for part in base.split("-"))
        else:
            start = int(base)
            end = high if step else start
        found.update(range(start, end + 1, int(step or 1)))
    return found


def matcher(expression: str) -> Callable[[datetime], bool]:
    """The rules of cron, read plainly: the reference the walk is checked against."""
    minute, hour, day, month, weekday = expression.split()
    minutes, hours, months = _values(minute, 0, 59), _values(hour, 0, 23), _values(month, 1, 12)
    days = _values(day, 1, 31)
    weekdays = {value % 7 for value in _values(weekday, 0, 7)}
    # cronie: day-of-month AND day-of-week if either starts with '*', else OR.
    both = day.startswith("*") or weekday.startswith("*")

    def matches(wall: datetime) -> bool:
        if wall.minute not in minutes or wall.hour not in hours or wall.month not in months:
            return False
        day_ok = wall.day in days
        weekday_ok = wall.isoweekday() % 7 in weekdays
        return (day_ok and weekday_ok) if both else (day_ok or weekday_ok)

    return matches


def expected_firings(expression: str, zone: ZoneInfo, after: datetime, until: datetime) -> list[datetime]:
    minute, hour = expression.split()[:2]
    matches = matcher(expression)
    found: set[datetime] = set()
    if minute.startswith("*") or hour.startswith("*"):
        # Real time: every instant whose wall time matches, both copies of a repeated hour, none in a gap.
        instant = after.replace(second=0, microsecond=0) + MINUTE
        while instant <= until:
            if matches(instant.astimezone(zone).replace(tzinfo=None)):
                found.add(instant)
            instant += MINUTE
    else:
        # Fixed time (cronie's fix-up): every matching wall time, its first copy, or the end of its gap.
        wall = (after.astimezone(zone).replace(tzinfo=None) - timedelta(hours=3)).replace(
            second=0, microsecond=0
        )
        last_wall = until.astimezone(zone).replace(tzinfo=None) + timedelta(hours=3)
        while wall <= last_wall:
            if matches(wall) and after < (instant := wall_to_utc(wall, zone)) <= until:
                found.add(instant)
            wall += MINUTE
    return sorted(found)


def _offset_text(instant: datetime, zone: ZoneInfo) -> str:
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def expected_refusal(expression: str) -> str | None:
    """What `parse` must refuse a drawn expression for (a pattern of its message), or None if it must parse.

    Two kinds drawn here are not valid cron: a day-of-week step of 8 (past the field's range 0-7), and
    dates that never exist (the 30th of February) where day-of-month and day-of-week must both match.
    """
    _, _, day, month, weekday = expression.split()
    if weekday == "*/8":
        return "day-of-week field '\\*/8' has a step of 8"
    both = day.startswith("*") or weekday.startswith("*")  # cronie: AND, else OR (a weekday fires)
    months, days = _values(month, 1, 12), _values(day, 1, 31)
    if both and not any(d <= DAYS_IN_MONTH[m - 1] for m in months for d in days):
        return "can never fire"
    return None


@settings(max_examples=200, deadline=None)
# The refused kinds are rare among random draws: these examples make sure each is checked every run.
@example(expression="0 0 30 2 *", zone_name="UTC", change_index=0, shift=0)
@example(expression="0 0 31 4,6 *", zone_name="UTC", change_index=0, shift=0)
@example(expression="0 0 30 2 */2", zone_name="UTC", change_index=0, shift=0)
@example(expression="0 0 30 2 1", zone_name="Europe/Berlin", change_index=0, shift=0)
@example(expression="15 3 * * */8", zone_name="UTC", change_index=0, shift=0)
@given(
    expression=expressions(),
    zone_name=st.sampled_from(ZONES),
    change_index=st.integers(0, 7),
    shift=st.integers(-2 * 86_400_000_000, 86_400_000_000),
)
def test_firings_are_increasing_matching_rendered_with_their_offset_and_complete(
    expression: str, zone_name: str, change_index: int, shift: int
) -> None:
    refusal = expected_refusal(expression)
    if refusal is not None:
        with pytest.raises(Invalid, match=refusal):
            CronExpression.parse(expression)
        return
    cron = CronExpression.parse(expression)  # anything else drawn here is valid cron, and must parse
    zone = ZoneInfo(zone_name)
    changes = CHANGES[zone_name]
    after = changes[change_index % len(changes)] + timedelta(microseconds=shift)
    until = after + WINDOW

    got: list[datetime] = []
    for fired in cron.iter_after(after, zone):
        if fired > until and len(got) >= 3:
            break
        got.append(fired)

    matches = matcher(expression)
    previous = after
    for fired in got:
        assert fired > previous
        previous = fired
        wall = fired.astimezone(zone)
        moved_out_of_a_gap = (fired - timedelta(microseconds=1)).astimezone(
            zone
        ).utcoffset() != wall.utcoffset()
        assert matches(wall.replace(tzinfo=None)) or moved_out_of_a_gap
        text = render(fired, zone)
        assert text.endswith(_offset_text(fired, zone))
        assert datetime.fromisoformat(text) == fired

    assert [fired for fired in got if fired <= until] == expected_firings(expression, zone, after, until)
