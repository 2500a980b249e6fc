"""Pure decisions about one job. No I/O and no clock: every function takes `now`.

Each decision returns the job as it should next be stored, plus its effects: an occurrence to fire,
runs to record, events to emit. The node applies a decision only if the stored row still has the
version the decision was computed from, so two deciders never both win.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from cronwright.core import detect
from cronwright.core.calendars import NO_CALENDARS, Calendars
from cronwright.core.events import Event, EventKind
from cronwright.core.model import (
    AtSchedule,
    CronSchedule,
    EverySchedule,
    InFlight,
    Job,
    LastRun,
    Misfire,
    Occurrence,
    Outcome,
    Overlap,
    PausedBy,
    Result,
    Run,
    Schedule,
    State,
)
from cronwright.core.notifications import Alert
from cronwright.core.timetable import fires_at, previous
from cronwright.errors import Invalid, JobNotActive, JobNotPaused, JobRunning, JobTerminal
from cronwright.timing.every import count_on_grid, latest_on_grid, next_on_grid
from cronwright.timing.zones import zone

# Counting missed cron occurrences walks them; past this many the count stops (the skip does not).
MISSED_COUNT_CAP = 1000


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


def _event(kind: EventKind, job: Job, **fields: object) -> Event:
    return Event(kind, job.id, job.name, fields)


# --- when a job comes due -------------------------------------------------------------------------


def upcoming(job: Job, after: datetime) -> datetime | None:
    """The schedule's first occurrence strictly after `after`, ignoring the lifetime.

    None means the schedule has no further occurrence at all (a one-shot, or a cron walk that gave out).
    An `every` schedule stays on the grid anchored at its current nominal instant (`Job.nominal_next`).
    The instant is nominal: `_armed_at` adds the jitter.
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


def _within_life(job: Job, instant: datetime | None) -> datetime | None:
    return instant if instant is not None and instant < job.ends_at else None


def _armed_at(job: Job, nominal: datetime | None) -> Job:
    """`job` due next at the occurrence of nominal instant `nominal`, jitter included (semantic 32).

    It never fires at or after its end, so an occurrence whose jittered instant is past the end is none.
    """
    if nominal is None or isinstance(job.schedule, AtSchedule):
        return job.evolve(next_run_at=_within_life(job, nominal), next_nominal=None)
    due = _within_life(job, fires_at(job.id, job.schedule, nominal))
    kept = None if due is None or due == nominal else nominal
    return job.evolve(next_run_at=due, next_nominal=kept)


def _at_nominal(job: Job, nominal: datetime) -> Job:
    """`job` with its next occurrence at nominal instant `nominal`, for walking on from there."""
    return job.evolve(next_run_at=nominal, next_nominal=None)


def _fires(job: Job, nominal: datetime) -> datetime:
    """When the occurrence of nominal instant `nominal` is due. The armed one keeps the instant it was
    armed with (what the store woke the pass for); any other is computed (the same on every node)."""
    if nominal == job.nominal_next and job.next_run_at is not None:
        return job.next_run_at
    return fires_at(job.id, job.schedule, nominal)


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
    return _armed_at(job, first)


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
        following = upcoming(_at_nominal(job, nominal), nominal)
        if following is None or following <= nominal:
            break  # the schedule has no further occurrence (or a walk that does not move on)
        nominal, at = following, fires_at(job.id, job.schedule, following)
    return found


# --- a scheduling pass ----------------------------------------------------------------------------


def tend(job: Job, now: datetime, rules: Rules) -> Decision:
    """What a scheduling pass does to `job` at `now`: fire, skip, retry, expire, or nothing."""
    if job.state is State.RUNNING:
        return _tend_running(job, now, rules)
    if job.state in (State.ACTIVE, State.PAUSED, State.PENDING) and now >= job.ends_at:
        return _expire(job)
    if job.state is State.ACTIVE and job.buffered_for is not None:
        return _start_buffered(job, now, rules)
    if job.state is State.ACTIVE and job.next_run_at is not None and job.next_run_at <= now:
        problem = schedule_problem(job.schedule)
        if problem is not None:
            return _corrupt(job, problem)
        return _due(job, now, rules)
    if job.state is State.ACTIVE and job.backfill:
        return _start_backfill(job, now, rules)
    return Decision(job)


def _start_backfill(job: Job, now: datetime, rules: Rules) -> Decision:
    """The oldest queued backfill occurrence starts now (semantic 35): one at a time, each with its own
    fire_id, due at its timetable instant with its jitter, however long ago that was. A pass reaches
    this only when no occurrence of the timetable is due, so the timetable's own come first."""
    nominal, rest = job.backfill[0], job.backfill[1:]
    started = job.evolve(backfill=rest, backfilled=job.backfilled + 1)
    due = fires_at(job.id, job.schedule, nominal)
    claimed = claim(started, due, now, rules, nominal=nominal)
    event = _event(EventKind.JOB_BACKFILLED, job, due=due, nominal=nominal, waiting=len(rest))
    return replace(claimed, events=(*claimed.events, event))


def _corrupt(job: Job, problem: str) -> Decision:
    """A due job whose stored schedule cannot be read: it has no next occurrence, so it ends `failed`
    (DESIGN semantic 10), and the occurrence it was armed for is skipped rather than run on a guess.
    """
    failed = job.evolve(state=State.FAILED, next_run_at=None, paused_by=None)
    event = _event(
        EventKind.JOB_SKIPPED, job, reason="schedule_error", count=1, due=job.next_run_at, error=problem
    )
    return Decision(failed, events=(event,))


def _expire(job: Job) -> Decision:
    expired = job.evolve(
        state=State.EXPIRED,
        next_run_at=None,
        paused_by=None,
        pause_note=None,
        paused_at=None,
        buffered_for=None,
        buffered_nominal=None,
        backfill=(),  # a backfill never fires at or after the end either
    )
    event = _event(EventKind.JOB_EXPIRED, job, ends_at=job.ends_at)
    return Decision(expired, events=(event,), alerts=(detect.expired(job, job.ends_at),))


def _due(job: Job, now: datetime, rules: Rules) -> Decision:
    """An active job whose `next_run_at` has come: fire it, or apply the misfire policy."""
    due = job.next_run_at
    assert due is not None
    if job.one_shot:
        # A one-shot always fires its single run, late or not, while its lifetime lasts.
        return claim(job.evolve(next_run_at=None), due, now, rules)

    latest, total, after = _come_due(job, now)
    # An occurrence a calendar excludes never fires, on time or late (semantic 33).
    excluded = _excluded_among(job, latest, rules)
    kept = latest if rules.exclusion(job.schedule, latest) is None else None
    # Misfire grace counts from the instant it was due, jitter included (semantic 32).
    on_time = kept is not None and now - _fires(job, kept) <= rules.misfire_grace
    fire = kept if on_time else None
    if fire is None and job.misfire is Misfire.COALESCE:
        fire = kept if kept is not None else _latest_kept(job, latest, rules)
    missed = max(0, total - excluded - (1 if fire is not None else 0))
    moved = _armed_at(job, after).evolve(
        skipped_misfire=job.skipped_misfire + missed, skipped_calendar=job.skipped_calendar + excluded
    )
    events = []
    alerts = []
    if missed:
        events.append(_event(EventKind.JOB_SKIPPED, job, reason="misfire", count=missed, due=due))
        alerts.append(detect.missed(job, due, missed, now))
    if excluded:
        events.append(_event(EventKind.JOB_SKIPPED, job, reason="calendar", count=excluded, due=due))
    decision = Decision(moved, events=tuple(events), alerts=tuple(alerts))
    if fire is not None:
        return decision.then(claim(moved, _fires(job, fire), now, rules, nominal=fire))
    if after is None:
        # The schedule has no occurrence left at all: the job is over.
        return decision.then(Decision(moved.evolve(state=State.DONE)))
    return decision


def _excluded_among(job: Job, latest: datetime, rules: Rules) -> int:
    """How many of the occurrences due from the job's next one to `latest` (nominal instants, both
    included) a calendar excludes; counted over at most MISSED_COUNT_CAP of them."""
    schedule = job.schedule
    nominal = job.nominal_next
    if not isinstance(schedule, CronSchedule | EverySchedule) or not schedule.exclude or nominal is None:
        return 0
    count = 0
    for _ in range(MISSED_COUNT_CAP):
        count += rules.exclusion(schedule, nominal) is not None
        following = upcoming(_at_nominal(job, nominal), nominal)
        if following is None or following > latest or nominal >= latest:
            break
        nominal = following
    return count


def _latest_kept(job: Job, latest: datetime, rules: Rules) -> datetime | None:
    """The latest due occurrence before `latest` that no calendar excludes (a coalesce catch-up), or None."""
    floor = job.nominal_next
    nominal = latest
    for _ in range(MISSED_COUNT_CAP):
        if floor is None or nominal <= floor:
            return None
        nominal = previous(job.schedule, nominal, floor)
        if rules.exclusion(job.schedule, nominal) is None:
            return nominal
    return None


def _come_due(job: Job, now: datetime) -> tuple[datetime, int, datetime | None]:
    """Of a job whose next occurrence is due: the nominal instant of the latest occurrence due by `now`,
    how many came due (capped for cron), and the nominal instant of the next one still to come.

    With jitter, the latest nominal instant may have passed while its jittered one has not: that one is
    not due yet, so it is the next to come, and the one before it is the latest due.
    """
    nominal = job.nominal_next
    assert nominal is not None
    latest, total = _latest_and_count(job, nominal, now)
    if latest != nominal and _fires(job, latest) > now:
        return previous(job.schedule, latest, nominal), total - 1, latest
    return latest, total, upcoming(_at_nominal(job, latest), now)


def _latest_and_count(job: Job, due: datetime, now: datetime) -> tuple[datetime, int]:
    """The latest occurrence in [due, now], and how many there are (capped for cron)."""
    schedule = job.schedule
    if schedule_problem(schedule) is not None:
        return due, 1  # a corrupt stored schedule is not walked: `due` counts once
    if isinstance(schedule, EverySchedule):
        latest = latest_on_grid(due, schedule.period, now)
        assert latest is not None
        return latest, count_on_grid(due, schedule.period, now)
    assert isinstance(schedule, CronSchedule)
    tz = zone(schedule.tz)
    latest_cron = schedule.expression.latest_at_or_before(now, due, tz)
    if latest_cron is None:
        # `due` itself no longer matches (the expression changed under it); it still counts once.
        return due, 1
    return latest_cron, max(1, schedule.expression.count_between(due, now, tz, MISSED_COUNT_CAP))


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
        event = _event(EventKind.JOB_OVERLAPPED, job, fire_id=fire_id, beside=len(job.flights))
        running = job.with_flight(flight).evolve(state=State.RUNNING, occurrences=sequence)
        return Decision(running, fire=_occurrence(running, flight, now), events=(event,))
    running = job.evolve(state=State.RUNNING, in_flight=flight, occurrences=sequence)
    return Decision(running, fire=_occurrence(running, flight, now))


def _occurrence(job: Job, flight: InFlight, now: datetime) -> Occurrence:
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
    return _occurrence(job, flight, flight.started_at)


def _tend_running(job: Job, now: datetime, rules: Rules) -> Decision:
    if held_elsewhere(job, rules):
        return Decision(job)  # its flights run on another node, which starts its attempts too
    flight = job.in_flight
    assert flight is not None
    due = job.next_run_at is not None and job.next_run_at <= now
    if due and job.overlap is Overlap.REPLACE and flight.node is None and not job.one_shot:
        return _replace_waiting(job, now, rules)
    waiting = next((f for f in job.flights if f.retry_at is not None and f.retry_at <= now), None)
    decision = Decision(job)
    if waiting is not None:
        decision = _retry(job, waiting, now, rules)
    if decision.fire is not None and job.overlap is Overlap.ALLOW:
        return decision  # a decision fires one attempt: a due occurrence starts at the next pass
    if decision.job.state is State.RUNNING and job.next_run_at is not None and job.next_run_at <= now:
        decision = decision.then(_skip_overlap(decision.job, now, rules))
    return decision


def held_elsewhere(job: Job, rules: Rules) -> bool:
    """Whether an overlap-allow job's flights run on a node other than `rules.node`.

    A job's attempts all run on one node, so that its lease covers them all and a dead node's flights
    are found, and interrupted, together. Another node leaves such a job alone: the node that runs its
    flights starts its next occurrence (and its retries) in its own pass.
    """
    if job.overlap is not Overlap.ALLOW:
        return False
    holder = job.flight_node
    return holder is not None and holder != rules.node


def _retry(job: Job, flight: InFlight, now: datetime, rules: Rules) -> Decision:
    if flight.waiting_for_a_node and now >= job.ends_at:
        # A handed-off run_now that no node took before the end: it never started, so nothing is
        # recorded, and the job expires as it would have (once no other occurrence is in flight).
        rest = job.without_flight(flight.fire_id)
        return Decision(rest) if rest.in_flight is not None else _expire(rest.evolve(state=State.ACTIVE))
    if now >= job.ends_at:
        # Never fire at or after the end, not even a retry: the occurrence ends with its last failure.
        last = job.last_run
        outcome = last.outcome if last is not None else Outcome.ERROR
        return _conclude(job, flight, outcome, now)
    attempt = replace(flight, attempt=flight.attempt + 1, started_at=now, node=rules.node, retry_at=None)
    running = job.with_flight(attempt)
    return Decision(running, fire=_occurrence(running, attempt, now))


def _start_buffered(job: Job, now: datetime, rules: Rules) -> Decision:
    """The occurrence that waited for the one before it (overlap buffer_one) starts now, however long it
    waited: it is the one the policy kept, not a late firing (semantic 34)."""
    waited = job.buffered_for
    assert waited is not None
    started = job.evolve(buffered_for=None, buffered_nominal=None)
    return claim(started, waited, now, rules, nominal=job.buffered_nominal)


def _replace_waiting(job: Job, now: datetime, rules: Rules) -> Decision:
    """Overlap replace, while the occurrence in flight waits for its next attempt (a retry's backoff, or
    a handed-off run_now no node took yet): nothing runs, so nothing needs stopping. It ends `cancelled`
    at once, keeping the last attempt's run and failure count, and the due occurrence is decided as on
    an idle job (semantic 34)."""
    flight = job.in_flight
    assert flight is not None
    ended = job.evolve(state=State.ACTIVE, in_flight=None, cancelled=job.cancelled + 1)
    event = _event(EventKind.JOB_CANCELLED, job, fire_id=flight.fire_id, due=job.next_run_at)
    return Decision(ended, events=(event,)).then(_due(ended, now, rules))


def _skip_overlap(job: Job, now: datetime, rules: Rules) -> Decision:
    due = job.next_run_at
    assert due is not None
    if job.one_shot:
        return Decision(job)
    if job.overlap is Overlap.ALLOW:
        return _start_beside(job, now, rules)
    latest, total, after = _come_due(job, now)
    excluded = _excluded_among(job, latest, rules)  # those would not have fired anyway
    overlapped = total - excluded
    events: list[Event] = []
    replacing = job.overlap is Overlap.REPLACE
    buffer = (
        (job.overlap is Overlap.BUFFER_ONE or replacing)
        # buffer_one keeps the first that waits; replace the newest, in place of one waiting already.
        and (job.buffered_for is None or replacing)
        and overlapped
        and rules.exclusion(job.schedule, latest) is None
    )
    if buffer:
        # The latest due occurrence waits; the others (a catch-up's earlier ones, any that come due
        # while one already waits under buffer_one, or the one it displaces under replace) are dropped
        # as with skip.
        overlapped -= 0 if replacing and job.buffered_for is not None else 1
        at = _fires(job, latest)
        kept = None if at == latest else latest
        if replacing:
            job = _stop_in_flight(job.evolve(buffered_for=at, buffered_nominal=kept), events, at)
        else:
            job = job.evolve(buffered_for=at, buffered_nominal=kept, buffered=job.buffered + 1)
            events.append(_event(EventKind.JOB_BUFFERED, job, due=at))
    skipped = _armed_at(job, after).evolve(
        skipped_overlap=job.skipped_overlap + overlapped, skipped_calendar=job.skipped_calendar + excluded
    )
    if overlapped:
        events.append(_event(EventKind.JOB_SKIPPED, job, reason="overlap", count=overlapped, due=due))
    if excluded:
        events.append(_event(EventKind.JOB_SKIPPED, job, reason="calendar", count=excluded, due=due))
    return Decision(skipped, events=tuple(events))


def _stop_in_flight(job: Job, events: list[Event], due: datetime) -> Job:
    """Overlap replace: asks the node running the attempt in flight to stop it (it ends `cancelled`);
    the occurrence due at `due` waits until then, so that two never run side by side."""
    flight = job.in_flight
    assert flight is not None
    if flight.cancel:
        return job  # asked already: its node stops it once
    events.append(_event(EventKind.JOB_CANCELLED, job, fire_id=flight.fire_id, due=due))
    return job.evolve(in_flight=replace(flight, cancel=True))


def _start_beside(job: Job, now: datetime, rules: Rules) -> Decision:
    """overlap allow: the due occurrence starts beside those in flight (semantic 34), with the misfire
    policy and calendars applied exactly as on an idle job. A schedule with no occurrence left does not
    end the job here: it ends when its last flight does (`_settle`)."""
    decided = _due(job, now, rules)
    if decided.job.state is State.DONE:
        return replace(decided, job=decided.job.evolve(state=State.RUNNING))
    return decided


# --- an attempt ends ------------------------------------------------------------------------------


def run_of(occurrence: Occurrence, result: Result, now: datetime, node: str, name: str | None = None) -> Run:
    """The history row of one finished attempt, under the job's `name` (default: its name when it fired)."""
    return Run(
        occurrence.job_id,
        occurrence.job_name if name is None else name,
        occurrence.fire_id,
        occurrence.attempt,
        occurrence.scheduled_for,
        occurrence.fired_at,
        now,
        result.outcome,
        result.message,
        result.took_ms,
        node,
        result.output,
    )


def finish(
    job: Job | None, occurrence: Occurrence, result: Result, now: datetime, rules: Rules
) -> Decision | None:
    """Records one finished attempt, and decides: retry, conclude the occurrence, or (if stale) leave the job.

    `job` is the row as stored now; None when it was deleted meanwhile, in which case the run still
    reaches the history (the caller records `runs`) but nothing brings the job back.
    """
    if job is None:
        return None
    run = run_of(occurrence, result, now, rules.node, job.name)
    events = [
        _event(
            EventKind.JOB_RUN,
            job,
            fire_id=occurrence.fire_id,
            attempt=occurrence.attempt,
            outcome=result.outcome.value,
            took_ms=result.took_ms,
        )
    ]
    if result.outcome.failed:
        events.append(
            _event(
                EventKind.JOB_RUN_FAILED,
                job,
                fire_id=occurrence.fire_id,
                attempt=occurrence.attempt,
                outcome=result.outcome.value,
                message=result.message,
                consecutive_failures=job.consecutive_failures,
            )
        )
    flight = job.flight(occurrence.fire_id)
    mine = flight is not None and flight.attempt == occurrence.attempt and flight.node == rules.node
    if not mine:
        # Another process concluded this attempt without us: it took our lease for dead (we were cut off
        # from the store for longer than the lease) and recorded the attempt `interrupted`. The history
        # keeps one row per attempt, so that record stands; the late result reaches the events only.
        late = _event(
            EventKind.JOB_RUN_FAILED,
            job,
            fire_id=occurrence.fire_id,
            attempt=occurrence.attempt,
            outcome=result.outcome.value,
            message="finished after it was recorded interrupted",
        )
        return Decision(job, events=(*events, late))
    assert flight is not None
    last_run = LastRun(
        occurrence.fire_id,
        occurrence.fired_at,
        occurrence.attempt,
        result.outcome,
        result.message,
        result.took_ms,
    )
    job = job.evolve(last_run=last_run)
    if result.outcome is Outcome.CANCELLED:
        job = job.evolve(cancelled=job.cancelled + 1)
    base = Decision(job, runs=(run,), events=tuple(events))
    if result.outcome.retryable and occurrence.attempt < job.max_attempts:
        backoff = timedelta(milliseconds=job.retry_backoff_ms * 2 ** (occurrence.attempt - 1))
        retry_at = now + backoff
        if retry_at < job.ends_at:
            waiting = replace(flight, node=None, retry_at=retry_at)
            return base.then(Decision(job.with_flight(waiting)))
    return base.then(_conclude(job, flight, result.outcome, now))


def _conclude(job: Job, flight: InFlight, outcome: Outcome, now: datetime) -> Decision:
    """The occurrence `flight` is over: count it for the breaker, settle what the job does next, and
    tell the transitions it makes (failed, recovered, breaker_paused)."""
    settled = _settle(job, flight, outcome, now)
    if outcome is Outcome.CANCELLED:
        return settled  # the policy stopped it: neither a failure nor a recovery
    alerts = detect.occurrence_ended(job, settled.job, outcome.failed, now, flight)
    # Most occurrences make no transition: no copy for them (dataclasses.replace runs __init__).
    return replace(settled, alerts=settled.alerts + alerts) if alerts else settled


def _settle(job: Job, flight: InFlight, outcome: Outcome, now: datetime) -> Decision:
    succeeded = outcome is Outcome.OK
    # A cancelled occurrence leaves the failure count as it was: the breaker counts failures only.
    failures = 0 if succeeded else job.consecutive_failures + outcome.failed
    if job.alongside:
        # overlap allow: others are still in flight. The job stays running, and settles (its end, the
        # breaker) when the last of them ends.
        return Decision(job.without_flight(flight.fire_id).evolve(consecutive_failures=failures))
    job = job.evolve(in_flight=None, state=State.ACTIVE, consecutive_failures=failures)
    if job.one_shot:
        return Decision(job.evolve(state=State.DONE if succeeded else State.FAILED, next_run_at=None))
    if schedule_problem(job.schedule) is not None:
        # Its stored schedule became unreadable while it ran: no next occurrence, and not a natural end.
        return Decision(job.evolve(state=State.FAILED, next_run_at=None))
    if job.next_run_at is None and job.buffered_for is None and upcoming(job, now) is None:
        # No further occurrence exists at all: a recurring job turns terminal only here.
        return Decision(job.evolve(state=State.FAILED if outcome.failed else State.DONE))
    if outcome.failed and job.breaker_threshold and failures >= job.breaker_threshold:
        note = f"{failures} failures in a row (breaker_threshold {job.breaker_threshold})"
        paused = job.evolve(state=State.PAUSED, paused_by=PausedBy.BREAKER, pause_note=note, paused_at=now)
        event = _event(EventKind.JOB_BREAKER_PAUSED, job, consecutive_failures=failures)
        return Decision(paused, events=(event,))
    if now >= job.ends_at:
        return _expire(job)
    return Decision(job)


def interrupt(job: Job, now: datetime, rules: Rules, why: str) -> Decision:
    """The node running `job`'s attempts died: record each `interrupted`, never re-run it, and re-arm.

    Every attempt that node started ends so (under overlap allow there may be several); an occurrence
    that waits for a retry never started there, and keeps waiting. The misfire policy then applies, at
    the next pass, over occurrences that never started.
    """
    node = job.flight_node
    assert node is not None
    dead = replace(rules, node=node)
    decision = Decision(job)
    for flight in job.flights:
        if flight.node != node:
            continue
        took_ms = max(0, int((now - flight.started_at).total_seconds() * 1000))
        occurrence = _occurrence(job, flight, flight.started_at)
        result = Result(Outcome.INTERRUPTED, why, took_ms)
        ended = finish(decision.job, occurrence, result, now, dead)
        assert ended is not None
        decision = decision.then(ended)
    return decision


def release(job: Job, fire_id: str | None = None) -> Job:
    """Gives back a claim that its node never started (DESIGN semantic 29): of occurrence `fire_id`
    (default: the job's only one in flight).

    The claim's write landed though its node never heard so, and the node, which knows what it
    dispatched, never ran the attempt. Nothing ran, so nothing is recorded: the job's timetable returns
    to where it was before the claim, its occurrence not yet started, and the next pass decides it
    afresh. A due occurrence then fires if it is still within its grace, or the misfire policy applies
    (a one-shot always fires its late run); a retry is retried; a manual run, whose request was
    answered with an error, is not started.

    The fire_id is never given back: allocation only moves forward, so a fire_id names at most one
    occurrence whatever happens (a target that deduplicates by fire_id never drops a genuine one). The
    occurrence fires again under a fresh fire_id; a retry or handed-off run keeps its own.
    """
    flight = job.in_flight if fire_id is None else job.flight(fire_id)
    assert flight is not None and flight.node is not None
    if flight.attempt > 1 or flight.handed_off:
        # A retry, or a handed-off run_now, waits again for a pass to take it.
        waiting = replace(flight, attempt=flight.attempt - 1, node=None, retry_at=flight.started_at)
        return job.with_flight(waiting)
    armed = job.without_flight(flight.fire_id)
    if armed.in_flight is None:
        armed = armed.evolve(state=State.ACTIVE)
    elif job.next_run_at is not None and job.next_run_at < flight.scheduled_for:
        # overlap allow: an earlier occurrence given back already is due, and the walk on from it comes
        # to this one again.
        return armed
    if not flight.manual:
        return armed.evolve(next_run_at=flight.scheduled_for, next_nominal=flight.nominal)
    if isinstance(job.schedule, AtSchedule):
        return armed.evolve(next_run_at=_within_life(job, job.schedule.at))
    return armed


def release_all(job: Job, fire_ids: list[str]) -> Job:
    """Gives back each claim of `fire_ids` (see `release`), the newest first, so that the timetable is
    due again at the oldest of them."""
    for fire_id in reversed(fire_ids):
        job = release(job, fire_id)
    return job


# --- operator actions -----------------------------------------------------------------------------


def _refuse_unless_active(job: Job, verb: str) -> None:
    state = job.state.value
    if job.state is State.RUNNING:
        raise JobRunning(f"'{job.name}' is running; {verb} it once its run has finished", state=state)
    if not job.state.live:
        raise JobTerminal(
            f"'{job.name}' is {state} and can no longer {verb}; update it with a lifetime "
            "to renew an expired job, or create a new one",
            state=state,
        )
    if job.state is State.PENDING:
        raise JobNotActive(
            f"'{job.name}' is pending: it awaits an operator's approval (`approve`), and cannot {verb} "
            "until then",
            state=state,
        )
    if job.state is not State.ACTIVE:
        raise JobNotActive(f"'{job.name}' is {state}; resume it first", state=state)


def pause(
    job: Job, by: PausedBy = PausedBy.OPERATOR, now: datetime | None = None, note: str | None = None
) -> Job:
    """An active job stops firing until resumed, paused at `now` for the reason `note`. Refused while it
    runs, or when not active."""
    if job.state is State.PAUSED:
        raise JobNotActive(f"'{job.name}' is already paused", state=job.state.value)
    _refuse_unless_active(job, "pause")
    return job.evolve(state=State.PAUSED, paused_by=by, paused_at=now, pause_note=note or None)


def resume(job: Job, now: datetime, rules: Rules) -> Decision:
    """A paused job fires again. It resets the failure count and applies the misfire policy at once.

    With `skip`, the occurrences missed while paused are counted and the job moves on to its next
    future one, and the skip is announced (`job_skipped`, reason `misfire`), as a pass's would be. An
    occurrence still within its grace, a `coalesce` catch-up, or a one-shot's late run stays due, for the
    next pass to fire. Only paused jobs resume, so a resume can never start a second run of a job in
    flight.
    """
    if job.state is not State.PAUSED:
        raise JobNotPaused(
            f"'{job.name}' is {job.state.value}, not paused; only a paused job can be resumed",
            state=job.state.value,
        )
    resumed = job.evolve(
        state=State.ACTIVE, paused_by=None, consecutive_failures=0, pause_note=None, paused_at=None
    )
    due = resumed.next_run_at
    if due is None or due > now or resumed.one_shot or schedule_problem(resumed.schedule) is not None:
        return Decision(resumed)
    decided = _due(resumed, now, rules)
    # A firing is left for the next pass (which decides, and announces, it again); a skip is kept.
    return Decision(resumed) if decided.fire is not None else decided


def run_now(job: Job, now: datetime, rules: Rules) -> Decision:
    """Fires an active job now, through the same claim as a due occurrence.

    A cron job stays on its grid; an `every` job re-phases to now + period.
    """
    return claim(_moved_for_a_manual_run(job, now), now, now, rules, manual=True)


def hand_off(job: Job, now: datetime) -> Job:
    """A run_now left in the store for a serving node to run (semantic 28), refused as `run_now` is.

    Its occurrence is claimed for nobody: it waits at attempt 0, due now, and the first pass of any
    node takes it (`take`), as it takes a pending retry. The job is `running` meanwhile, so no second
    run_now, update or overlapping firing starts beside it, and the requester may go away.
    """
    moved = _moved_for_a_manual_run(job, now)
    sequence = moved.occurrences + 1
    flight = InFlight(
        f"{job.id}-{sequence}", now, 0, now, node=None, manual=True, retry_at=now, handed_off=True
    )
    return moved.evolve(state=State.RUNNING, in_flight=flight, occurrences=sequence)


def take(job: Job, now: datetime, rules: Rules) -> Decision | None:
    """Claims a handed-off run_now for `rules.node`, as a pass would; None if it is not waiting."""
    flight = next((f for f in job.flights if f.waiting_for_a_node), None)
    if job.state is not State.RUNNING or flight is None or held_elsewhere(job, rules):
        return None
    return _retry(job, flight, now, rules)


def _moved_for_a_manual_run(job: Job, now: datetime) -> Job:
    """`job` as a manual run leaves its schedule, or a refusal (DESIGN semantic 12)."""
    if job.state is not State.ACTIVE:
        _refuse_unless_active(job, "run now")
    problem = schedule_problem(job.schedule)
    if problem is not None:
        # Its run would end the job `failed` anyway (see `_conclude`); the refusal says how to repair it.
        raise Invalid("schedule", f"'{job.name}' cannot run: {problem}; update it with a valid schedule")
    if isinstance(job.schedule, EverySchedule):
        return _armed_at(job, now + job.schedule.period)
    if job.one_shot:
        return job.evolve(next_run_at=None)
    return job


def check_updatable(job: Job) -> None:
    """Update is refused while the job runs, and on jobs that are over (an expired one may be renewed)."""
    state = job.state.value
    if job.state is State.RUNNING:
        raise JobRunning(f"'{job.name}' is running; update it once its run has finished", state=state)
    if job.state in (State.DONE, State.FAILED):
        raise JobTerminal(f"'{job.name}' is {state}; create a new job instead", state=state)


def renew(job: Job, ends_at: datetime, now: datetime) -> Job:
    """A new lifetime, read from the moment of the update. It brings an expired job back to life."""
    renewed = job.evolve(ends_at=ends_at)
    if job.state is State.EXPIRED:
        return arm(renewed.evolve(state=State.ACTIVE), now)
    if renewed.next_run_at is None and not job.one_shot:
        # The old end had cut the schedule short; the new one may let it come due again.
        return arm(renewed, now)
    return renewed
