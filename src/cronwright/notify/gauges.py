"""The Prometheus series alert rules are written against (semantic 39), read from the store at scrape time.

Per job (the first `per_job_metrics` jobs by id, so the series stay bounded and stable from scrape to
scrape): `cronwright_job_next_run_timestamp_seconds`, `cronwright_job_last_success_timestamp_seconds`,
`cronwright_job_last_run_outcome` (1, labelled with the outcome) and `cronwright_job_period_seconds` (the
gap to the occurrence after next, so a rule can say "no success within two periods"). They are as large as
the jobs they cover, by definition: a scrape reads those jobs once, and decodes none beyond them. Per node:
`cronwright_last_pass_timestamp_seconds` and `cronwright_persistence_degraded` (1 while a save failed and
jobs wait in memory for the next one, semantic 18). Jobs are labelled `name` and `target` (target.action);
the label is not `job`, which Prometheus keeps for the scrape job.

A scrape decodes only the jobs that changed since the last one: the store tells the first jobs' ids and
versions from two columns (`first_versions_by_id`), each job's samples are kept with the version they were
worked out from (its period is a cron walk), and `render` writes the per-job series as text kept per job,
the same text prometheus_client writes from `collect` (which stays, for any registry). A store that cannot
tell versions (writes waiting in memory) has its first jobs decoded as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from cronwright.core import engine
from cronwright.core.model import AtSchedule, Job, Outcome, Persistence, Run


class Reads(Protocol):
    """What the gauges read of a store (the node's, or a bare one). `first_versions_by_id` tells which
    jobs changed without decoding them; None when it cannot tell now (writes waiting in memory), and the
    gauges then decode `first_by_id`."""

    def first_by_id(self, limit: int) -> list[Job]: ...

    def first_versions_by_id(self, limit: int) -> list[tuple[int, int]] | None: ...

    def get_many(self, job_ids: Sequence[int]) -> dict[int, Job]: ...

    def runs(self, job_id: int | None = None, limit: int = 100) -> list[Run]: ...


# The per-job families, in the order they are written: name, help, and whether the outcome is a label.
FAMILIES = (
    ("cronwright_job_next_run_timestamp_seconds", "When the job next comes due."),
    (
        "cronwright_job_last_success_timestamp_seconds",
        "When the job's newest ok run ended (absent before its first).",
    ),
    ("cronwright_job_last_run_outcome", "1 for the outcome of the job's last run."),
    ("cronwright_job_period_seconds", "The gap between the job's next two occurrences."),
)


@dataclass(frozen=True)
class Series:
    """One version of a job's samples, worked out once (its period is a cron walk), and the same as
    exposition text: a string a family, empty where the job has no sample in it."""

    names: tuple[str, str]
    values: tuple[float | None, float | None, str | None, float | None]  # next, success, outcome, period
    lines: tuple[str, str, str, str]


def series_of(job: Job, succeeded: float | None) -> Series:
    names = (job.name, f"{job.target}.{job.action}")
    next_run = job.next_run_at.timestamp() if job.next_run_at is not None else None
    period = _period(job, job.next_run_at) if job.next_run_at is not None else None
    outcome = job.last_run.outcome.value if job.last_run is not None else None
    labels = f'name="{_escape(names[0])}",target="{_escape(names[1])}"'
    with_outcome = (
        f'name="{_escape(names[0])}",outcome="{_escape(outcome or "")}",target="{_escape(names[1])}"'
    )

    def line(family: int, value: float | None, label_text: str = labels) -> str:
        if value is None:
            return ""
        return f"{FAMILIES[family][0]}{{{label_text}}} {_number(value)}\n"

    lines = (
        line(0, next_run),
        line(1, succeeded),
        line(2, 1.0 if outcome is not None else None, with_outcome),
        line(3, period),
    )
    return Series(names, (next_run, succeeded, outcome, period), lines)


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
        # Each covered job's samples by id, with the version they were worked out from.
        self._kept: dict[int, tuple[int, Series]] = {}
        self._text: tuple[list[tuple[int, int]], bytes] | None = None  # the last per-job text, and its jobs
        self._lock = threading.Lock()

    def collect(self) -> Iterable[Metric]:
        yield from self._node_families()
        with self._lock:
            every = self._series()
        yield from self._families(every)

    def render(self) -> bytes:
        """What `generate_latest` of a registry holding only these gauges writes, without building the
        per-job families: each job's lines are kept with its version, and reused while it stays."""

        with self._lock:  # scrapes may come at once (each on a thread of the server's pool)
            return generate_latest(_Listed(list(self._node_families()))) + self._per_job_text()

    def _node_families(self) -> Iterable[Metric]:
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

    def _per_job_text(self) -> bytes:
        versions = self._versions()
        if versions is not None and self._text is not None and self._text[0] == versions:
            return self._text[1]  # not one of the jobs changed since the last scrape
        every = self._series(versions)
        parts: list[str] = []
        for family, (name, documentation) in enumerate(FAMILIES):
            parts.append(f"# HELP {name} {documentation}\n# TYPE {name} gauge\n")
            parts.extend(series.lines[family] for series in every)
        text = "".join(parts).encode()
        self._text = (versions, text) if versions is not None else None
        return text

    def _versions(self) -> list[tuple[int, int]] | None:
        if self._limit <= 0:
            return []
        return self._store.first_versions_by_id(self._limit)

    def _series(self, versions: list[tuple[int, int]] | None = None) -> list[Series]:
        """The covered jobs' samples, by id: from what is kept, decoding only the jobs whose version moved
        (every one of them when the store cannot tell versions)."""
        if versions is None:
            versions = self._versions()
        if versions is None:
            jobs = self._store.first_by_id(self._limit) if self._limit > 0 else []
            self._kept = {job.id: (job.version, series_of(job, self._last_success(job))) for job in jobs}
            return [series for _, series in self._kept.values()]
        stale = [job_id for job_id, version in versions if self._kept.get(job_id, (None,))[0] != version]
        fresh = self._store.get_many(stale) if stale else {}
        kept: dict[int, tuple[int, Series]] = {}
        for job_id, version in versions:
            if job_id in fresh:
                job = fresh[job_id]
                kept[job_id] = (job.version, series_of(job, self._last_success(job)))
            elif job_id in self._kept and self._kept[job_id][0] == version:
                kept[job_id] = self._kept[job_id]
            # else: gone, or unreadable, between the two reads: left out of this scrape
        self._kept = kept
        return [series for _, series in kept.values()]

    def _families(self, every: list[Series]) -> Iterable[GaugeMetricFamily]:
        labels = ["name", "target"]
        found = [
            GaugeMetricFamily(name, documentation, labels=[*labels, "outcome"] if index == 2 else labels)
            for index, (name, documentation) in enumerate(FAMILIES)
        ]
        for series in every:
            names = list(series.names)
            next_run, success, outcome, period = series.values
            if next_run is not None:
                found[0].add_metric(names, next_run)
            if success is not None:
                found[1].add_metric(names, success)
            if outcome is not None:
                found[2].add_metric([*names, outcome], 1)
            if period is not None:
                found[3].add_metric(names, period)
        yield from found

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


class _Listed:
    """Families already made, as a collector `generate_latest` can write."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


# prometheus_client's own writing of a sample's value (Go's float format), so the text stays the same.
_number: Callable[[float], str] = floatToGoString


def _escape(value: str) -> str:
    """A label value as the text format writes it (prometheus_client's escaping, for UTF-8 values)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _ended(started: datetime, took_ms: int) -> float:
    """When a run ended, by its own clock: its start plus what it took (not when a pass recorded it)."""
    return started.timestamp() + took_ms / 1000


def _period(job: Job, due: datetime) -> float | None:
    if isinstance(job.schedule, AtSchedule):
        return None
    after = engine.upcoming(job.evolve(next_run_at=due), due)
    return (after - due).total_seconds() if after is not None else None
