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
from cronwright.errors import ConfigError
from cronwright.node.node_ids import is_serving, new_node_id
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
    from cronwright.protocol import RequestHandler
    from cronwright.service.reloading import Prepared, ReloadReport
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
    # Told of each config a reload applied (the fronts swap their sources and tokens): see `reload`.
    on_reload: list[Callable[[Config], None]] = field(default_factory=list)
    _protocol: RequestHandler | None = None
    _protocol_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def protocol(self) -> RequestHandler:
        """The protocol over the service, made on first use: a `tick` makes no request, so never pays.
        One for the app's life, even when serve's threads ask at once: it keeps the mutation rate limits."""
        if self._protocol is None:
            from cronwright.protocol import RequestHandler

            with self._protocol_lock:
                if self._protocol is None:
                    self._protocol = RequestHandler(self.service, self.config.node.max_message_bytes)
        return self._protocol

    def reload(self, config: Config) -> ReloadReport:
        """Applies `config` live, or refuses it and changes nothing (service/reloading.py): the targets and
        their actions, the sources and their tokens, the limits, the calendars, the alert rules and
        channels. Either process of a serve may call it for its own parts."""
        from cronwright.service import reloading

        refused = reloading.not_live(self.config, config)
        if refused:
            why = f"the config was not reloaded: {', '.join(refused)} cannot change live; restart serve"
            return self._reported(reloading.ReloadReport(False, why))
        try:
            prepared = reloading.prepare(config)
        except ConfigError as error:
            why = f"the config was not reloaded, nothing changed: {error}"
            return self._reported(reloading.ReloadReport(False, why))
        changed = reloading.changed(self.config, config)
        reloading.swap(self.service, prepared)
        self._swap_channels(prepared)
        self.config = config
        for listener in self.on_reload:
            listener(config)
        return self._reported(reloading.ReloadReport(True, reloading.applied(changed), changed))

    def reload_from(self, path: str | None) -> ReloadReport:
        """Reads the config file again (`path` as --config gave it, else found as at start), reloads it."""
        from cronwright.config.settings import load
        from cronwright.service.reloading import ReloadReport

        try:
            config = load(path)
        except ConfigError as error:
            return self._reported(
                ReloadReport(False, f"the config was not reloaded, nothing changed: {error}")
            )
        return self.reload(config)

    def _reported(self, report: ReloadReport) -> ReloadReport:
        """Kept for `status` (its node's `last_reload`)."""
        from cronwright.timing.iso import render

        at = render(self.node.clock.now(), self.service.zone)
        self.service.last_reload = {"ok": report.ok, "at": at, "message": report.message}
        return report

    def _swap_channels(self, prepared: Prepared) -> None:
        if self.deliveries is not None:
            self.deliveries.deliverer.use_channels(prepared.channels)
            return
        if not prepared.channels:
            return
        from cronwright.notify.deliver import Deliverer
        from cronwright.notify.loop import DeliveryLoop

        node, clock = self.node, self.node.clock
        deliverer = Deliverer(node.store, prepared.channels, node.id, clock, prepared.config.node.tz)
        self.deliveries = DeliveryLoop(deliverer, node.store, clock)
        node.on_notes = _both(self.deliveries.wake, self.changes.changed)
        if is_serving(node.id):
            self.deliveries.start()  # as serve starts it; a short-lived process drains at its end

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
        store or open_store(config.store_url, settings.run_history, first_writer=not short_lived),
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
