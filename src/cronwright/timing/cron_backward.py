"""Cron walks backward: the latest firing in a span, which agrees with the forward walk (the definition of
a firing): the one missed run worth catching up."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from cronsim import CronSim

from cronwright.timing.cron_forward import (
    _EPOCH,
    _MICRO,
    _SECOND,
    _WIDEST,
    _last_change,
    _offset,
    _whole_second_after,
    next_after,
)
from cronwright.timing.cron_parse import _is_fixed_time
from cronwright.timing.iso import as_utc


def latest_at_or_before(
    text: str, instant: datetime, not_before: datetime, zone: ZoneInfo
) -> datetime | None:
    """The latest firing in [not_before, instant], in UTC, or None: the one missed run worth catching up.

    It agrees with the forward walk: it is the last firing `iter_after` would give in that span.
    """
    end = as_utc(instant)
    start = as_utc(not_before)
    if start > end:
        return None
    if _is_fixed_time(text):
        return _fixed_time_latest(text, end, start, zone)
    return _real_time_latest(text, end, start, zone)


def _real_time_latest(text: str, end: datetime, start: datetime, zone: ZoneInfo) -> datetime | None:
    # The forward real-time walk run backwards: pieces of fixed offset, walked on a naive wall clock.
    until = end.replace(microsecond=0)
    while until >= start:
        try:
            offset = _offset(until, zone)
            # cronsim steps back one second before looking, so start one second late to include `until`.
            sim = CronSim(text, (until + offset).replace(tzinfo=None) + _SECOND, reverse=True)
            fired = (next(sim) - offset).replace(tzinfo=UTC)
        except (StopIteration, OverflowError):
            return None
        change = _last_change(zone, fired, until)
        if change is None:
            return fired if fired >= start else None
        # Nothing fires in [change, until]. Any firing in an earlier piece lies after until - _WIDEST or
        # at or before fired + _WIDEST (the mirror of the forward walk's reasoning).
        before_change = change - _SECOND
        until = before_change if change > until - _WIDEST else min(before_change, fired + _WIDEST)
    return None


def _first_at_or_after(text: str, instant: datetime, zone: ZoneInfo) -> datetime | None:
    return next_after(text, instant - _MICRO, zone)


def _fixed_time_latest(text: str, end: datetime, start: datetime, zone: ZoneInfo) -> datetime | None:
    # cronsim's reverse walk proposes, and the forward walk (the definition of a firing) confirms. Where
    # they disagree, in a repeated hour, an exact search over the forward walk decides.
    candidate = _reverse_candidate(text, end, zone)
    if candidate is not None and start <= candidate <= end:
        if _first_at_or_after(text, candidate, zone) == candidate:
            following = next_after(text, candidate, zone)
            if following is None or following > end:
                return candidate
    else:
        first = _first_at_or_after(text, start, zone)
        if first is None or first > end:
            return None
    return _latest_by_search(text, end, start, zone)


def _reverse_candidate(text: str, end: datetime, zone: ZoneInfo) -> datetime | None:
    # Firings fall on whole seconds: starting one second past `end` (rounded down) lets `end` count.
    try:
        since = _whole_second_after(end).astimezone(zone)
        return next(CronSim(text, since, reverse=True)).astimezone(UTC)
    except (StopIteration, OverflowError):
        return None


def _latest_by_search(text: str, end: datetime, start: datetime, zone: ZoneInfo) -> datetime | None:
    """The latest forward firing in [start, end], found with O(log(end - start)) forward walks."""

    def some_in(since: datetime) -> bool:
        found = _first_at_or_after(text, since, zone)
        return found is not None and found <= end

    if not some_in(start):
        return None
    # Widen a window back from `end` until it holds a firing, then narrow its left edge to the last second
    # that still has one after it. Firings fall on whole seconds, so that second is the latest firing.
    width = _SECOND
    while not some_in(max(end - width, start)):
        width *= 2
    low = max(end - width, start)
    low_s = -((_EPOCH - low) // _SECOND)  # round up: firings are on whole seconds
    high_s = (end - _EPOCH) // _SECOND + 1  # nothing lies in [high, end]
    while high_s - low_s > 1:
        mid = (low_s + high_s) // 2
        if some_in(_EPOCH + mid * _SECOND):
            low_s = mid
        else:
            high_s = mid
    return _first_at_or_after(text, max(_EPOCH + low_s * _SECOND, start), zone)
