"""The outbox of notifications (notify/outbox.py's protocol) on the SQL stores, written once: each store
brings its transactions, its dialect's named queries (sql/<dialect>/queries.sql) and its instants.

A notification is added inside the transaction of the save that records its transition (`_add_notes`),
so both land or neither does. Claims are a conditional update: a row is taken only while no live claim
holds it, and only its holder settles it (see `claim_notifications` for PostgreSQL's SKIP LOCKED).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from cronwright.core.notifications import Notification, Status
from cronwright.errors import StoreCorrupt
from cronwright.store.outbox import RETENTION


class SqlOutbox(ABC):
    """Mixin for a store with the `notifications` table. `_p` is the driver's placeholder, `_queries`
    the dialect's statements, and `_claim_lock` what the claim's subquery locks with. Its hooks are
    abstract: a store that lacks one fails when it is made, not at its first use."""

    _p: str
    _queries: Mapping[str, str]
    _claim_lock: str = ""

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _instant(self, moment: datetime) -> object: ...

    @abstractmethod
    def _moment(self, value: Any) -> datetime:
        """An instant as a column holds it, as an aware UTC datetime."""
        ...

    # --- writes inside a save ---------------------------------------------------------------------

    def _add_notes(
        self, connection: Any, notes: Sequence[Notification], lost: set[int] | frozenset[int] = frozenset()
    ) -> None:
        """Stores each new notification, but none about a job whose write in this save lost its race:
        that transition was decided on a row that was not the truth."""
        for note in notes:
            if note.job_id is not None and note.job_id in lost:
                continue
            connection.execute(self._queries["add_notification"], self._columns(note))

    def _columns(self, note: Notification) -> tuple[Any, ...]:
        return (
            note.id,
            note.channel,
            note.transition,
            note.source,
            note.status.value,
            self._instant(note.created_at),
            self._instant(note.next_attempt_at),
            note.attempts,
            None if note.delivered_at is None else self._instant(note.delivered_at),
            _encode(note),
        )

    def _note(self, row: Sequence[Any]) -> Notification:
        id, channel, transition, status, created_at, next_attempt_at, attempts, delivered_at, data = row
        try:
            record = json.loads(data)
            return Notification(
                id=str(id),
                channel=str(channel),
                transition=str(transition),
                payload=record["payload"],
                created_at=self._moment(created_at),
                next_attempt_at=self._moment(next_attempt_at),
                attempts=int(attempts),
                status=Status(status),
                delivered_at=None if delivered_at is None else self._moment(delivered_at),
                last_error=record.get("last_error"),
                digest_id=record.get("digest_id"),
                job_id=record.get("job_id"),
            )
        except Exception as err:  # whatever a hand-edited row holds: say which
            raise StoreCorrupt(f"the notification {id} cannot be read: {err!r}") from err

    # --- the Outbox protocol ----------------------------------------------------------------------

    def add(self, notifications: Sequence[Notification]) -> None:
        with self._writing() as connection:
            self._add_notes(connection, notifications)

    def claim(self, node: str, now: datetime, hold: timedelta, limit: int) -> list[Notification]:
        query = self._queries["claim_notifications"].format(lock=self._claim_lock)
        at = self._instant(now)
        with self._writing() as connection:
            rows = connection.execute(query, (node, self._instant(now + hold), at, at, limit)).fetchall()
        taken = [self._note(row) for row in rows]
        return sorted(taken, key=lambda item: (item.next_attempt_at, item.id))

    def sent_since(self, since: datetime) -> dict[str, int]:
        with self._reading() as connection:
            rows = connection.execute(self._queries["sent_since"], (self._instant(since),)).fetchall()
        return {str(channel): int(count) for channel, count in rows}

    def settle(self, node: str, done: Sequence[Notification]) -> None:
        if not done:
            return
        with self._writing() as connection:
            for item in done:
                connection.execute(self._queries["settle_notification"], self._settled(item, node))

    def _settled(self, item: Notification, node: str) -> tuple[Any, ...]:
        delivered = None if item.delivered_at is None else self._instant(item.delivered_at)
        return (
            item.status.value,
            item.attempts,
            self._instant(item.next_attempt_at),
            delivered,
            _encode(item),
            item.id,
            node,
        )

    def fold(self, node: str, digest: Notification, members: Sequence[Notification]) -> None:
        with self._writing() as connection:
            connection.execute(
                self._queries["add_digest"],
                (
                    digest.id,
                    digest.channel,
                    digest.transition,
                    digest.status.value,
                    self._instant(digest.created_at),
                    self._instant(digest.next_attempt_at),
                    node,
                    _encode(digest),
                    members[0].id,
                ),
            )
            for item in members:
                folded = item.evolve(status=Status.DIGESTED, digest_id=digest.id)
                connection.execute(self._queries["settle_notification"], self._settled(folded, node))

    def page(self, limit: int, before: str | None = None, source: str | None = None) -> list[Notification]:
        conditions: list[str] = []
        params: list[Any] = []
        with self._reading() as connection:
            if source is not None:
                conditions.append(f"source = {self._p}")
                params.append(source)
            if before is not None:
                row = connection.execute(self._queries["notification_created_at"], (before,)).fetchone()
                if row is None:
                    return []
                conditions.append(f"(created_at, id) < ({self._p}, {self._p})")
                params += [row[0], before]
            where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
            query = self._queries["notifications_page"].format(where=where)
            rows = connection.execute(query, (*params, limit)).fetchall()
        return [self._note(row) for row in rows]

    def next_due(self) -> datetime | None:
        with self._reading() as connection:
            row = connection.execute(self._queries["next_notification_due"]).fetchone()
        return None if row is None or row[0] is None else self._moment(row[0])

    def prune(self, now: datetime) -> int:
        with self._writing() as connection:
            done = connection.execute(self._queries["prune_notifications"], (self._instant(now - RETENTION),))
            return int(done.rowcount or 0)


def _encode(note: Notification) -> str:
    record = {
        "payload": dict(note.payload),
        "last_error": note.last_error,
        "digest_id": note.digest_id,
        "job_id": note.job_id,
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)
