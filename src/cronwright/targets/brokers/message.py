"""The seam between the runner and the engines a broker target hands its occurrences to (semantic 43).

An engine is one module beside this one with a function `open_broker(target, secrets) -> Broker`, named in
`sending.ENGINES`. It gets every message ready made (`Message`: its deterministic id, its headers, its
expiry, args and kwargs) and answers each send with a `Finished`. Everything an engine shares with the
others lives here, so that a third engine (arq, Dramatiq, RQ) is its publish call and its error handling.

Standard library only: the engines' libraries are imported by their own modules, at the first send.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from cronwright.targets.attempt import Call, Finished, Stop
from cronwright.targets.specs import Route, TargetSpec

# Message ids are uuid5 names in this namespace (uuid5 of the URL below): anyone can recompute a message's id
# from its job, fire_id and attempt, and two occurrences never share one.
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://cronwright.invalid/broker-message")


@dataclass(frozen=True, slots=True)
class Message:
    """One attempt of one occurrence, as every engine sends it."""

    id: str  # deterministic: the same fire_id and attempt always give the same id (`message_id`)
    headers: Mapping[str, str]  # cronwright_fire_id, cronwright_attempt, cronwright_scheduled_for, ...
    envelope: Mapping[str, Any]  # what a python or http target would receive (DESIGN, the envelope)
    expires: datetime  # aware: a worker that takes it later drops it (celery revokes it)
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


class Broker(Protocol):
    """One connection to one broker, made once and shared by every send to it. Thread-safe."""

    def send(self, route: Route, message: Message, timeout: float, stop: Stop) -> Finished:
        """Sends the message (and with `route.wait`, waits for the task's outcome) within `timeout`
        seconds. Never raises: a refusal, a lost connection or a late answer is a Finished. A message
        names neither the broker's URL nor its password."""
        ...

    def probe(self, route: Route, timeout: float) -> str | None:
        """Connects (sending nothing) and checks that `route` can be used: None, or what is wrong."""
        ...

    def close(self) -> None: ...


def message_id(job_id: object, schedule: object, created: str, fire_id: object, attempt: object) -> str:
    """The id of a message: a uuid5 over the job (its id, name and creation instant in UTC to the
    second, `2026-12-07T12:00:00Z`), the fire_id and the attempt. A fire_id is unique within one store;
    the job's creation keeps a fresh store, which numbers its jobs from 1 again, from reusing the ids
    of an old one on the same broker (and reading an old task's result as its own)."""
    return str(uuid.uuid5(NAMESPACE, f"{job_id}/{schedule}/{created}/{fire_id}/{attempt}"))


def message_of(call: Call, target: TargetSpec, route: Route) -> Message:
    """The message for this attempt. It expires `target.grace` after the instant it was due: the
    occurrence's due instant for a first attempt, the retry's start for a retry (a retry is due when its
    backoff ends, which may be long after the occurrence's grace)."""
    envelope = call.envelope
    cron = envelope["cron"]
    attempt = int(cron["attempt"])
    due = datetime.fromisoformat(str(cron["scheduled_for"] if attempt == 1 else cron["fired_at"]))
    headers = {
        "cronwright_fire_id": str(cron["fire_id"]),
        "cronwright_attempt": str(attempt),
        "cronwright_scheduled_for": str(cron["scheduled_for"]),
        "cronwright_nominal": str(cron["nominal"]),
        "cronwright_schedule": str(envelope["schedule"]),
        "cronwright_job_id": str(envelope["job_id"]),
    }
    kwargs = dict(envelope["args"])
    args = tuple(kwargs.pop(name) for name in route.positional)
    return Message(
        message_id(envelope["job_id"], envelope["schedule"], call.created, cron["fire_id"], attempt),
        headers,
        envelope,
        (due + target.grace).astimezone(UTC),
        args,
        kwargs,
    )


def url_of(target: TargetSpec, secrets: Mapping[str, str], backend: bool = False) -> str:
    name = target.backend_secret if backend else target.broker_secret
    assert name is not None
    return secrets[name]


def scrub(text: str, *urls: str | None) -> str:
    """`text` without any of the URLs, or their passwords (as written or percent-decoded), in it: a
    library's error may quote the URL it failed on."""
    hidden: set[str] = set()
    for url in urls:
        if not url:
            continue
        hidden.add(url)
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        if password:
            hidden.update({password, unquote(password)})
    for value in sorted(hidden, key=len, reverse=True):
        text = text.replace(value, "***")
    return text
