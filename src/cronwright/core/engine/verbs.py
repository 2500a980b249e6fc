"""The operator's verbs on one job: pause, resume, run_now, hand_off and take, update's checks and renew.

Each refuses what its semantic refuses, with the error a caller is told. It keeps pause and resume
(semantic 11: only a paused job resumes, and the misfire policy applies to what was missed), run now
(semantic 12: only an active job; a cron job stays on its timetable, an every job re-phases), a run_now
handed off to a serving node (semantic 28), and update and lifetime renewal (semantics 5 and 13).
"""

from __future__ import annotations

from datetime import datetime

from cronwright.core.engine.arming import arm, armed_at, schedule_problem
from cronwright.core.engine.decision import Decision, Rules, claim
from cronwright.core.engine.finishing import retry
from cronwright.core.engine.tending import decide_due, held_elsewhere
from cronwright.core.model import (
    EverySchedule,
    InFlight,
    Job,
    PausedBy,
    State,
)
from cronwright.errors import Invalid, JobNotActive, JobNotPaused, JobRunning, JobTerminal


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
    decided = decide_due(resumed, now, rules)
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
    return retry(job, flight, now, rules)


def _moved_for_a_manual_run(job: Job, now: datetime) -> Job:
    """`job` as a manual run leaves its schedule, or a refusal (DESIGN semantic 12)."""
    if job.state is not State.ACTIVE:
        _refuse_unless_active(job, "run now")
    problem = schedule_problem(job.schedule)
    if problem is not None:
        # Its run would end the job `failed` anyway (see `finishing._conclude`); the refusal says how to
        # repair it.
        raise Invalid("schedule", f"'{job.name}' cannot run: {problem}; update it with a valid schedule")
    if isinstance(job.schedule, EverySchedule):
        return armed_at(job, now + job.schedule.period)
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
