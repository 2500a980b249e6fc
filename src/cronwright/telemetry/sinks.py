"""The shell's event sinks: structured logs (one record per event, its fields attached for logs.py) and
Prometheus counters, each labelled counter started at 0 for every value its label can take."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from cronwright.core.events import SKIP_REASONS, Event, EventKind
from cronwright.core.model import Outcome
from cronwright.telemetry.logs import FIELDS

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

# Runs last from milliseconds (an http ping) to hours (a backup): buckets from 50ms to 6h.
RUN_SECONDS_BUCKETS = (0.05, 0.25, 1, 5, 15, 60, 300, 900, 3600, 6 * 3600, float("inf"))
# Normal operation logs at info; the rest (a failed run, a breaker, a degraded store...) at warning.
_INFO = (
    EventKind.JOB_RUN,
    EventKind.JOB_SKIPPED,
    EventKind.JOB_PERSISTENCE_RECOVERED,
    EventKind.JOB_BUFFERED,
    EventKind.JOB_CANCELLED,  # overlap replace at work: the policy, not a fault
    EventKind.JOB_OVERLAPPED,
    EventKind.JOB_BACKFILLED,
)


class LogSink:
    """One record per event on the `cronwright.events` logger: its message the event as JSON, and its fields
    as the record's `fields`, which logs.py writes as one JSON line (semantic 41)."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._logger = logger or logging.getLogger("cronwright.events")

    def emit(self, event: Event) -> None:
        fields = event.as_dict()
        level = logging.INFO if event.kind in _INFO else logging.WARNING
        self._logger.log(level, _AsJson(fields), extra={FIELDS: fields})


class _AsJson:
    """An event's message: its fields as JSON, made only when a handler asks for the message. The JSON
    lines of semantic 41 are made from the fields themselves, so a busy node skips one encoding per event."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, object]) -> None:
        self._fields = fields

    def __str__(self) -> str:
        return json.dumps(self._fields, default=str, sort_keys=True)


class MetricsSink:
    """Prometheus counters, one per event kind, labelled where a label has few values."""

    def __init__(self, registry: CollectorRegistry) -> None:
        # Imported here: the log sink's users (a `tick`, a short-lived CLI call) never pay for it.
        from prometheus_client import Counter, Histogram, disable_created_metrics

        # The client library's `_created` series double every family, and no alert reads them.
        disable_created_metrics()  # type: ignore[no-untyped-call]
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
        # A series that appears only at its first increment breaks rate() and alerts on it: start at 0.
        # The series of each outcome, looked up once: a label lookup per event is a busy node's cost.
        self._runs = {outcome.value: self.runs.labels(outcome=outcome.value) for outcome in Outcome}
        self._run_seconds = {
            outcome.value: self.run_seconds.labels(outcome=outcome.value) for outcome in Outcome
        }
        for reason in SKIP_REASONS:
            self.skips.labels(reason=reason)
        self.buffered = Counter(
            "cronwright_buffered",
            "Occurrences that waited for the one in flight (overlap buffer_one).",
            registry=registry,
        )
        self.overlapped = Counter(
            "cronwright_overlapped",
            "Occurrences that started beside others of their job in flight (overlap allow).",
            registry=registry,
        )
        self.backfilled = Counter(
            "cronwright_backfilled", "Backfilled occurrences that started (semantic 35).", registry=registry
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
            runs = self._runs.get(outcome) or self.runs.labels(outcome=outcome)
            runs.inc()
            took_ms = event.fields.get("took_ms")
            if isinstance(took_ms, int) and not isinstance(took_ms, bool):
                seconds = self._run_seconds.get(outcome) or self.run_seconds.labels(outcome=outcome)
                seconds.observe(max(0, took_ms) / 1000)
        elif event.kind is EventKind.JOB_SKIPPED:
            count = event.fields.get("count", 1)
            self.skips.labels(reason=str(event.fields.get("reason", "unknown"))).inc(
                count if isinstance(count, int) else 1
            )
        elif event.kind is EventKind.JOB_BUFFERED:
            self.buffered.inc()
        elif event.kind is EventKind.JOB_OVERLAPPED:
            self.overlapped.inc()
        elif event.kind is EventKind.JOB_BACKFILLED:
            self.backfilled.inc()
        elif event.kind is EventKind.JOB_BREAKER_PAUSED:
            self.breaker_pauses.inc()
        elif event.kind is EventKind.JOB_EXPIRED:
            self.expirations.inc()
        elif event.kind is EventKind.JOB_PERSISTENCE_FAILED:
            self.persistence_failures.inc()
