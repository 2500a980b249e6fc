"""Declarative schedules from the config, upserted by dedupe_key at boot (DESIGN semantic 16).

A seed is compared with its stored job by what it means, not how it is spelled: the service reads the
seed's fields into the same value objects it stores, and an update that changes nothing writes nothing.
So a boot leaves an unchanged seed's job exactly as it was, its `next_run_at` (and an `every` job's phase)
included, and a one-shot whose instant passed while the node was down keeps its late run (semantic 6).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cronwright.config.settings import seed_label
from cronwright.core.model import State
from cronwright.core.sources import Source, operator
from cronwright.errors import ConfigError, Refusal, RunAtPassed
from cronwright.service.operations import Service
from cronwright.telemetry.logs import say

SEED_SOURCE: Source = operator()
# What a seed names its job by, or what a job keeps for life: not part of an update.
IMMUTABLE = ("dedupe_key", "target", "action", "origin", "once")
_log = logging.getLogger("cronwright.seeds")

if TYPE_CHECKING:
    from cronwright.declare.requests import CreateJob, Update


def upsert_seeds(service: Service, seeds: list[dict[str, Any]], where: str | None = None) -> None:
    """Upserts each seed by its dedupe_key. An invalid seed aborts boot with a ConfigError naming it (and
    `where`, the config file); a one-shot seed whose instant passed before its store knew it is reported
    (a warning) and skipped."""
    for index, seed in enumerate(seeds):
        label = f"{where}: {seed_label(index, seed)}" if where else seed_label(index, seed)
        try:
            _upsert(service, seed)
        except RunAtPassed as passed:
            # Semantic 16: a config copied to a new machine after a one-shot's instant still boots.
            said = f"{label} is skipped: its store never had it, and {passed.message}"
            say(_log, said, logging.WARNING, seed=seed.get("dedupe_key"))
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
        # A one-shot the store never knew, whose instant is long past, is refused RunAtPassed: skipped.
        service.create_job(_create(seed), SEED_SOURCE, audit_as="seed")  # new, or a deleted recurring seed
        return
    job = existing[-1]
    if job.state in (State.RUNNING, State.DONE, State.FAILED):
        return
    changes = {name: value for name, value in seed.items() if name not in IMMUTABLE}
    if job.state is not State.EXPIRED:
        # A boot is not an explicit renewal: the end stays where it is unless the job had expired.
        changes.pop("lifetime", None)
    schedule = changes.get("schedule")
    if isinstance(schedule, Mapping) and "cron" in schedule and "tz" not in schedule:
        # A seed declares its whole schedule: a cron without tz is read in the node zone, as at its
        # create, rather than kept in whatever zone the job has (an update's rule, semantic 26).
        changes["schedule"] = {**schedule, "tz": service.zone.key}
    service.update(_update(job.id, changes), SEED_SOURCE, audit_as="seed")


# The seed as the request the protocol would validate (the config checked only its spelling). pydantic is
# imported here, when a seed is written, not with this module: `tick` loads none (test_tick_imports.py).


def _create(seed: Mapping[str, Any]) -> CreateJob:
    from pydantic import ValidationError

    from cronwright.declare.refusals import refusal
    from cronwright.declare.requests import CreateJob

    try:
        return CreateJob.model_validate({"action": "create_job", "job": dict(seed)})
    except ValidationError as error:
        raise refusal(error, CreateJob, "a seed") from None


def _update(job_id: int, changes: dict[str, Any]) -> Update:
    from pydantic import ValidationError

    from cronwright.declare.refusals import refusal
    from cronwright.declare.requests import Update

    try:
        return Update.model_validate({"action": "update", "job_id": job_id, "changes": changes})
    except ValidationError as error:
        raise refusal(error, Update, "a seed") from None
