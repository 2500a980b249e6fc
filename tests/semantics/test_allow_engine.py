"""Semantic 34, overlap allow, in the pure engine: an occurrence that comes due while others of the job
are in flight starts beside them, with its own fire_id; each outcome settles its own occurrence only; the
job ends (expires, is done) only once the last of them is recorded. skip and buffer_one are unchanged."""

from __future__ import annotations

from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry

from conftest import at
from cronwright.core import engine
from cronwright.core.events import EventKind
from cronwright.core.model import (
    AtSchedule,
    EverySchedule,
    Job,
    Occurrence,
    Outcome,
    Overlap,
    PausedBy,
    Result,
    State,
)
from cronwright.errors import JobRunning
from cronwright.telemetry.sinks import MetricsSink

T0 = at("2026-03-02T09:00:00+01:00")
RULES = engine.Rules("node-a")
OK = Result(Outcome.OK, "fine", 5)


def _job(overlap: Overlap = Overlap.ALLOW, ends_at: datetime | None = None, **changes: object) -> Job:
    job = Job(
        1,
        "long",
        "reports",
        "daily",
        {},
        EverySchedule(timedelta(minutes=1)),
        ends_at or T0 + timedelta(days=1),
        T0,
        T0,
        overlap=overlap,
    )
    return engine.arm(job.evolve(**changes), T0)


def _minute(n: int) -> datetime:
    return T0 + timedelta(minutes=n)


def _fire(job: Job, now: datetime, rules: engine.Rules = RULES) -> tuple[Job, Occurrence]:
    decision = engine.tend(job, now, rules)
    assert decision.fire is not None, decision
    return decision.job, decision.fire


def _finish(job: Job, occurrence: Occurrence, now: datetime, result: Result = OK) -> engine.Decision:
    decision = engine.finish(job, occurrence, result, now, RULES)
    assert decision is not None
    return decision


def test_an_occurrence_due_while_one_runs_starts_beside_it_with_its_own_fire_id() -> None:
    job, first = _fire(_job(), _minute(1))
    decision = engine.tend(job, _minute(2), RULES)
    assert decision.fire is not None
    second = decision.fire
    assert (first.fire_id, second.fire_id) == ("1-1", "1-2")
    both = decision.job
    assert both.state is State.RUNNING
    assert [f.fire_id for f in both.flights] == ["1-1", "1-2"]
    assert (both.overlapped, both.skipped_overlap, both.next_run_at) == (1, 0, _minute(3))
    assert [e.kind for e in decision.events] == [EventKind.JOB_OVERLAPPED]


def test_each_outcome_settles_its_own_occurrence_and_the_job_runs_on_with_the_rest() -> None:
    job, first = _fire(_job(), _minute(1))
    job, second = _fire(job, _minute(2))
    after_second = _finish(job, second, _minute(2) + timedelta(seconds=30)).job
    assert after_second.state is State.RUNNING
    assert [f.fire_id for f in after_second.flights] == ["1-1"]
    assert after_second.last_run is not None and after_second.last_run.fire_id == "1-2"
    after_first = _finish(after_second, first, _minute(2) + timedelta(seconds=40)).job
    assert (after_first.state, after_first.flights) == (State.ACTIVE, ())
    assert after_first.last_run is not None and after_first.last_run.fire_id == "1-1"


def test_a_late_result_of_an_occurrence_already_settled_changes_nothing() -> None:
    job, _first = _fire(_job(), _minute(1))
    job, second = _fire(job, _minute(2))
    job = _finish(job, second, _minute(3)).job
    again = _finish(job, second, _minute(3))  # the same attempt again: it is not in flight any more
    assert (again.job, again.runs) == (job, ())


def test_no_fire_id_is_claimed_twice_however_the_flights_interleave() -> None:
    job = _job()
    fired: list[str] = []
    flying: list[Occurrence] = []
    for minute in range(1, 30):
        decision = engine.tend(job, _minute(minute), RULES)
        job = decision.job
        if decision.fire is not None:
            fired.append(decision.fire.fire_id)
            flying.append(decision.fire)
        if minute % 3 == 0:  # every third minute the oldest flight ends
            job = _finish(job, flying.pop(0), _minute(minute)).job
    assert len(fired) == len(set(fired)) == 29
    assert [f.fire_id for f in job.flights] == [o.fire_id for o in flying]


def test_a_failed_occurrence_retries_beside_the_others_on_its_own_fire_id() -> None:
    job, first = _fire(_job(max_attempts=2, retry_backoff_ms=10_000), _minute(1))
    job, _second = _fire(job, _minute(2))
    failed = Result(Outcome.ERROR, "boom", 1)
    job = _finish(job, first, _minute(2) + timedelta(seconds=1), failed).job
    waiting = job.flight("1-1")
    assert waiting is not None and waiting.retry_at == _minute(2) + timedelta(seconds=11)
    assert job.wake_at() == waiting.retry_at  # before the next occurrence, 09:03
    decision = engine.tend(job, _minute(2) + timedelta(seconds=12), RULES)
    assert decision.fire is not None
    assert (decision.fire.fire_id, decision.fire.attempt) == ("1-1", 2)
    assert [f.fire_id for f in decision.job.flights] == ["1-1", "1-2"]


def test_a_retry_and_a_due_occurrence_in_one_pass_start_one_now_and_one_at_the_next() -> None:
    job, first = _fire(_job(max_attempts=2, retry_backoff_ms=1000), _minute(1))
    job = _finish(job, first, _minute(1) + timedelta(seconds=30), Result(Outcome.ERROR, "boom")).job
    retried = engine.tend(job, _minute(2), RULES)
    assert retried.fire is not None and (retried.fire.fire_id, retried.fire.attempt) == ("1-1", 2)
    assert retried.job.next_run_at == _minute(2)  # still due: a decision starts one attempt
    beside = engine.tend(retried.job, _minute(2) + timedelta(seconds=1), RULES)
    assert beside.fire is not None and beside.fire.fire_id == "1-2"


def test_the_job_expires_only_when_its_last_flight_is_recorded() -> None:
    job, first = _fire(_job(ends_at=_minute(2) + timedelta(seconds=30)), _minute(1))
    job, second = _fire(job, _minute(2))
    assert job.next_run_at is None  # 09:03 is past the end
    past_end = _minute(3)
    assert engine.tend(job, past_end, RULES).job == job  # running: nothing expires meanwhile
    job = _finish(job, first, past_end).job
    assert job.state is State.RUNNING
    ended = _finish(job, second, past_end)
    assert ended.job.state is State.EXPIRED
    assert EventKind.JOB_EXPIRED in [e.kind for e in ended.events]


def test_the_breaker_counts_each_failed_occurrence_and_pauses_once_none_is_in_flight() -> None:
    job = _job(breaker_threshold=2)
    job, first = _fire(job, _minute(1))
    job, second = _fire(job, _minute(2))
    failed = Result(Outcome.ERROR, "boom")
    job = _finish(job, first, _minute(2), failed).job
    assert (job.consecutive_failures, job.state) == (1, State.RUNNING)
    job = _finish(job, second, _minute(2), failed).job
    assert (job.consecutive_failures, job.state, job.paused_by) == (2, State.PAUSED, PausedBy.BREAKER)


def test_a_one_shot_allow_job_runs_once() -> None:
    job = _job().evolve(schedule=AtSchedule(_minute(1)))
    job = engine.arm(job, T0)
    job, only = _fire(job, _minute(1))
    assert engine.tend(job, _minute(5), RULES).fire is None
    assert _finish(job, only, _minute(5)).job.state is State.DONE


def test_another_node_leaves_an_allow_job_whose_flights_run_elsewhere_alone() -> None:
    job, _ = _fire(_job(), _minute(1))
    other = engine.Rules("node-b")
    assert engine.held_elsewhere(job, other) and not engine.held_elsewhere(job, RULES)
    decision = engine.tend(job, _minute(2), other)
    assert (decision.fire, decision.job) == (None, job)  # nothing skipped, nothing claimed: still due
    assert engine.tend(job, _minute(2), RULES).fire is not None  # its own node starts it


def test_a_dead_node_is_found_with_every_flight_it_ran_and_each_is_interrupted() -> None:
    job, _first = _fire(_job(max_attempts=2), _minute(1))
    job, _second = _fire(job, _minute(2))
    decision = engine.interrupt(job, _minute(5), engine.Rules("node-b"), "node-a died")
    assert sorted((r.fire_id, r.outcome, r.node) for r in decision.runs) == [
        ("1-1", Outcome.INTERRUPTED, "node-a"),
        ("1-2", Outcome.INTERRUPTED, "node-a"),
    ]
    assert (decision.job.state, decision.job.flights) == (State.ACTIVE, ())


def test_a_waiting_retry_survives_the_interruption_of_its_node_s_other_flights() -> None:
    job, first = _fire(_job(max_attempts=2, retry_backoff_ms=60_000), _minute(1))
    job, _second = _fire(job, _minute(2))
    job = _finish(job, first, _minute(2), Result(Outcome.ERROR, "boom")).job  # 1-1 waits for 09:03
    decision = engine.interrupt(job, _minute(2) + timedelta(seconds=5), engine.Rules("node-b"), "died")
    assert [r.fire_id for r in decision.runs] == ["1-2"]
    assert [f.fire_id for f in decision.job.flights] == ["1-1"] and decision.job.state is State.RUNNING


def test_claims_never_started_are_given_back_and_the_oldest_is_due_again() -> None:
    job, _first = _fire(_job(), _minute(1))
    job, _second = _fire(job, _minute(2))
    job, _third = _fire(job, _minute(3))
    released = engine.release_all(job, ["1-2", "1-3"])
    assert [f.fire_id for f in released.flights] == ["1-1"]
    assert (released.state, released.next_run_at, released.occurrences) == (State.RUNNING, _minute(2), 3)
    again = engine.tend(released, _minute(3), RULES)
    # 1-2 and 1-3 never ran, but fire_ids only move forward: 1-2 names the 09:02 claim and nothing else.
    assert again.fire is not None and again.fire.fire_id == "1-4"


def test_giving_back_a_claim_below_a_started_one_never_reuses_a_fire_id() -> None:
    job, _first = _fire(_job(), _minute(1))
    job, _second = _fire(job, _minute(2))
    released = engine.release(job, "1-1")  # 1-1 never started; 1-2 runs
    assert [f.fire_id for f in released.flights] == ["1-2"] and released.occurrences == 2
    again = engine.tend(released, _minute(2) + timedelta(seconds=10), RULES)
    assert again.fire is not None and again.fire.fire_id == "1-3"


def test_run_now_is_refused_while_an_allow_job_runs() -> None:
    job, _ = _fire(_job(), _minute(1))
    try:
        engine.run_now(job, _minute(1), RULES)
    except JobRunning as refusal:
        assert refusal.code == "job_running"
    else:
        raise AssertionError("run_now started a second occurrence beside the running one")


def test_skip_and_buffer_one_still_keep_one_occurrence_in_flight() -> None:
    skip, _ = _fire(_job(Overlap.SKIP), _minute(1))
    skipped = engine.tend(skip, _minute(2), RULES)
    assert skipped.fire is None and len(skipped.job.flights) == 1 and skipped.job.skipped_overlap == 1
    buffer, _ = _fire(_job(Overlap.BUFFER_ONE), _minute(1))
    buffered = engine.tend(buffer, _minute(2), RULES)
    assert buffered.fire is None and len(buffered.job.flights) == 1
    assert (buffered.job.buffered_for, buffered.job.overlapped) == (_minute(2), 0)


def test_each_occurrence_started_beside_another_is_counted_in_the_metrics() -> None:
    registry = CollectorRegistry()
    sink = MetricsSink(registry)
    assert registry.get_sample_value("cronwright_overlapped_total") == 0
    job, _ = _fire(_job(), _minute(1))
    for minute in (2, 3):
        decision = engine.tend(job, _minute(minute), RULES)
        job = decision.job
        for event in decision.events:
            sink.emit(event)
    assert registry.get_sample_value("cronwright_overlapped_total") == 2 == job.overlapped
