"""What happened to a job, told to structured logs, a pluggable sink and Prometheus counters."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram


class EventKind(StrEnum):
    JOB_RUN = "job_run"
    JOB_RUN_FAILED = "job_run_failed"
    JOB_BREAKER_PAUSED = "job_breaker_paused"
    JOB_SKIPPED = "job_skipped"
    JOB_EXPIRED = "job_expired"
    JOB_PERSISTENCE_FAILED = "job_persistence_failed"
    JOB_PERSISTENCE_RECOVERED = "job_persistence_recovered"


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    job_id: int | None
    job_name: str | None
    fields: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"event": self.kind.value, "job_id": self.job_id, "job": self.job_name, **self.fields}


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class LogSink:
    """One JSON line per event on the `cronwright.events` logger."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._logger = logger or logging.getLogger("cronwright.events")

    def emit(self, event: Event) -> None:
        level = logging.INFO if event.kind in (EventKind.JOB_RUN, EventKind.JOB_SKIPPED) else logging.WARNING
        self._logger.log(level, json.dumps(event.as_dict(), default=str, sort_keys=True))


class MemorySink:
    """Keeps every event; for tests and for embedding."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def kinds(self) -> list[EventKind]:
        return [event.kind for event in self.events]


# Runs last from milliseconds (an http ping) to hours (a backup): buckets from 50ms to 6h.
RUN_SECONDS_BUCKETS = (0.05, 0.25, 1, 5, 15, 60, 300, 900, 3600, 6 * 3600, float("inf"))


class MetricsSink:
    """Prometheus counters, one per event kind, labelled where a label has few values."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.runs = Counter(
            "cronwright_runs", "Attempts finished, by outcome.", ["outcome"], registry=registry
        )
        self.run_seconds = Histogram(
            "cronwright_run_duration_seconds",
            "How long finished attempts took, by outcome.",
            ["outcome"],
            buckets=RUN_SECONDS_BUCKETS,
            registry=registry,
        )
        self.skips = Counter(
            "cronwright_skips", "Occurrences skipped, by reason.", ["reason"], registry=registry
        )
        self.breaker_pauses = Counter(
            "cronwright_breaker_pauses", "Jobs paused by the failure breaker.", registry=registry
        )
        self.expirations = Counter("cronwright_expirations", "Jobs whose lifetime ended.", registry=registry)
        self.persistence_failures = Counter(
            "cronwright_persistence_failures",
            "Saves that failed and left a job in memory only.",
            registry=registry,
        )

    def emit(self, event: Event) -> None:
        if event.kind is EventKind.JOB_RUN:
            outcome = str(event.fields.get("outcome", "unknown"))
            self.runs.labels(outcome=outcome).inc()
            took_ms = event.fields.get("took_ms")
            if isinstance(took_ms, int) and not isinstance(took_ms, bool):
                self.run_seconds.labels(outcome=outcome).observe(max(0, took_ms) / 1000)
        elif event.kind is EventKind.JOB_SKIPPED:
            count = event.fields.get("count", 1)
            self.skips.labels(reason=str(event.fields.get("reason", "unknown"))).inc(
                count if isinstance(count, int) else 1
            )
        elif event.kind is EventKind.JOB_BREAKER_PAUSED:
            self.breaker_pauses.inc()
        elif event.kind is EventKind.JOB_EXPIRED:
            self.expirations.inc()
        elif event.kind is EventKind.JOB_PERSISTENCE_FAILED:
            self.persistence_failures.inc()


class FanOut:
    """Sends each event to every sink; one failing sink never silences the others or the node."""

    def __init__(self, sinks: Iterable[EventSink]) -> None:
        self._sinks = list(sinks)
        self._log = logging.getLogger("cronwright.events")

    def emit(self, event: Event) -> None:
        for sink in self._sinks:
            try:
                sink.emit(event)
            except Exception:
                self._log.exception("event sink %r failed on %s", sink, event.kind.value)
