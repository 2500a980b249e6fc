"""Reloading the config while the node runs (issue 38): what may change live, built aside, then swapped.

A reload reads the whole config again and builds everything it would use, aside, from it: the targets'
registry (python modules described again), the secrets, the calendars, the alert rules, the channels and
the sources. Anything wrong there, or a `cronwright check` problem, refuses the reload and changes nothing.
What the running process built itself around (the store, the listen address, the zone, the slots, the
leases, the message limit) cannot change live: a config that changes it is refused, naming it.

Otherwise the new parts replace the old under the node's lock, so that a pass, or a request, sees either
the old config or the new, never a mix. A run in flight keeps the target it started with (its attempt
resolved it); the next firing uses the new one, and a schedule whose target went is refused at its next
firing (semantic 22), as `check` lists.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from cronwright.config.calendar_tables import from_config as calendars_from_config
from cronwright.errors import ConfigError
from cronwright.notify.alerting import Alerting, StoreTransitions
from cronwright.notify.setup import rules_of
from cronwright.service.config_check import channel_secrets, problems

if TYPE_CHECKING:
    from cronwright.config.settings import Config
    from cronwright.core.calendars import Calendars
    from cronwright.notify.channels import Channel
    from cronwright.service.operations import Service
    from cronwright.targets.registry import Registry
    from cronwright.targets.secrets import Secrets

# What the running process is built around, and why it cannot change under it.
NOT_LIVE = {
    "store": "the store is opened once",
    "listen": "the fronts hold their socket",
    "zone": "stored schedules and replies are read in it",
    "max_concurrency": "the slots are made at start",
    "lease_beat": "the leases are timed at start",
    "lease_ttl": "the leases are timed at start",
    "max_message_bytes": "the fronts read requests against it",
    "per_job_metrics": "the metrics are registered at start",
    "run_history": "the store keeps as many runs as it was opened with",
}
# The sections whose change a reload applies, as the report names them.
SECTIONS = ("targets", "sources", "notify", "alert", "calendars", "seed")


@dataclass(frozen=True, slots=True)
class ReloadReport:
    """How a reload went: applied (`ok`), or refused with nothing changed; `message` says which, and why."""

    ok: bool
    message: str
    changed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Prepared:
    """Everything the new config makes, built before anything is swapped."""

    config: Config
    registry: Registry
    secrets: Secrets
    calendars: Calendars
    alerting: Alerting
    channels: dict[str, Channel]


def not_live(old: Config, new: Config) -> list[str]:
    """The settings the new config changes that only a restart can: `node.NAME (why)` each."""
    found = [
        f"node.{name} ({why})"
        for name, why in NOT_LIVE.items()
        if name != "store" and getattr(old.node, name) != getattr(new.node, name)
    ]
    if old.store_url != new.store_url:
        found.insert(0, f"node.store ({NOT_LIVE['store']})")
    return found


def changed(old: Config, new: Config) -> tuple[str, ...]:
    """The sections (and node settings) the new config changes."""
    found = [name for name in SECTIONS if _dump(old, name) != _dump(new, name)]
    old_node, new_node = old.node.model_dump(), new.node.model_dump()
    found += [f"node.{key}" for key in old_node if old_node[key] != new_node.get(key)]
    return tuple(found)


def applied(changed: tuple[str, ...]) -> str:
    """What a reload that went well says: what changed, and that seeds wait for the next start."""
    said = f"the config was reloaded: {', '.join(changed) or 'nothing changed'}"
    if "seed" in changed:
        said += "; [[seed]] changes are upserted at the next start of serve, not by a reload"
    return said


def _dump(config: Config, section: str) -> Any:
    value = getattr(config, section)
    if isinstance(value, dict):
        return {
            key: item.model_dump() if hasattr(item, "model_dump") else item for key, item in value.items()
        }
    return [item.model_dump() if hasattr(item, "model_dump") else item for item in value]


def prepare(new: Config) -> Prepared:
    """Builds what `new` makes; ConfigError naming the first thing wrong, as `check` would say it."""
    from cronwright.notify.setup import channels_of
    from cronwright.targets.registry import build_registry
    from cronwright.targets.secrets import Secrets

    registry = build_registry(new)
    for name in new.sources:
        new.source(name)
    secrets = Secrets.from_config(new)
    calendars = calendars_from_config(new.calendars, new.folder, new.path)
    actions = [
        f"{row['target']}.{action['action']}" for row in registry.describe() for action in row["actions"]
    ]
    named = {secret for channel in new.notify.values() for secret in channel_secrets(channel)}
    found = problems(new, actions, set(secrets.known(named)))
    if found:
        raise ConfigError("; ".join(found))
    channels = channels_of(new, secrets) if new.notify else {}
    return Prepared(new, registry, secrets, calendars, Alerting(rules_of(new), new.node.tz), channels)


def swap(service: Service, prepared: Prepared) -> None:
    """Puts the prepared parts in place of the old, under the node's lock: a pass (or a request that takes
    the lock) sees the old config or the new, never a mix. The caller swaps the channels and the fronts'
    sources."""
    from cronwright.targets.executor import TargetRunner

    node, new = service.node, prepared.config
    settings = new.node
    with node.lock:
        runner = node.runs.runner
        if isinstance(runner, TargetRunner):  # the runner of the targets (tests use others)
            runner.registry = prepared.registry
            runner.secrets = prepared.secrets
        service.allowlist = prepared.registry
        service.limits = replace(
            service.limits,
            max_lifetime=settings.max_lifetime,
            min_period=settings.min_period,
            misfire_grace=settings.misfire_grace,
        )
        node.settings = replace(
            node.settings,
            misfire_grace=settings.misfire_grace,
            shutdown_grace=settings.shutdown_grace,
            audit_retention=settings.audit_retention,
            calendars=prepared.calendars,
        )
        node.rules = replace(node.rules, misfire_grace=settings.misfire_grace, calendars=prepared.calendars)
        node.alerting = prepared.alerting
        if isinstance(transitions := node.store.alerts, StoreTransitions):
            transitions.alerting = prepared.alerting
