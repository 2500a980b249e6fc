"""What a scheduling pass does to one job at `now` (`tend`): fire a due occurrence, or skip it.

It owns the misfire walk over the occurrences that came due (semantic 6: skip or coalesce, grace counted
from the jittered instant, semantic 32), calendars excluding occurrences (semantic 33), the overlap
policies while an occurrence is in flight (semantics 7 and 34: skip, buffer_one, allow, replace), a
queued backfill starting (semantic 35), and a due job whose stored schedule cannot be read ending
`failed` (semantic 10). Retries and expiry it leaves to `finishing`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from cronwright.core import detect
from cronwright.core.engine.arming import armed_at, at_nominal, schedule_problem, upcoming
from cronwright.core.engine.decision import Decision, Rules, claim, job_event
from cronwright.core.engine.finishing import expire, retry
from cronwright.core.events import Event, EventKind
from cronwright.core.model import (
    CronSchedule,
    EverySchedule,
    Job,
    Misfire,
    Overlap,
    State,
)
from cronwright.core.timetable import fires_at, previous
from cronwright.timing.every import count_on_grid, latest_on_grid
from cronwright.timing.zones import zone

MISSED_COUNT_CAP = 1000


def tend(job: Job, now: datetime, rules: Rules) -> Decision:
    """What a scheduling pass does to `job` at `now`: fire, skip, retry, expire, or nothing."""
    if job.state is State.RUNNING:
        return _tend_running(job, now, rules)
    if job.state in (State.ACTIVE, State.PAUSED, State.PENDING) and now >= job.ends_at:
        return expire(job)
    if job.state is State.ACTIVE and job.buffered_for is not None:
        return _start_buffered(job, now, rules)
    if job.state is State.ACTIVE and job.next_run_at is not None and job.next_run_at <= now:
        problem = schedule_problem(job.schedule)
        if problem is not None:
            return _corrupt(job, problem)
        return decide_due(job, now, rules)
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
    event = job_event(EventKind.JOB_BACKFILLED, job, due=due, nominal=nominal, waiting=len(rest))
    return replace(claimed, events=(*claimed.events, event))


def _corrupt(job: Job, problem: str) -> Decision:
    """A due job whose stored schedule cannot be read: it has no next occurrence, so it ends `failed`
    (DESIGN semantic 10), and the occurrence it was armed for is skipped rather than run on a guess.
    """
    failed = job.evolve(state=State.FAILED, next_run_at=None, paused_by=None)
    event = job_event(
        EventKind.JOB_SKIPPED, job, reason="schedule_error", count=1, due=job.next_run_at, error=problem
    )
    return Decision(failed, events=(event,))


def _fires(job: Job, nominal: datetime) -> datetime:
    """When the occurrence of nominal instant `nominal` is due. The armed one keeps the instant it was
    armed with (what the store woke the pass for); any other is computed (the same on every node)."""
    if nominal == job.nominal_next and job.next_run_at is not None:
        return job.next_run_at
    return fires_at(job.id, job.schedule, nominal)


def decide_due(job: Job, now: datetime, rules: Rules) -> Decision:
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
    moved = armed_at(job, after).evolve(
        skipped_misfire=job.skipped_misfire + missed, skipped_calendar=job.skipped_calendar + excluded
    )
    events = []
    alerts = []
    if missed:
        events.append(job_event(EventKind.JOB_SKIPPED, job, reason="misfire", count=missed, due=due))
        alerts.append(detect.missed(job, due, missed, now))
    if excluded:
        events.append(job_event(EventKind.JOB_SKIPPED, job, reason="calendar", count=excluded, due=due))
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
        following = upcoming(at_nominal(job, nominal), nominal)
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
    return latest, total, upcoming(at_nominal(job, latest), now)


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
        decision = retry(job, waiting, now, rules)
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
    event = job_event(EventKind.JOB_CANCELLED, job, fire_id=flight.fire_id, due=job.next_run_at)
    return Decision(ended, events=(event,)).then(decide_due(ended, now, rules))


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
            events.append(job_event(EventKind.JOB_BUFFERED, job, due=at))
    skipped = armed_at(job, after).evolve(
        skipped_overlap=job.skipped_overlap + overlapped, skipped_calendar=job.skipped_calendar + excluded
    )
    if overlapped:
        events.append(job_event(EventKind.JOB_SKIPPED, job, reason="overlap", count=overlapped, due=due))
    if excluded:
        events.append(job_event(EventKind.JOB_SKIPPED, job, reason="calendar", count=excluded, due=due))
    return Decision(skipped, events=tuple(events))


def _stop_in_flight(job: Job, events: list[Event], due: datetime) -> Job:
    """Overlap replace: asks the node running the attempt in flight to stop it (it ends `cancelled`);
    the occurrence due at `due` waits until then, so that two never run side by side."""
    flight = job.in_flight
    assert flight is not None
    if flight.cancel:
        return job  # asked already: its node stops it once
    events.append(job_event(EventKind.JOB_CANCELLED, job, fire_id=flight.fire_id, due=due))
    return job.evolve(in_flight=replace(flight, cancel=True))


def _start_beside(job: Job, now: datetime, rules: Rules) -> Decision:
    """overlap allow: the due occurrence starts beside those in flight (semantic 34), with the misfire
    policy and calendars applied exactly as on an idle job. A schedule with no occurrence left does not
    end the job here: it ends when its last flight does (`finishing._settle`)."""
    decided = decide_due(job, now, rules)
    if decided.job.state is State.DONE:
        return replace(decided, job=decided.job.evolve(state=State.RUNNING))
    return decided
