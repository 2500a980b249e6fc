"""The job codec: what a store writes for a job reads back as that very job."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from cronwright.core.model import (
    _JOB_FIELDS,
    AtSchedule,
    EverySchedule,
    InFlight,
    Job,
    LastRun,
    Misfire,
    Outcome,
    Overlap,
    PausedBy,
    State,
)
from cronwright.store.codec import encode, job_data, read_job

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)

instants = st.integers(min_value=-(10**12), max_value=10**13).map(lambda us: T0 + timedelta(microseconds=us))
maybe = st.none() | instants
counts = st.integers(min_value=0, max_value=2**40)
texts = st.text(max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
flights = st.builds(
    InFlight,
    fire_id=texts,
    scheduled_for=instants,
    attempt=counts,
    started_at=instants,
    node=st.none() | texts,
    manual=st.booleans(),
    retry_at=maybe,
    handed_off=st.booleans(),
    nominal=maybe,
    cancel=st.booleans(),
)


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    in_flight = draw(st.none() | flights)
    return Job(
        id=draw(st.integers(min_value=1, max_value=2**62)),
        name=draw(texts),
        target=draw(texts),
        action=draw(texts),
        args=draw(st.dictionaries(texts, json_values, max_size=4)),
        schedule=draw(
            st.builds(AtSchedule, instants)
            | st.builds(
                EverySchedule,
                st.integers(min_value=1, max_value=10**9).map(lambda ms: timedelta(milliseconds=ms)),
                st.none() | st.integers(1, 10**6).map(lambda ms: timedelta(milliseconds=ms)),
                st.lists(texts, max_size=2).map(tuple),
            )
        ),
        ends_at=draw(instants),
        created_at=draw(instants),
        updated_at=draw(instants),
        created_by=draw(texts),
        state=draw(st.sampled_from(State)),
        paused_by=draw(st.none() | st.sampled_from(PausedBy)),
        pause_note=draw(st.none() | texts),
        paused_at=draw(maybe),
        next_run_at=draw(maybe),
        next_nominal=draw(maybe),
        last_run=draw(
            st.none() | st.builds(LastRun, texts, instants, counts, st.sampled_from(Outcome), texts, counts)
        ),
        consecutive_failures=draw(counts),
        skipped_overlap=draw(counts),
        skipped_misfire=draw(counts),
        skipped_calendar=draw(counts),
        overlap=draw(st.sampled_from(Overlap)),
        buffered_for=draw(maybe),
        buffered_nominal=draw(maybe),
        buffered=draw(counts),
        cancelled=draw(counts),
        backfill=tuple(draw(st.lists(instants, max_size=3))),
        backfill_covered=tuple(draw(st.lists(st.tuples(instants, instants), max_size=2))),
        backfilled=draw(counts),
        misfire=draw(st.sampled_from(Misfire)),
        max_attempts=draw(counts),
        retry_backoff_ms=draw(counts),
        breaker_threshold=draw(counts),
        dedupe_key=draw(st.none() | texts),
        once=draw(st.booleans()),
        origin=draw(st.dictionaries(texts, st.none() | st.booleans() | st.integers() | texts, max_size=3)),
        in_flight=in_flight,
        alongside=() if in_flight is None else tuple(draw(st.lists(flights, max_size=2))),
        overlapped=draw(counts),
        occurrences=draw(counts),
        version=draw(counts),
    )


@settings(max_examples=300)
@given(jobs())
def test_a_job_reads_back_from_its_record_as_itself(job: Job) -> None:
    read = read_job(json.loads(encode(job_data(job))))
    # The one field a record leaves out when it says nothing: a timetable instant equal to next_run_at.
    expected = job if job.nominal_next != job.next_run_at else job.evolve(next_nominal=None)
    assert read == expected
    # Job.stored fills the fields itself: exactly Job's, none missing and none more.
    assert read.__dict__.keys() == _JOB_FIELDS
