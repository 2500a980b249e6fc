"""Backfill planning (semantic 35): which occurrences of a range never started, oldest first, at most 1,000.

Pure: the caller hands in the schedule's nominal walk, what already started or waits in the queue, what a
calendar excludes, and `now`. An occurrence is named by its nominal instant (before jitter), so a repeated
backfill, from this node or another, finds the same names and plans nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronwright.errors import Invalid
from cronwright.timing.every import next_on_grid
from cronwright.timing.iso import as_utc

MAX_BACKFILL = 1000
# The most occurrences one call walks through (done ones included), so that a range of years of a
# minutely schedule costs a bounded time; the reply's `more` says to call again.
MAX_WALK = 100_000
_MICRO = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Plan:
    """The occurrences to run, oldest first; `more` when the range held further ones past the limit."""

    occurrences: tuple[datetime, ...]
    more: bool = False
    # Where the planning stopped: every occurrence before it was planned, done or excluded, so the range
    # up to it is covered (a later backfill of it plans nothing again). None: the whole range was.
    until: datetime | None = None


def check_range(start: datetime, end: datetime, now: datetime) -> None:
    """Refuse a range that is empty or starts in the future: nothing in it can have been missed."""
    if as_utc(end) <= as_utc(start):
        raise Invalid("to", "to must be after from: the range is [from, to)")
    if as_utc(start) >= as_utc(now):
        raise Invalid("from", "from is in the future: backfill runs occurrences that were due already")


def plan(
    walk: Iterable[datetime],
    end: datetime,
    now: datetime,
    done: Container[datetime],
    excluded: Callable[[datetime], bool] = lambda _: False,
    limit: int = MAX_BACKFILL,
) -> Plan:
    """The nominal instants of `walk` before `end` (and at or before `now`) that are not `done`.

    `walk` is the schedule's nominal timetable from the range's start, in increasing order; `done` holds the
    nominal instants that already started or are queued; `excluded` says which a calendar takes out (they
    never fire, so they are never backfilled either). At most `limit` are planned.
    """
    stop = min(as_utc(end), as_utc(now) + _MICRO)
    found: list[datetime] = []
    walked = 0
    for nominal in walk:
        if nominal >= stop:
            return Plan(tuple(found))
        walked += 1
        if walked > MAX_WALK:
            # A range of many occurrences already done: stop looking, and say where, so a later call
            # goes on from there.
            return Plan(tuple(found), more=True, until=nominal)
        if nominal in done or excluded(nominal):
            continue
        if len(found) == limit:
            return Plan(tuple(found), more=True, until=nominal)
        found.append(nominal)
    return Plan(tuple(found))


def covered(ranges: Iterable[tuple[datetime, datetime]], instant: datetime) -> bool:
    """Whether `instant` lies in one of the half-open `ranges`."""
    return any(start <= instant < end for start, end in ranges)


def cover(
    ranges: Iterable[tuple[datetime, datetime]], start: datetime, end: datetime
) -> tuple[tuple[datetime, datetime], ...]:
    """`ranges` with [start, end) added, overlapping and touching ones merged, in order."""
    merged: list[tuple[datetime, datetime]] = []
    for low, high in sorted([*ranges, (as_utc(start), as_utc(end))]):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return tuple(merged)


def grid_from(anchor: datetime, period: timedelta, start: datetime) -> Iterable[datetime]:
    """An `every` schedule's grid points (anchor + k·period, any whole k) at or after `start`, endless."""
    point = next_on_grid(anchor, period, as_utc(start) - _MICRO)
    # next_on_grid looks forward from the anchor; a start before it is walked back onto the same grid.
    if as_utc(start) <= as_utc(anchor):
        steps = (as_utc(anchor) - as_utc(start)) // period  # the most whole periods back, staying >= start
        point = as_utc(anchor) - steps * period
    while True:
        yield point
        point += period
