"""Job.evolve, the copy every engine decision makes: it must agree with dataclasses.replace exactly."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import TypedDict

import pytest

from cronwright.core.model import AtSchedule, InFlight, Job, Misfire, State

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def a_job() -> Job:
    return Job(
        id=7,
        name="nightly",
        target="reports",
        action="daily",
        args={"day": "mon"},
        schedule=AtSchedule(T0),
        ends_at=T0 + timedelta(days=1),
        created_at=T0,
        updated_at=T0,
        next_run_at=T0,
        origin={"source": "cli"},
        version=3,
    )


class Changes(TypedDict, total=False):
    """Some of Job's fields, typed as Job declares them, so one dict can go to evolve and to replace."""

    state: State
    in_flight: InFlight | None
    occurrences: int
    misfire: Misfire


def test_evolve_changes_exactly_the_named_fields() -> None:
    job = a_job()
    flight = InFlight("7-1", T0, 1, T0, "node-a")
    changes: Changes = {
        "state": State.RUNNING,
        "in_flight": flight,
        "occurrences": 1,
        "misfire": Misfire.COALESCE,
    }

    evolved = job.evolve(**changes)

    assert evolved == replace(job, **changes)
    for item in fields(Job):
        expected = changes.get(item.name, getattr(job, item.name))
        assert getattr(evolved, item.name) is expected, item.name
    assert job.state is State.ACTIVE  # the original is untouched


def test_evolve_with_no_changes_is_an_equal_copy() -> None:
    job = a_job()
    assert job.evolve() == job


def test_evolve_refuses_a_field_that_does_not_exist() -> None:
    with pytest.raises(TypeError, match="no field 'nme'"):
        a_job().evolve(nme="typo")
