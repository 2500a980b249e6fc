"""Cron walks forward: the firings of an expression after an instant, in a zone, as UTC instants.

A fixed-time expression is walked by cronsim on the wall clock, with cronie's DST fix-up; any other follows
real time, walked piece by piece between the zone's offset changes (see cron.py for why).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from cronsim import CronSim

from cronwright.timing.cron_parse import _is_fixed_time
from cronwright.timing.iso import as_utc

# The furthest any walk looks past its start. No schedule lives longer (durations stop at 100 years), and it
# bounds the work of a walk over rare expressions ("0 0 29 2 */7" fires about once in 28 years).
HORIZON = timedelta(days=36525)
_MICRO = timedelta(microseconds=1)
_SECOND = timedelta(seconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Firings a walk may drop because they lie at or before its start: this happens only when the start is in
# the second copy of a repeated hour and cronsim reports first-copy wall times. At most one per minute of a
# repeated hour or two; the bound is there so that no surprise can make a walk run away.
_MAX_SKIPPED = 10_000

_WEEK = timedelta(days=7)
# More than any two offsets of one zone have ever differed (Apia and Kiritimati crossed the date line: 24 h
# and 24 h 40 min). It bounds how far a wall time can move between two pieces of a walk.
_WIDEST = timedelta(hours=26)


def _offset(instant: datetime, zone: ZoneInfo) -> timedelta:
    return instant.astimezone(zone).utcoffset() or timedelta(0)


@lru_cache(maxsize=4096)
def _changes(zone: ZoneInfo, year: int) -> tuple[datetime, ...]:
    """The instants in UTC year `year` at which `zone` changes offset (the first second of the new one)."""
    if not 1 < year < 9999:
        return ()
    # zoneinfo does not publish its transitions, so sample the offset weekly and bisect each change to the
    # second. A change undone within the same week would go unseen; no zone has had one in living memory.
    here = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC)
    before = _offset(here, zone)
    found: list[datetime] = []
    while here < end:
        step = min(here + _WEEK, end)
        after = _offset(step, zone)
        if after != before:
            low, high = here, step
            while high - low > _SECOND:
                mid = low + ((high - low) // _SECOND // 2) * _SECOND
                if _offset(mid, zone) == before:
                    low = mid
                else:
                    high = mid
            found.append(high)
        here, before = step, after
    return tuple(found)


def _next_change(zone: ZoneInfo, after: datetime, until: datetime) -> datetime | None:
    """The first offset change in (after, until]."""
    for year in range(after.year, until.year + 1):
        changes = _changes(zone, year)
        at = bisect_right(changes, after)
        if at < len(changes):
            return changes[at] if changes[at] <= until else None
    return None


def _last_change(zone: ZoneInfo, since: datetime, at_or_before: datetime) -> datetime | None:
    """The last offset change in (since, at_or_before]."""
    for year in range(at_or_before.year, since.year - 1, -1):
        changes = _changes(zone, year)
        at = bisect_right(changes, at_or_before)
        if at > 0:
            return changes[at - 1] if changes[at - 1] > since else None
    return None


def _whole_second_after(instant: datetime) -> datetime:
    return instant.replace(microsecond=0) + _SECOND


def _walls(sim: CronSim) -> Iterator[datetime]:
    """cronsim's walk, ending quietly where cronsim gives out (50 years) or the calendar does (year 9999)."""
    while True:
        try:
            wall = next(sim)
        except (StopIteration, OverflowError):
            return
        yield wall


def iter_after(text: str, after: datetime, zone: ZoneInfo) -> Iterator[datetime]:
    """The firings strictly after `after`, read in `zone`, as strictly increasing UTC instants.

    Ends when the expression has no firing in 50 years, past `HORIZON`, or at the end of the calendar.
    """
    start = as_utc(after)
    try:
        limit = start + HORIZON
    except OverflowError:
        limit = datetime.max.replace(tzinfo=UTC)
    walk = _fixed_time_walk if _is_fixed_time(text) else _real_time_walk
    for fired in walk(text, start, zone):
        if fired > limit:
            return
        yield fired


def _fixed_time_walk(text: str, start: datetime, zone: ZoneInfo) -> Iterator[datetime]:
    # cronsim walks the wall clock here and applies cronie's fix-up itself: a wall time in a gap becomes
    # the first minute after it, and a repeated one its first copy.
    try:
        sim = CronSim(text, start.astimezone(zone))
    except OverflowError:
        return
    last = start
    skipped = 0
    while True:
        try:
            fired = next(sim).astimezone(UTC)
        except (StopIteration, OverflowError):
            return
        if fired <= last:
            # A first-copy wall time reached from a start in the second copy of a repeated hour: it fired
            # before `after` (see _MAX_SKIPPED).
            skipped += 1
            if skipped > _MAX_SKIPPED:
                return
            continue
        skipped = 0
        last = fired
        yield fired


def _real_time_walk(text: str, start: datetime, zone: ZoneInfo) -> Iterator[datetime]:
    """Every instant after `start` whose wall time in `zone` matches: both copies of a repeated hour, and
    nothing for wall times a gap skipped.

    cronsim can walk a zone itself, but it jumps up to an hour of real time at once and then re-reads
    the wall clock, which lands on the wrong minute across a change that is not a whole hour or not on
    the hour (Lord Howe's 30 minutes, Chatham's 02:45): it skips firings, or circles. So the walk is cut
    at each offset change, and each piece is walked on a naive wall clock at that piece's fixed offset,
    where cronsim's calendar arithmetic is exact.
    """
    since = _whole_second_after(start)  # firings fall on whole seconds
    while True:
        try:
            offset = _offset(since, zone)
            sim = CronSim(text, (since + offset).replace(tzinfo=None) - _SECOND)
        except OverflowError:
            return
        checked = since  # no offset change in (since, checked]
        for wall in _walls(sim):
            try:
                fired = (wall - offset).replace(tzinfo=UTC)
            except OverflowError:
                return
            change = _next_change(zone, checked, fired) if fired > checked else None
            if change is not None:
                break
            checked = fired
            yield fired
            since = fired + _SECOND
        else:
            return  # the naive walk gave out: no wall time matches within 50 years
        # Nothing fires in [since, change). Any firing in a later piece lies before since + _WIDEST or
        # at or after fired - _WIDEST: read at this piece's offset, its wall time would have been found.
        since = change if change < since + _WIDEST else max(change, fired - _WIDEST)


def next_after(text: str, after: datetime, zone: ZoneInfo) -> datetime | None:
    """The first firing strictly after `after`, in UTC; None if there is none within the walk's reach."""
    return next(iter_after(text, after, zone), None)
