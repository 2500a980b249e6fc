"""The gauges `/metrics` reads at scrape time: what the node and its store are like now.

Counters of what happened are in sinks.py; these say how things stand, for alerting: the build, jobs by
state, runs in flight, whether the store answers and keeps every write, the leases of the runs in flight,
and how late the earliest due occurrence is. A store that fails while scraped turns `cronwright_store_up`
to 0; it never fails the scrape.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from cronwright._version import __version__, build
from cronwright.core.model import Persistence, State
from cronwright.node.scheduler import Node


def build_info() -> GaugeMetricFamily:
    info = GaugeMetricFamily(
        "cronwright_build_info", "Always 1; its labels name the build.", labels=["version", "build", "python"]
    )
    info.add_metric([__version__, build(), platform.python_version()], 1)
    return info


class NodeView(Protocol):
    """How the firing node stands, seen from the process that serves /metrics: the node itself, or what the
    node's process last told the fronts' process (relay.py)."""

    @property
    def last_pass_at(self) -> datetime | None: ...

    @property
    def degraded(self) -> bool: ...

    @property
    def dropped(self) -> int:
        """The node's events the fronts' process had no room for."""

    def in_flight(self) -> int: ...


class LocalView:
    """The view of a node in this process."""

    dropped = 0

    def __init__(self, node: Node) -> None:
        self._node = node

    def in_flight(self) -> int:
        return self._node.in_flight()

    @property
    def last_pass_at(self) -> datetime | None:
        return self._node.last_pass_at

    @property
    def degraded(self) -> bool:
        return self._node.store.persistence is Persistence.DEGRADED


class NodeGauges:
    """Gauges read at scrape time, from the node and its store (so jobs by state are across nodes).
    `view` tells how the firing node stands (default: `node`, the node of this process)."""

    def __init__(self, node: Node, view: NodeView | None = None) -> None:
        self._node = node
        self.view = view or LocalView(node)

    def collect(self) -> Iterable[Metric]:
        node, view = self._node, self.view
        yield build_info()
        yield GaugeMetricFamily(
            "cronwright_runs_in_flight", "Attempts running on this node now.", value=view.in_flight()
        )
        yield CounterMetricFamily(
            "cronwright_relay_dropped",
            "Events of the node the fronts' process had no room for (it was stopped or too busy).",
            value=view.dropped,
        )
        now = node.clock.now()
        try:
            counts = node.store.counts()
            orphans = len(node.store.orphans(now, node.settings.lease_ttl))
            beats = node.store.beats()
            next_wake = node.store.next_wake()
        except Exception:
            yield _gauge("cronwright_store_up", "1 when the store answers reads, else 0.", 0)
            return
        yield _gauge("cronwright_store_up", "1 when the store answers reads, else 0.", 1)
        degraded = view.degraded or node.store.persistence is Persistence.DEGRADED
        yield _gauge(
            "cronwright_store_degraded",
            "1 while a write waits in memory for the store (replies say degraded), else 0.",
            int(degraded),
        )
        jobs = GaugeMetricFamily("cronwright_jobs", "Jobs by state.", labels=["state"])
        for state in State:
            jobs.add_metric([state.value], counts.get(state.value, 0))
        yield jobs
        yield _gauge(
            "cronwright_leases_expired",
            "Runs whose node stopped renewing its lease and that no pass has recorded interrupted yet.",
            orphans,
        )
        last_beat = GaugeMetricFamily(
            "cronwright_node_last_beat_timestamp_seconds",
            "When each node last renewed its lease (Unix time).",
            labels=["node"],
        )
        for beat in beats:
            last_beat.add_metric([beat.node], beat.beat_at.timestamp())
        yield last_beat
        yield _gauge(
            "cronwright_due_lateness_seconds",
            "How long the earliest due occurrence (or retry) has waited past its instant; 0 if none is due.",
            _lateness(next_wake, now),
        )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _lateness(due: datetime | None, now: datetime) -> float:
    return max(0.0, (now - due).total_seconds()) if due is not None else 0.0
