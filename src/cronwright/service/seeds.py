"""Declarative schedules from the config, upserted by dedupe_key at boot (DESIGN semantic 16).

A seed is compared with its stored job by what it means, not how it is spelled: the service reads the
seed's fields into the same value objects it stores, and an update that changes nothing writes nothing.
So a boot leaves an unchanged seed's job exactly as it was, its `next_run_at` (and an `every` job's phase)
included, and a one-shot whose instant passed while the node was down keeps its late run (semantic 6).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from cronwright.config.settings import seed_label
from cronwright.core.model import State
from cronwright.core.sources import Source, operator
from cronwright.declare.refusals import refusal
from cronwright.declare.requests import CreateJob, Update
from cronwright.errors import ConfigError, Refusal, RunAtPassed
from cronwright.service.operations import Service
from cronwright.telemetry.logs import say

SEED_SOURCE: Source = operator()
# What a seed names its job by, or what a job keeps for life: not part of an update.
IMMUTABLE = ("dedupe_key", "target", "action", "origin", "once")
_log = logging.getLogger("cronwright.seeds")
M = TypeVar("M", bound=BaseModel)


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
        create = _request(CreateJob, {"action": "create_job", "job": dict(seed)})
        service.create_job(create, SEED_SOURCE, audit_as="seed")  # new, or a deleted recurring seed
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
    update = _request(Update, {"action": "update", "job_id": job.id, "changes": changes})
    service.update(update, SEED_SOURCE, audit_as="seed")


def _request(model: type[M], request: dict[str, Any]) -> M:
    """The seed as the request the protocol would validate: the config checked only its spelling."""
    try:
        return model.model_validate(request)
    except ValidationError as error:
        raise refusal(error, model, "a seed") from None
