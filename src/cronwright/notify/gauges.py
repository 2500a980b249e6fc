"""The Prometheus series alert rules are written against (semantic 39), read from the store at scrape time.

Per job (the first `per_job_metrics` jobs by id, so the series stay bounded and stable from scrape to
scrape): `cronwright_job_next_run_timestamp_seconds`, `cronwright_job_last_success_timestamp_seconds`,
`cronwright_job_last_run_outcome` (1, labelled with the outcome) and `cronwright_job_period_seconds` (the
gap to the occurrence after next, so a rule can say "no success within two periods"). They are as large as
the jobs they cover, by definition: a scrape reads those jobs once, and decodes none beyond them. Per node:
`cronwright_last_pass_timestamp_seconds` and `cronwright_persistence_degraded` (1 while a save failed and
jobs wait in memory for the next one, semantic 18). Jobs are labelled `name` and `target` (target.action);
the label is not `job`, which Prometheus keeps for the scrape job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Protocol

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from cronwright.core import engine
from cronwright.core.model import AtSchedule, Job, Outcome, Persistence, Run


class Reads(Protocol):
    """What the gauges read of a store (the node's, or a bare one)."""

    def first_by_id(self, limit: int) -> list[Job]: ...

    def runs(self, job_id: int | None = None, limit: int = 100) -> list[Run]: ...


class AlertGauges(Collector):
    def __init__(
        self,
        store: Reads,
        last_pass: Callable[[], datetime | None],
        limit: int,
        persistence: Callable[[], Persistence] | None = None,
    ) -> None:
        """`last_pass` tells when this node last finished a scheduling pass, `persistence` the store's
        state (semantic 18), and `limit` bounds the jobs."""
        self._store = store
        self._last_pass = last_pass
        self._persistence = persistence
        self._limit = limit
        # The newest ok run of a job whose last run failed, by (job id, last fire id, attempt): found in
        # its history once, not at every scrape.
        self._success: dict[tuple[int, str, int], float | None] = {}

    def collect(self) -> Iterable[GaugeMetricFamily]:
        passed = self._last_pass()
        last_pass = GaugeMetricFamily(
            "cronwright_last_pass_timestamp_seconds", "When this node last finished a scheduling pass."
        )
        if passed is not None:
            last_pass.add_metric([], passed.timestamp())
        yield last_pass
        if self._persistence is not None:
            yield GaugeMetricFamily(
                "cronwright_persistence_degraded",
                "1 while a save failed and jobs wait in memory for the next one.",
                value=float(self._persistence() is Persistence.DEGRADED),
            )
        yield from self._per_job(self._jobs())

    def _jobs(self) -> list[Job]:
        if self._limit <= 0:
            return []
        return self._store.first_by_id(self._limit)

    def _per_job(self, jobs: list[Job]) -> Iterable[GaugeMetricFamily]:
        labels = ["name", "target"]
        next_run = GaugeMetricFamily(
            "cronwright_job_next_run_timestamp_seconds", "When the job next comes due.", labels=labels
        )
        success = GaugeMetricFamily(
            "cronwright_job_last_success_timestamp_seconds",
            "When the job's newest ok run ended (absent before its first).",
            labels=labels,
        )
        outcome = GaugeMetricFamily(
            "cronwright_job_last_run_outcome",
            "1 for the outcome of the job's last run.",
            labels=[*labels, "outcome"],
        )
        period = GaugeMetricFamily(
            "cronwright_job_period_seconds", "The gap between the job's next two occurrences.", labels=labels
        )
        for job in jobs:
            names = [job.name, f"{job.target}.{job.action}"]
            if job.next_run_at is not None:
                next_run.add_metric(names, job.next_run_at.timestamp())
                gap = _period(job, job.next_run_at)
                if gap is not None:
                    period.add_metric(names, gap)
            if job.last_run is not None:
                outcome.add_metric([*names, job.last_run.outcome.value], 1)
            succeeded = self._last_success(job)
            if succeeded is not None:
                success.add_metric(names, succeeded)
        yield from (next_run, success, outcome, period)

    def _last_success(self, job: Job) -> float | None:
        last = job.last_run
        if last is None:
            return None
        if last.outcome is Outcome.OK:
            return _ended(last.fired_at, last.took_ms)
        key = (job.id, last.fire_id, last.attempt)
        if key not in self._success:
            found = next((run for run in self._store.runs(job.id) if run.outcome is Outcome.OK), None)
            self._success = {k: v for k, v in self._success.items() if k[0] != job.id}
            self._success[key] = _ended(found.started_at, found.took_ms) if found else None
        return self._success[key]


def _ended(started: datetime, took_ms: int) -> float:
    """When a run ended, by its own clock: its start plus what it took (not when a pass recorded it)."""
    return started.timestamp() + took_ms / 1000


def _period(job: Job, due: datetime) -> float | None:
    if isinstance(job.schedule, AtSchedule):
        return None
    after = engine.upcoming(job.evolve(next_run_at=due), due)
    return (after - due).total_seconds() if after is not None else None
