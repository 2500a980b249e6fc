"""What happened to a job: the event types the pure core emits (engine/), and the seam they leave by.

The sinks that tell them to structured logs and Prometheus belong to the shell (telemetry/sinks.py), so
that importing the engine never imports prometheus_client.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class EventKind(StrEnum):
    JOB_RUN = "job_run"
    JOB_RUN_FAILED = "job_run_failed"
    JOB_BREAKER_PAUSED = "job_breaker_paused"
    JOB_SKIPPED = "job_skipped"
    JOB_BUFFERED = "job_buffered"  # an occurrence waits for the running one (overlap buffer_one)
    JOB_CANCELLED = "job_cancelled"  # overlap replace stops the occurrence in flight for a newer one
    JOB_OVERLAPPED = "job_overlapped"  # an occurrence started beside others in flight (overlap allow)
    JOB_BACKFILLED = "job_backfilled"  # a backfilled occurrence starts (semantic 35)
    JOB_EXPIRED = "job_expired"
    JOB_PERSISTENCE_FAILED = "job_persistence_failed"
    JOB_PERSISTENCE_RECOVERED = "job_persistence_recovered"


# Every `reason` a job_skipped event carries: the metrics start each at 0.
SKIP_REASONS = ("misfire", "overlap", "schedule_error", "calendar")


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    job_id: int | None
    job_name: str | None
    fields: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        # `_value_`, the member's value as stored: `.value` goes through enum's property, and was half the
        # cost of this dict, built for every event a node logs.
        return {"event": self.kind._value_, "job_id": self.job_id, "job": self.job_name, **self.fields}


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class MemorySink:
    """Keeps every event; for tests and for embedding."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def kinds(self) -> list[EventKind]:
        return [event.kind for event in self.events]


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
