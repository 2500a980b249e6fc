"""The grid rule for `every` schedules (semantic 3).

An `every` schedule lives on the grid due + k·period. After downtime it neither replays the missed points
nor re-phases to the moment it woke: the next occurrence is the first grid point strictly after now. All
arithmetic is in integer microseconds of UTC, so a grid never drifts, however long it runs, and wall-clock
changes (DST) do not bend it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from cronwright.timing.iso import as_utc

_MICRO = timedelta(microseconds=1)


def _steps(due: datetime, period: timedelta, now: datetime) -> tuple[datetime, int, int]:
    """(due in UTC, period in µs, µs from due to now): the three integers every rule below needs."""
    period_us = period // _MICRO
    if period_us <= 0:
        raise ValueError(f"period must be positive, not {period}")
    start = as_utc(due)
    return start, period_us, (as_utc(now) - start) // _MICRO


def next_on_grid(due: datetime, period: timedelta, now: datetime) -> datetime:
    """The smallest due + k·period (k ≥ 1) strictly greater than `now`, in UTC."""
    start, period_us, elapsed = _steps(due, period, now)
    k = 1 if elapsed < 0 else elapsed // period_us + 1
    return start + k * period_us * _MICRO


def latest_on_grid(due: datetime, period: timedelta, now: datetime) -> datetime | None:
    """The largest due + k·period (k ≥ 0) at or before `now`, in UTC; None if `due` is still ahead."""
    start, period_us, elapsed = _steps(due, period, now)
    if elapsed < 0:
        return None
    return start + (elapsed // period_us) * period_us * _MICRO


def count_on_grid(due: datetime, period: timedelta, now: datetime) -> int:
    """How many grid points lie in [due, now]."""
    _, period_us, elapsed = _steps(due, period, now)
    return 0 if elapsed < 0 else elapsed // period_us + 1
