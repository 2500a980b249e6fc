"""Wires a node from config: store, runner, allowlist, service and protocol, then upserts the seeds
(seeds.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cronwright.clock import Clock, SystemClock
from cronwright.config.calendar_tables import from_config
from cronwright.core.events import EventSink, FanOut
from cronwright.core.sources import Source
from cronwright.node.node_ids import new_node_id
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.notify.alerting import Alerting
from cronwright.notify.setup import rules_of
from cronwright.service.operations import Limits, Service
from cronwright.service.seeds import SEED_SOURCE, upsert_seeds
from cronwright.store import open_store
from cronwright.telemetry.changes import Changes
from cronwright.telemetry.sinks import LogSink, MetricsSink

# What a `tick` never uses is imported where it is first needed: the protocol and its request models (pydantic
# models, slow to build) by the first request, the notifications' delivery by a config with channels.
if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from cronwright.config.settings import Config
    from cronwright.node.runner import Runner
    from cronwright.notify.loop import DeliveryLoop
    from cronwright.protocol import Protocol
    from cronwright.store.base import Backend
    from cronwright.targets.allowlist import Allowlist
    from cronwright.targets.secrets import Secrets


@dataclass(slots=True)
class App:
    config: Config
    node: Node
    service: Service
    metrics: CollectorRegistry | None  # None in a process that nobody scrapes (built with metrics=False)
    # Delivers the outbox (semantic 38): `serve` starts its thread, `tick` drains it before exiting.
    deliveries: DeliveryLoop | None = None
    # Told of every change a reader may show (the dashboard's live updates).
    changes: Changes = field(default_factory=Changes)
    _protocol: Protocol | None = None
    _protocol_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def protocol(self) -> Protocol:
        """The protocol over the service, made on first use: a `tick` makes no request, so never pays.
        One for the app's life, even when serve's threads ask at once: it keeps the mutation rate limits."""
        if self._protocol is None:
            from cronwright.protocol import Protocol

            with self._protocol_lock:
                if self._protocol is None:
                    self._protocol = Protocol(self.service, self.config.node.max_message_bytes)
        return self._protocol

    def close(self) -> None:
        self.node.stop()
        if self.deliveries is not None:
            self.deliveries.stop()
        self.node.store.close()


def build(
    config: Config,
    runner: Runner,
    allowlist: Allowlist,
    clock: Clock | None = None,
    store: Backend | None = None,
    sinks: tuple[EventSink, ...] = (),
    seed: bool = True,
    serving: bool = False,
    short_lived: bool = False,
    secrets: Secrets | None = None,
    metrics: bool = True,
) -> App:
    """`serving` for `cronwright serve` (its id says so, and run_now is handed to it); `short_lived` for a
    process with no scheduling loop, which hands its run_now to a serving node (semantic 28). `metrics`:
    Prometheus counters of the events, for a process that serves /metrics; without, prometheus_client is
    never imported (a `tick` or a short-lived CLI call would pay for it at every start, and no one scrapes
    them)."""
    settings = config.node
    registry = None
    changes = Changes()
    counted: list[EventSink] = []
    if metrics:
        from prometheus_client import CollectorRegistry

        registry = CollectorRegistry()
        counted.append(MetricsSink(registry))
    events = FanOut([LogSink(), *counted, changes, *sinks])
    clock = clock or SystemClock()
    node = Node(
        store or open_store(config.store_url, settings.run_history),
        runner,
        clock,
        events,
        NodeSettings(
            settings.misfire_grace,
            settings.max_concurrency,
            settings.shutdown_grace,
            lease_beat=settings.lease_beat,
            lease_ttl=settings.lease_ttl,
            audit_retention=settings.audit_retention,
            zone=settings.tz,
            calendars=from_config(config.calendars, config.folder, config.path),
        ),
        node_id=new_node_id(serving),
        short_lived=short_lived,
        alerting=Alerting(rules_of(config), settings.tz),
    )
    limits = Limits(
        settings.tz, settings.max_lifetime, settings.min_period, settings.misfire_grace, settings.run_history
    )
    service = Service(node, allowlist, limits)
    app = App(config, node, service, registry, changes=changes)
    # The node calls on_notes when woken (a mutation, SIGUSR1, a NOTIFY) and when it wrote notifications.
    node.on_notes = changes.changed
    if config.notify:
        from cronwright.notify.deliver import Deliverer
        from cronwright.notify.loop import DeliveryLoop
        from cronwright.notify.setup import channels_of
        from cronwright.targets.secrets import Secrets

        channels = channels_of(config, secrets or Secrets.from_config(config))
        deliverer = Deliverer(node.store, channels, node.id, clock, settings.tz)
        app.deliveries = DeliveryLoop(deliverer, node.store, clock)
        node.on_notes = _both(app.deliveries.wake, changes.changed)
    if seed:
        upsert_seeds(service, config.seed, config.path)
    return app


def _both(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    def both() -> None:
        first()
        second()

    return both


def operator_source() -> Source:
    return SEED_SOURCE
