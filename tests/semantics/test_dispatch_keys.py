"""The dispatcher keys its runs by occurrence (job id, fire_id), not by job: two occurrences of one job
(overlap allow) are two runs in flight, each with its own slot, freed when its own outcome is recorded."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from conftest import ScriptedRunner, at
from cronwright.core.model import AtSchedule, Job, Occurrence
from cronwright.node.dispatch import Dispatcher

T0 = at("2026-03-02T09:00:00+01:00")
SAMPLE = Job(7, "long", "reports", "daily", {}, AtSchedule(T0), T0 + timedelta(days=1), T0, T0)


def _occurrence(job: Job, sequence: int, instant: datetime) -> Occurrence:
    return Occurrence(job.id, f"{job.id}-{sequence}", instant, 1, instant, job_name=job.name)


def test_two_occurrences_of_one_job_are_two_runs_in_flight() -> None:
    gate = threading.Event()
    runner = ScriptedRunner(hold={SAMPLE.name: gate})
    runs = Dispatcher(runner, 4, lambda: None, threading.Event())
    first = _occurrence(SAMPLE, 1, at("2026-03-02T09:01:00+01:00"))
    second = _occurrence(SAMPLE, 2, at("2026-03-02T09:02:00+01:00"))
    try:
        runs.start(SAMPLE, first)
        runs.start(SAMPLE, second)
        assert runs.in_flight() == 2 and runs.runs(SAMPLE.id)
        gate.set()
        for future in runs.futures():
            future.result(10)
        finished = runs.drain()
        assert sorted(o.fire_id for o, _ in finished) == [first.fire_id, second.fire_id]
        runs.freed([item for item in finished if item[0].fire_id == first.fire_id])
        assert runs.in_flight() == 1 and runs.runs(SAMPLE.id)  # the second's slot is still taken
        runs.freed(finished)
        assert runs.in_flight() == 0 and not runs.runs(SAMPLE.id)
    finally:
        gate.set()
        runs.shutdown()
