"""When a job is next due: arming a new, renewed or rescheduled job, the schedule's next occurrence, and
the occurrences still ahead (what `show` and a dry run list).

It keeps the lifetime (semantic 5: never due at or after `ends_at`), the every grid (semantic 3), jitter
(semantic 32: the armed instant includes it, the nominal one is kept beside it), calendars marked in
what lies ahead (semantic 33), and a stored schedule that cannot be read never coming due (semantic 10).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from cronwright.core.engine.decision import Rules
from cronwright.core.model import (
    AtSchedule,
    CronSchedule,
    EverySchedule,
    Job,
    Schedule,
)
from cronwright.core.timetable import fires_at
from cronwright.errors import Invalid
from cronwright.timing.every import next_on_grid
from cronwright.timing.zones import zone


def upcoming(job: Job, after: datetime) -> datetime | None:
    """The schedule's first occurrence strictly after `after`, ignoring the lifetime.

    None means the schedule has no further occurrence at all (a one-shot, or a cron walk that gave out).
    An `every` schedule stays on the grid anchored at its current nominal instant (`Job.nominal_next`).
    The instant is nominal: `armed_at` adds the jitter.
    """
    schedule = job.schedule
    if schedule_problem(schedule) is not None:
        return None  # a corrupt stored schedule has no next occurrence (and must not be walked)
    if isinstance(schedule, CronSchedule):
        return schedule.expression.next_after(after, zone(schedule.tz))
    if isinstance(schedule, EverySchedule):
        anchor = job.nominal_next or after
        if anchor > after:
            return anchor
        return next_on_grid(anchor, schedule.period, after)
    return None


def schedule_problem(schedule: Schedule) -> str | None:
    """Why a stored schedule cannot be read, or None.

    The service writes only valid schedules, but a row can be edited behind its back (or by a later
    release). Such a schedule has no next occurrence, so rows show `next_run_at: null` with this text
    as `schedule_error`, and a pass turns the job `failed` instead of walking it (DESIGN semantic 10).
    """
    problem: str | None = None
    if isinstance(schedule, CronSchedule):
        problem = schedule.expression.problem()
        if problem is None:
            try:
                zone(schedule.tz)
            except Invalid as refusal:
                problem = refusal.message
    elif isinstance(schedule, EverySchedule) and schedule.period <= timedelta(0):
        problem = f"the period {schedule.period} is not positive"
    if problem is None:
        return None
    return f"the stored schedule cannot be read: {problem}"


def within_life(job: Job, instant: datetime | None) -> datetime | None:
    return instant if instant is not None and instant < job.ends_at else None


def armed_at(job: Job, nominal: datetime | None) -> Job:
    """`job` due next at the occurrence of nominal instant `nominal`, jitter included (semantic 32).

    It never fires at or after its end, so an occurrence whose jittered instant is past the end is none.
    """
    if nominal is None or isinstance(job.schedule, AtSchedule):
        return job.evolve(next_run_at=within_life(job, nominal), next_nominal=None)
    due = within_life(job, fires_at(job.id, job.schedule, nominal))
    kept = None if due is None or due == nominal else nominal
    return job.evolve(next_run_at=due, next_nominal=kept)


def at_nominal(job: Job, nominal: datetime) -> Job:
    """`job` with its next occurrence at nominal instant `nominal`, for walking on from there."""
    return job.evolve(next_run_at=nominal, next_nominal=None)


def arm(job: Job, now: datetime) -> Job:
    """Sets the first due instant of a new, renewed or rescheduled job, reading its schedule from `now`."""
    schedule = job.schedule
    if isinstance(schedule, AtSchedule):
        first: datetime | None = schedule.at
    elif schedule_problem(schedule) is not None:
        first = None  # a corrupt stored schedule (a renewal of such a job, say) never comes due
    elif isinstance(schedule, EverySchedule):
        # The grid is anchored on the whole second of `now`, so that its instants read as whole seconds
        # (09:10:00, not 09:10:00.4817), as a person setting "every 10m" at 09:00 expects.
        first = next_on_grid(now.replace(microsecond=0), schedule.period, now)
    else:
        first = schedule.expression.next_after(now, zone(schedule.tz))
    return armed_at(job, first)


@dataclass(frozen=True, slots=True)
class Planned:
    """One occurrence to come: when it fires (jitter included), and its timetable instant before jitter."""

    at: datetime
    nominal: datetime
    # Why a calendar the schedule excludes takes it out (it will not fire); None when it fires.
    excluded: str | None = None


def ahead(job: Job, count: int, rules: Rules | None = None) -> list[Planned]:
    """The job's next `count` occurrences from its `next_run_at`, within its lifetime (what `show`
    and a dry run list). Each fires where a pass would fire it: jitter included, the same on every node.
    With `rules`, those a calendar excludes are marked."""
    found: list[Planned] = []
    at, nominal = job.next_run_at, job.nominal_next
    while at is not None and nominal is not None and at < job.ends_at and len(found) < count:
        found.append(Planned(at, nominal, None if rules is None else rules.exclusion(job.schedule, nominal)))
        following = upcoming(at_nominal(job, nominal), nominal)
        if following is None or following <= nominal:
            break  # the schedule has no further occurrence (or a walk that does not move on)
        nominal, at = following, fires_at(job.id, job.schedule, following)
    return found
