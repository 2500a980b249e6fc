"""The value objects of alerting: a transition that happened, and the notification of it for one channel."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.timing.iso import render


class Transition(StrEnum):
    """What an alert is about (semantic 38). Transitions, not runs: a second failure in a row is none."""

    FAILED = "failed"
    RECOVERED = "recovered"
    BREAKER_PAUSED = "breaker_paused"
    MISSED = "missed"
    LATE = "late"
    EXPIRED = "expired"
    NODE_DOWN = "node_down"
    PERSISTENCE_DEGRADED = "persistence_degraded"
    PERSISTENCE_RECOVERED = "persistence_recovered"


# Not transitions a rule can name: a digest folds many notifications, a test is sent by `notify-test`.
DIGEST = "digest"
TEST = "test"


class Status(StrEnum):
    PENDING = "pending"  # waiting for its next attempt
    DELIVERED = "delivered"  # the channel accepted it
    DIGESTED = "digested"  # folded into a digest, which carries it from now on
    ABANDONED = "abandoned"  # still refused after a day of attempts


@dataclass(frozen=True, slots=True)
class JobRef:
    """The job a transition is about, as the webhook body names it."""

    id: int
    name: str
    target: str
    action: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "target": self.target,
            "action": self.action,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class Alert:
    """One transition as it was detected.

    `key` names the transition itself (say `failed:job 7:fire abc`), so that two nodes that both detect it
    compute the same notification ids, and the outbox keeps only one of them.
    """

    transition: Transition
    at: datetime
    key: str
    message: str
    job: JobRef | None = None
    fire_id: str | None = None
    scheduled_for: datetime | None = None


@dataclass(frozen=True, slots=True)
class Notification:
    """One alert for one channel: a row of the outbox. `id` is the idempotency key sent with every attempt."""

    id: str
    channel: str
    transition: str
    payload: Mapping[str, Any]
    created_at: datetime
    next_attempt_at: datetime
    attempts: int = 0
    status: Status = Status.PENDING
    delivered_at: datetime | None = None
    last_error: str | None = None
    digest_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The job the transition is about (None for a node's or the store's, and for a digest): a store
    # writes the notification only if the job's own write in that transaction lands.
    job_id: int | None = None

    @property
    def source(self) -> str | None:
        """The source of the job it is about, so that a source reads only its own notifications."""
        job = self.payload.get("job")
        source = job.get("source") if isinstance(job, Mapping) else None
        return source if isinstance(source, str) else None

    def evolve(self, **changes: Any) -> Notification:
        return replace(self, **changes)


def notification_id(key: str, channel: str) -> str:
    """A stable id for the alert `key` sent to `channel`: the same on every node and every redelivery."""
    return "n_" + hashlib.sha256(f"{channel}\x00{key}".encode()).hexdigest()[:32]


def body(alert: Alert, id: str, zone: ZoneInfo) -> dict[str, Any]:
    """The webhook body of semantic 38: `{id, transition, at, job, fire_id?, scheduled_for?, message}`.

    Instants are rendered in `zone` (the node zone, semantic 17). `job` is null for a node or store alert.
    """
    payload: dict[str, Any] = {
        "id": id,
        "transition": alert.transition.value,
        "at": render(alert.at, zone),
        "job": alert.job.as_dict() if alert.job is not None else None,
        "message": alert.message,
    }
    if alert.fire_id is not None:
        payload["fire_id"] = alert.fire_id
    if alert.scheduled_for is not None:
        payload["scheduled_for"] = render(alert.scheduled_for, zone)
    return payload
