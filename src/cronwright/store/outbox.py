"""The outbox: notifications waiting for delivery, and the claims that keep two nodes from sending one twice.

A notification is added in the same transaction as the transition it tells of (a durable store writes both
or neither). Any node may deliver it: a node first claims a batch of due ones, which holds them for that node
until the claim's end, so that no other node sends them meanwhile; then it settles each (delivered, due again
later, or abandoned), which ends the claim. A node that dies mid-send leaves its claim to lapse, and another
node sends again later: delivery is at least once, and the receiver drops a repeat by its id.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from cronwright.core.notifications import Notification, Status

# Settled notifications are kept this long for `notifications`, then pruned by a delivery pass.
RETENTION = timedelta(days=30)


class Outbox(Protocol):
    def add(self, notifications: Sequence[Notification]) -> None:
        """Stores each notification whose id is new. An id already stored keeps its row as it is, so two
        nodes that detect one transition store (and send) it once."""
        ...

    def claim(self, node: str, now: datetime, hold: timedelta, limit: int) -> list[Notification]:
        """Up to `limit` pending notifications due by `now` that no live claim holds, oldest due first,
        now held by `node` until `now + hold`. No two claims ever hold one notification at once."""
        ...

    def sent_since(self, since: datetime) -> dict[str, int]:
        """Per channel, how many sends were delivered at or after `since` (a digest counts once)."""
        ...

    def settle(self, node: str, done: Sequence[Notification]) -> None:
        """Writes back the notifications `node` claimed, as given (status, attempts, next attempt), and ends
        its claim on them. A notification no longer held by `node` is left alone."""
        ...

    def fold(self, node: str, digest: Notification, members: Sequence[Notification]) -> None:
        """Stores `digest` (held by `node`, like a claim) and marks `members`, which `node` holds, `digested`
        into it, in one step."""
        ...

    def page(self, limit: int, before: str | None = None, source: str | None = None) -> list[Notification]:
        """The newest notifications first (by creation, then id), after the one whose id is `before`;
        with `source`, only those about that source's jobs."""
        ...

    def prune(self, now: datetime) -> int:
        """Drops settled notifications (delivered, digested, abandoned) older than the retention; answers
        how many went."""
        ...

    def next_due(self) -> datetime | None:
        """When the earliest pending notification can next be claimed (its next attempt, or the end of
        the claim that holds it), or None when none is pending: what a delivery loop sleeps until."""
        ...


class MemoryOutbox:
    """The outbox of a `memory:` store, and the model the SQL ones follow. Thread-safe."""

    def __init__(self) -> None:
        self._rows: dict[str, Notification] = {}
        self._claims: dict[str, tuple[str, datetime]] = {}
        self._lock = threading.Lock()

    def add(self, notifications: Sequence[Notification]) -> None:
        with self._lock:
            for item in notifications:
                self._rows.setdefault(item.id, item)

    def claim(self, node: str, now: datetime, hold: timedelta, limit: int) -> list[Notification]:
        with self._lock:
            due = [
                item
                for item in self._rows.values()
                if item.status is Status.PENDING and item.next_attempt_at <= now and self._free(item.id, now)
            ]
            due.sort(key=lambda item: (item.next_attempt_at, item.id))
            taken = due[:limit]
            for item in taken:
                self._claims[item.id] = (node, now + hold)
            return taken

    def sent_since(self, since: datetime) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self._lock:
            for item in self._rows.values():
                if item.status is Status.DELIVERED and item.delivered_at and item.delivered_at >= since:
                    counts[item.channel] = counts.get(item.channel, 0) + 1
        return counts

    def settle(self, node: str, done: Sequence[Notification]) -> None:
        with self._lock:
            for item in done:
                if self._holder(item.id) == node:
                    self._rows[item.id] = item
                    del self._claims[item.id]

    def fold(self, node: str, digest: Notification, members: Sequence[Notification]) -> None:
        with self._lock:
            self._rows.setdefault(digest.id, digest)
            self._claims[digest.id] = (node, self._claims[members[0].id][1])
            for item in members:
                if self._holder(item.id) == node:
                    self._rows[item.id] = item.evolve(status=Status.DIGESTED, digest_id=digest.id)
                    del self._claims[item.id]

    def page(self, limit: int, before: str | None = None, source: str | None = None) -> list[Notification]:
        with self._lock:
            rows = sorted(self._rows.values(), key=lambda item: (item.created_at, item.id), reverse=True)
        if source is not None:
            rows = [item for item in rows if item.source == source]
        if before is not None:
            marks = [index for index, item in enumerate(rows) if item.id == before]
            rows = rows[marks[0] + 1 :] if marks else []
        return rows[:limit]

    def prune(self, now: datetime) -> int:
        with self._lock:
            old = [
                id
                for id, item in self._rows.items()
                if item.status is not Status.PENDING and item.created_at < now - RETENTION
            ]
            for id in old:
                del self._rows[id]
            return len(old)

    def next_due(self) -> datetime | None:
        with self._lock:
            return min(
                (
                    max(item.next_attempt_at, self._claims[item.id][1])
                    if item.id in self._claims
                    else item.next_attempt_at
                    for item in self._rows.values()
                    if item.status is Status.PENDING
                ),
                default=None,
            )

    def _holder(self, id: str) -> str | None:
        claim = self._claims.get(id)
        return claim[0] if claim else None

    def _free(self, id: str, now: datetime) -> bool:
        claim = self._claims.get(id)
        return claim is None or claim[1] <= now
