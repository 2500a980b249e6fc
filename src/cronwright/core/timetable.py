"""A recurring schedule's timetable: its nominal instants, and when each one fires, jitter included.

Pure. A nominal instant is the timetable's own (09:00 for `0 9 * * *`); the instant it fires at adds the
schedule's jitter (semantic 32), an offset fixed by the job's id and that nominal instant and capped below
the gap to the next nominal instant, so jitter never reorders two occurrences nor merges them.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from cronwright.core.model import CronSchedule, EverySchedule, Schedule
from cronwright.timing import jitter as jitter_math
from cronwright.timing.iso import as_utc
from cronwright.timing.zones import zone

_MICRO = timedelta(microseconds=1)


def jitter_of(schedule: Schedule) -> timedelta | None:
    return schedule.jitter if isinstance(schedule, CronSchedule | EverySchedule) else None


def following(schedule: Schedule, nominal: datetime) -> datetime | None:
    """The nominal instant that comes next after `nominal` (None when there is none, or for `at`)."""
    if isinstance(schedule, CronSchedule):
        return schedule.expression.next_after(nominal, zone(schedule.tz))
    if isinstance(schedule, EverySchedule):
        return as_utc(nominal) + schedule.period
    return None


def previous(schedule: Schedule, nominal: datetime, floor: datetime) -> datetime:
    """The nominal instant before `nominal`, not before `floor` (itself a nominal instant before it)."""
    if isinstance(schedule, CronSchedule):
        found = schedule.expression.latest_at_or_before(nominal - _MICRO, floor, zone(schedule.tz))
        return floor if found is None else found
    if isinstance(schedule, EverySchedule):
        return max(as_utc(nominal) - schedule.period, as_utc(floor))
    return floor


def fires_at(job_id: int, schedule: Schedule, nominal: datetime) -> datetime:
    """When the occurrence of nominal instant `nominal` is due: the same on every node and restart."""
    spread = jitter_of(schedule)
    if spread is None:
        return nominal
    return jitter_math.jittered(job_id, nominal, spread, following(schedule, nominal))
