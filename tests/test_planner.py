"""The pure planner of a pass (planner.py): what to claim, what waits for a slot, what settles, when a pass
reads on, and how finished attempts are recorded. No store, no runner, no clock: jobs in, a plan out."""

from __future__ import annotations

from datetime import datetime, timedelta

from conftest import at
from cronwright.core import engine, planner
from cronwright.core.events import EventKind
from cronwright.core.model import EverySchedule, Finished, Job, Occurrence, Outcome, Overlap, Result, State
from cronwright.core.notifications import Transition

T0 = at("2026-03-02T09:00:00+01:00")
RULES = engine.Rules("node-a", misfire_grace=timedelta(seconds=60))
OK = Result(Outcome.OK, "fine", 5)


def _job(job_id: int, overlap: Overlap = Overlap.SKIP, **changes: object) -> Job:
    """An every-minute job armed at T0: its first occurrence is due at T0 + 1 min."""
    job = Job(
        job_id,
        f"job-{job_id}",
        "reports",
        "daily",
        {},
        EverySchedule(timedelta(minutes=1)),
        T0 + timedelta(days=1),
        T0,
        T0,
        overlap=overlap,
    )
    return engine.arm(job.evolve(**changes), T0)


def _minute(n: int, seconds: int = 0) -> datetime:
    return T0 + timedelta(minutes=n, seconds=seconds)


def _fire(job: Job, now: datetime) -> tuple[Job, Occurrence]:
    decision = engine.tend(job, now, RULES)
    assert decision.fire is not None, decision
    return decision.job, decision.fire


# --- the due jobs of one read ---------------------------------------------------------------------


def test_claims_never_exceed_the_free_slots_and_the_rest_wait_for_one() -> None:
    batch = [_job(n) for n in range(1, 6)]
    plan = planner.plan_due(batch, _minute(1), RULES, free=2, waiting={})
    assert [d.job.id for d in plan.claims] == [1, 2]  # in the order the store gave them
    assert all(d.fire is not None for d in plan.claims)
    assert [d.job.id for d in plan.waiting] == [3, 4, 5]
    assert plan.settled == []
    # The node remembers when each waiting occurrence was due, and forgets the ones that start.
    assert plan.remember == [(n, _minute(1)) for n in (3, 4, 5)]
    assert plan.forget == [1, 2]


def test_a_node_with_no_free_slot_claims_nothing() -> None:
    plan = planner.plan_due([_job(1), _job(2)], _minute(1), RULES, free=0, waiting={})
    assert plan.claims == []
    assert [d.job.id for d in plan.waiting] == [1, 2]


def test_a_waiting_occurrence_skipped_past_its_grace_is_late_not_missed() -> None:
    rules = engine.Rules("node-a", misfire_grace=timedelta(seconds=10))
    job = _job(7)  # due at 09:01 and 09:02; at 09:02:30 both are past their grace
    now = _minute(2, seconds=30)
    waited = planner.plan_due([job], now, rules, free=1, waiting={7: _minute(1)})
    assert waited.claims == [] and waited.waiting == []
    [decision] = waited.settled
    assert [a.transition for a in decision.alerts] == [Transition.LATE]
    assert decision.alerts[0].scheduled_for == _minute(1)
    assert waited.forget == [7]  # skipped: no longer waiting
    assert waited.skipped == 2
    # The same skip of an occurrence that never waited for a slot (the node was down) was missed.
    [unwaited] = planner.plan_due([job], now, rules, free=1, waiting={}).settled
    assert [a.transition for a in unwaited.alerts] == [Transition.MISSED]
    assert unwaited.events == decision.events and unwaited.job == decision.job


def test_late_leaves_a_decision_that_misses_nothing_alone() -> None:
    expired = engine.tend(_job(1), T0 + timedelta(days=2), RULES)
    assert [a.transition for a in expired.alerts] == [Transition.EXPIRED]
    assert planner.late(expired, _minute(1), T0 + timedelta(days=2)) is expired


def test_a_job_with_nothing_to_do_is_neither_settled_nor_claimed() -> None:
    job = _job(1)  # not due before 09:01: woken, say, for a lifetime check
    plan = planner.plan_due([job], T0, RULES, free=4, waiting={})
    assert (plan.settled, plan.claims, plan.waiting, plan.forget, plan.remember) == ([], [], [], [], [])


def test_a_job_whose_flights_run_on_a_peer_is_left_to_it() -> None:
    job, _ = _fire(_job(1, Overlap.ALLOW), _minute(1))
    peer = engine.Rules("node-b")
    plan = planner.plan_due([job, _job(2)], _minute(2), peer, free=4, waiting={})
    assert plan.left_to_peer
    assert [d.job.id for d in plan.claims] == [2]
    assert not planner.plan_due([_job(2)], _minute(2), peer, free=4, waiting={}).left_to_peer


# --- the reads of one pass ------------------------------------------------------------------------


def test_free_slots_count_unrecorded_runs_as_free_and_never_go_below_zero() -> None:
    assert planner.free_slots(4, in_flight=4, unrecorded=1) == 1
    assert planner.free_slots(4, in_flight=6, unrecorded=0) == 0


def test_a_read_takes_the_free_slots_or_a_chunk_more_once_settling_or_full() -> None:
    assert planner.read_limit(3, settling=False) == 3
    assert planner.read_limit(3, settling=True) == 3 + planner.DUE_CHUNK
    assert planner.read_limit(0, settling=False) == planner.DUE_CHUNK


def _plan(claims: int, waiting: int) -> planner.DuePlan:
    job = _job(1)
    firing = engine.tend(job, _minute(1), RULES)
    return planner.DuePlan(claims=[firing] * claims, waiting=[firing] * waiting)


def test_a_pass_stops_reading_when_nothing_more_is_due() -> None:
    assert not planner.reads_on(read=3, limit=4, fresh=3, plan=_plan(0, 0), free=4, wrote=True)


def test_a_pass_stops_reading_when_its_slots_run_out() -> None:
    # No slot was free, and some firing of the read found none:
    limit = planner.read_limit(0, settling=False)
    assert not planner.reads_on(read=limit, limit=limit, fresh=limit, plan=_plan(0, 1), free=0, wrote=True)
    # Every free slot was claimed:
    assert not planner.reads_on(read=4, limit=4, fresh=4, plan=_plan(4, 0), free=4, wrote=True)


def test_a_pass_that_read_nothing_new_reads_on_only_if_it_wrote() -> None:
    assert not planner.reads_on(read=4, limit=4, fresh=0, plan=_plan(0, 0), free=4, wrote=False)
    assert planner.reads_on(read=4, limit=4, fresh=0, plan=_plan(0, 0), free=4, wrote=True)


def test_a_pass_settling_a_full_read_with_slots_left_reads_on() -> None:
    limit = planner.read_limit(2, settling=True)
    assert planner.reads_on(read=limit, limit=limit, fresh=limit, plan=_plan(1, 0), free=2, wrote=True)
    # With no slot free at all, a full read of jobs to settle reads on too.
    assert planner.reads_on(read=64, limit=64, fresh=64, plan=_plan(0, 0), free=0, wrote=True)


# --- finished attempts ----------------------------------------------------------------------------


def test_outcomes_of_two_occurrences_of_one_job_become_one_decision() -> None:
    job, first = _fire(_job(1, Overlap.ALLOW), _minute(1))
    job, second = _fire(job, _minute(2))
    done: list[Finished] = [(first, OK), (second, OK)]
    plan = planner.plan_finished(done, {1: job}, unreadable=set(), now=_minute(3), rules=RULES)
    [(ended, decision)] = plan.decided
    assert ended == done
    # The second outcome was decided on the job as the first left it: both flights are over.
    assert decision.job.flights == () and decision.job.state is State.ACTIVE
    assert [run.fire_id for run in plan.runs] == [first.fire_id, second.fire_id]
    assert [e.fields["fire_id"] for e in decision.events if e.kind is EventKind.JOB_RUN] == [
        first.fire_id,
        second.fire_id,
    ]
    assert plan.gone == [] and plan.requeue == []


def test_a_deleted_job_s_outcome_is_history_only() -> None:
    _, occurrence = _fire(_job(1), _minute(1))
    done: list[Finished] = [(occurrence, OK)]
    plan = planner.plan_finished(done, {}, unreadable=set(), now=_minute(2), rules=RULES)
    assert plan.decided == []
    assert [(run.fire_id, run.node) for run in plan.runs] == [(occurrence.fire_id, "node-a")]
    assert plan.gone == done and plan.requeue == []


def test_an_outcome_whose_row_is_unreadable_is_requeued_not_taken_for_deleted() -> None:
    _, occurrence = _fire(_job(1), _minute(1))
    other, later = _fire(_job(2), _minute(1))
    done: list[Finished] = [(occurrence, OK), (later, OK)]
    plan = planner.plan_finished(done, {2: other}, unreadable={1}, now=_minute(2), rules=RULES)
    assert plan.requeue == [(occurrence, OK)]
    assert [ended for ended, _ in plan.decided] == [[(later, OK)]]
    assert [run.fire_id for run in plan.runs] == [later.fire_id]
    assert plan.gone == []
