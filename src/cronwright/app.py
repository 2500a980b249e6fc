"""Wires a node from config: store, runner, allowlist, service and protocol, then upserts the seeds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from cronwright.allowlist import Allowlist
from cronwright.clock import Clock, SystemClock
from cronwright.config import Config
from cronwright.errors import ConfigError, Refusal
from cronwright.events import EventSink, FanOut, LogSink, MetricsSink
from cronwright.model import State
from cronwright.node import Node, NodeSettings
from cronwright.protocol import Protocol
from cronwright.runner import Runner
from cronwright.service import Limits, Service
from cronwright.sources import Source, operator
from cronwright.store import open_store
from cronwright.store.base import Store

SEED_SOURCE = operator()


@dataclass(slots=True)
class App:
    config: Config
    node: Node
    service: Service
    protocol: Protocol
    metrics: CollectorRegistry

    def close(self) -> None:
        self.node.stop()
        self.node.store.close()


def build(
    config: Config,
    runner: Runner,
    allowlist: Allowlist,
    clock: Clock | None = None,
    store: Store | None = None,
    sinks: tuple[EventSink, ...] = (),
    seed: bool = True,
) -> App:
    settings = config.node
    metrics = CollectorRegistry()
    events = FanOut([LogSink(), MetricsSink(metrics), *sinks])
    node = Node(
        store or open_store(config.store_url, settings.run_history),
        runner,
        clock or SystemClock(),
        events,
        NodeSettings(
            settings.misfire_grace,
            settings.max_concurrency,
            settings.shutdown_grace,
            lease_beat=settings.lease_beat,
            lease_ttl=settings.lease_ttl,
        ),
    )
    limits = Limits(settings.tz, settings.max_lifetime, settings.min_period, settings.misfire_grace)
    service = Service(node, allowlist, limits)
    app = App(config, node, service, Protocol(service, settings.max_message_bytes), metrics)
    if seed:
        upsert_seeds(service, config.seed)
    return app


def upsert_seeds(service: Service, seeds: list[dict[str, Any]]) -> None:
    """Upserts each seed by its dedupe_key (DESIGN semantic 16). An invalid seed aborts boot, named."""
    for index, seed in enumerate(seeds):
        label = f"seed #{index + 1} ({seed.get('dedupe_key') or seed.get('name') or 'unnamed'})"
        try:
            _upsert(service, seed)
        except Refusal as refusal:
            raise ConfigError(f"{label} is invalid: {refusal.message}") from refusal


def _upsert(service: Service, seed: Mapping[str, Any]) -> None:
    key = seed.get("dedupe_key")
    if not isinstance(key, str) or not key:
        raise Refusal("a seed needs a dedupe_key", field="dedupe_key")
    rows = service.store.with_dedupe_key(key)
    existing = [job for job, deleted in rows if not deleted]
    one_shot = "run_at" in seed or "at" in (seed.get("schedule") or {})
    if one_shot and rows and not any(job.state.live for job in existing):
        return  # a one-shot seed that already ended, or was deleted, fired its once
    if not existing:
        service.create_job({"job": dict(seed)}, SEED_SOURCE)  # new, or a deleted recurring seed
        return
    job = existing[-1]
    if job.state in (State.RUNNING, State.DONE, State.FAILED):
        return
    immutable = ("dedupe_key", "target", "action", "origin", "once")
    changes = {k: v for k, v in seed.items() if k not in immutable}
    current = service.row(job)
    if "schedule" in changes and changes["schedule"] == _given_schedule(
        current["schedule"], changes["schedule"]
    ):
        del changes["schedule"]  # unchanged: keep next_run_at
    if job.state is not State.EXPIRED:
        # A boot is not an explicit renewal: the end stays where it is unless the job had expired.
        changes.pop("lifetime", None)
    changes = {k: v for k, v in changes.items() if current.get(k) != v}
    if changes:
        service.update({"job_id": job.id, "changes": changes}, SEED_SOURCE)


def _given_schedule(shown: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The stored schedule in the shape the seed gives it, so that an unchanged seed compares equal."""
    return {key: shown.get(key) for key in given}


def operator_source() -> Source:
    return SEED_SOURCE
