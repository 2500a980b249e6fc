"""An attempt ends, or its occurrence does: the run it records, a retry, the occurrence concluded, and
the job settled after it; also a dead node's attempts interrupted and a claim given back.

It keeps retries with their backoff (semantic 9), the breaker (semantic 10), the history row of each
attempt (semantic 21), expiry at the end of the lifetime (semantic 5), crash recovery (semantic 19: an
interrupted attempt is recorded and never re-run), a claim its node never started given back
(semantic 29), and the transitions that become alerts (semantic 38).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from cronwright.core import detect
from cronwright.core.engine.arming import schedule_problem, upcoming, within_life
from cronwright.core.engine.decision import Decision, Rules, job_event, occurrence_at
from cronwright.core.events import EventKind
from cronwright.core.model import (
    AtSchedule,
    InFlight,
    Job,
    LastRun,
    Occurrence,
    Outcome,
    PausedBy,
    Result,
    Run,
    State,
)


def expire(job: Job) -> Decision:
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
    event = job_event(EventKind.JOB_EXPIRED, job, ends_at=job.ends_at)
    return Decision(expired, events=(event,), alerts=(detect.expired(job, job.ends_at),))


def retry(job: Job, flight: InFlight, now: datetime, rules: Rules) -> Decision:
    if flight.waiting_for_a_node and now >= job.ends_at:
        # A handed-off run_now that no node took before the end: it never started, so nothing is
        # recorded, and the job expires as it would have (once no other occurrence is in flight).
        rest = job.without_flight(flight.fire_id)
        return Decision(rest) if rest.in_flight is not None else expire(rest.evolve(state=State.ACTIVE))
    if now >= job.ends_at:
        # Never fire at or after the end, not even a retry: the occurrence ends with its last failure.
        last = job.last_run
        outcome = last.outcome if last is not None else Outcome.ERROR
        return _conclude(job, flight, outcome, now)
    attempt = replace(flight, attempt=flight.attempt + 1, started_at=now, node=rules.node, retry_at=None)
    running = job.with_flight(attempt)
    return Decision(running, fire=occurrence_at(running, attempt, now))


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
        job_event(
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
            job_event(
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
        late = job_event(
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
        event = job_event(EventKind.JOB_BREAKER_PAUSED, job, consecutive_failures=failures)
        return Decision(paused, events=(event,))
    if now >= job.ends_at:
        return expire(job)
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
        occurrence = occurrence_at(job, flight, flight.started_at)
        result = Result(Outcome.INTERRUPTED, why, took_ms)
        ended = finish(decision.job, occurrence, result, now, dead)
        assert ended is not None
        decision = decision.then(ended)
    return decision


def release(job: Job, fire_id: str | None = None, moved_on: bool = False) -> Job:
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

    `moved_on`: the row was written since the claim by others (a peer skipped the instants after it
    for overlap, since the row said they ran here). Those instants are decided and counted: the
    timetable is not rewound past them, or they would be counted again and one could even run after it
    was reported skipped. The recurring occurrence given back is then missed, and counted so; a
    one-shot still fires its single late run.
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
    if moved_on and not flight.manual and not isinstance(job.schedule, AtSchedule):
        return armed.evolve(skipped_misfire=armed.skipped_misfire + 1)
    if not flight.manual:
        return armed.evolve(next_run_at=flight.scheduled_for, next_nominal=flight.nominal)
    if isinstance(job.schedule, AtSchedule):
        return armed.evolve(next_run_at=within_life(job, job.schedule.at))
    return armed


def release_all(job: Job, fire_ids: list[str], moved_on: bool = False) -> Job:
    """Gives back each claim of `fire_ids` (see `release`), the newest first, so that the timetable is
    due again at the oldest of them (unless the row `moved_on` since the claims)."""
    for fire_id in reversed(fire_ids):
        job = release(job, fire_id, moved_on)
    return job
