"""What every decision of the engine shares: the node's `Rules`, the `Decision` a function returns,
a job's event, and `claim`, which starts an occurrence on this node.

A decision is the job as it should next be stored, plus its effects: an occurrence to fire, runs to record,
events to emit, and the transitions that become alerts (semantic 38). The node applies a decision only
if the stored row still has the version the decision was computed from, so two deciders never both win.
`claim` starts every occurrence, scheduled, backfilled, buffered or manual, the same way (semantics 12,
24), and under overlap allow counts one that starts beside others (semantic 34).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from cronwright.core.calendars import NO_CALENDARS, Calendars
from cronwright.core.events import Event, EventKind
from cronwright.core.model import (
    CronSchedule,
    EverySchedule,
    InFlight,
    Job,
    Occurrence,
    Run,
    Schedule,
    State,
)
from cronwright.core.notifications import Alert
from cronwright.timing.zones import zone


@dataclass(frozen=True, slots=True)
class Rules:
    """The node's settings that decisions depend on."""

    node: str
    misfire_grace: timedelta = timedelta(seconds=60)
    calendars: Calendars = NO_CALENDARS
    # The node zone: an `every` schedule's dates are read in it (a cron schedule's in its own tz).
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))

    def exclusion(self, schedule: Schedule, nominal: datetime) -> str | None:
        """Why a calendar the schedule excludes takes out the occurrence of `nominal`, or None."""
        if not isinstance(schedule, CronSchedule | EverySchedule) or not schedule.exclude:
            return None
        read_in = zone(schedule.tz) if isinstance(schedule, CronSchedule) else self.zone
        return self.calendars.exclusion(schedule.exclude, nominal, read_in)


@dataclass(frozen=True, slots=True)
class Decision:
    job: Job
    fire: Occurrence | None = None
    runs: tuple[Run, ...] = ()
    events: tuple[Event, ...] = ()
    # The transitions it makes (semantic 38): the node writes their notifications with the job.
    alerts: tuple[Alert, ...] = ()

    def then(self, later: Decision) -> Decision:
        """Two decisions in sequence, the later acting on the earlier's job."""
        return Decision(
            later.job,
            later.fire or self.fire,
            self.runs + later.runs,
            self.events + later.events,
            self.alerts + later.alerts,
        )


def job_event(kind: EventKind, job: Job, **fields: object) -> Event:
    return Event(kind, job.id, job.name, fields)


def claim(
    job: Job,
    scheduled_for: datetime,
    now: datetime,
    rules: Rules,
    manual: bool = False,
    nominal: datetime | None = None,
) -> Decision:
    """Starts a new occurrence of `job`, due at `scheduled_for` (jitter included; `nominal` is the
    timetable's instant before it), on node `rules.node`."""
    sequence = job.occurrences + 1
    fire_id = f"{job.id}-{sequence}"
    kept = None if nominal is None or nominal == scheduled_for else nominal
    if job.backfill and not manual:
        # An occurrence that a backfill queued and the timetable now fires itself runs once: this once.
        started = scheduled_for if nominal is None else nominal
        job = job.evolve(backfill=tuple(t for t in job.backfill if t != started))
    flight = InFlight(
        fire_id, scheduled_for, attempt=1, started_at=now, node=rules.node, manual=manual, nominal=kept
    )
    if job.in_flight is not None:
        # overlap allow: it starts beside the occurrences still in flight, and is counted.
        job = job.evolve(overlapped=job.overlapped + 1)
        event = job_event(EventKind.JOB_OVERLAPPED, job, fire_id=fire_id, beside=len(job.flights))
        running = job.with_flight(flight).evolve(state=State.RUNNING, occurrences=sequence)
        return Decision(running, fire=occurrence_at(running, flight, now), events=(event,))
    running = job.evolve(state=State.RUNNING, in_flight=flight, occurrences=sequence)
    return Decision(running, fire=occurrence_at(running, flight, now))


def occurrence_at(job: Job, flight: InFlight, now: datetime) -> Occurrence:
    return Occurrence(
        job.id,
        flight.fire_id,
        flight.scheduled_for,
        flight.attempt,
        now,
        flight.manual,
        job.name,
        flight.nominal,
    )


def occurrence_of(job: Job, flight: InFlight) -> Occurrence:
    """The attempt `flight` as it was handed to its runner when it started."""
    return occurrence_at(job, flight, flight.started_at)
