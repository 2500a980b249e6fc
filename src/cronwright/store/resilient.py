"""A store wrapper that keeps jobs live in memory while their saves fail (DESIGN semantic 18).

When a write of a job fails, the job as it should be stays in a pending overlay that every read sees,
`job_persistence_failed` is emitted once for that job, and each later write (or `flush`) tries again.
The first write of the job that succeeds emits `job_persistence_recovered`. A delete that fails leaves
a tombstone: the job is hidden and never runs, and a retried delete by id finishes it.

Claims are the exception: the node never runs an occurrence whose claim is not durable, since a
restart could then claim it again. So `save` reports per job whether the write is durable.

A write that failed may have landed all the same: the connection dropped after COMMIT was sent, and the
reply was lost (semantic 29). Its outcome is found out by reading its rows back, never guessed: found
landed, it is answered as written; found not, as failed; and a claim whose outcome no read could tell is
UNKNOWN, which its node reconciles later (`Node._reconcile`). Runs are written idempotently, so runs
kept in memory and replayed after a save that did land are not recorded twice, and never stop the
writes that follow them.

Notifications (semantic 38) are written in the transaction of the save that makes their transition, and
wait in memory with the runs when it fails. The store's own transitions are told through `StoreAlerts`:
`persistence_degraded` when a save first fails, and `persistence_recovered` once nothing waits any more;
the first is written when the store takes writes again, since it cannot be written before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta

from cronwright.core.audit import AuditEntry
from cronwright.core.events import Event, EventKind, EventSink
from cronwright.core.leases import LEASE_TTL
from cronwright.core.model import Job, Persistence, Run, State
from cronwright.core.notifications import Notification
from cronwright.errors import DoubleRun, OutcomeUnknown, StoreCorrupt, StoreError
from cronwright.store.base import Backend, Flushed, NodeBeat, Saved, StoreAlerts, Write, WriteSet

log = logging.getLogger("cronwright.store")


__all__ = ["Flushed", "ResilientStore", "StoreAlerts", "Write"]


class ResilientStore:
    """The `Store` the node and the service write with, over a `Backend` (see `base.Store`)."""

    def __init__(self, inner: Backend, events: EventSink, alerts: StoreAlerts | None = None) -> None:
        self.inner = inner
        self._events = events
        self.alerts = alerts
        self._pending_notes: list[Notification] = []
        self._degraded = False  # a save failed, and not everything it left in memory is written yet
        self._lock = threading.RLock()
        self._pending: dict[int, Job] = {}
        self._pending_runs: list[Run] = []
        # Entries of writes kept in memory: written with them when they land (idempotent by key).
        self._pending_audit: list[AuditEntry] = []
        self._tombstones: dict[int, Job] = {}
        self._tombstone_audit: dict[int, AuditEntry] = {}
        self._failing: set[int] = set()

    # --- writes ---------------------------------------------------------------------------------

    @property
    def persistence(self) -> Persistence:
        with self._lock:
            if self._pending or self._pending_runs or self._tombstones:
                return Persistence.DEGRADED
        return self.inner.persistence

    @property
    def description(self) -> str:
        return self.inner.description

    @property
    def unreadable(self) -> dict[int, str]:
        return self.inner.unreadable

    def exclusive(self) -> AbstractContextManager[None]:
        # This store's lock is held for the section too; the inner store takes it in the order that
        # cannot deadlock with a save (which holds it around the inner store's own lock).
        return self.inner.exclusive(self._lock)

    def insert(self, job: Job, audit: AuditEntry | None = None) -> Job:
        try:
            return self.inner.insert(job, audit)
        except StoreError as error:
            # Its entry landed with it if it did (one transaction); the caller must never be told that
            # nothing changed when it cannot be known.
            if isinstance(error, StoreCorrupt):
                raise
            try:
                stored = self.inner.find(job.name)
            except StoreError:
                raise OutcomeUnknown(
                    f"the store stopped answering while '{job.name}' was being created ({error}), and could"
                    " not be read back: it may have been created. Ask for it by name (`get`) once the store"
                    " answers; a create retried with the same dedupe_key cannot make a second one"
                ) from error
            if stored is not None and _same_insert(stored, job):
                log.warning("an insert whose reply was lost had landed, as reading it back shows: %s", error)
                return stored
            raise

    def save(self, writes: WriteSet, *, keep: bool = True) -> Saved[Write]:
        with self._lock:
            # What waits in memory from saves before goes first, in the same transaction.
            whole = replace(
                writes,
                runs=(*self._pending_runs, *writes.runs),
                audit=(*self._pending_audit, *writes.audit),
                notes=(*self._pending_notes, *writes.notes),
            )
            try:
                try:
                    landed = self.inner.save(whole)
                except DoubleRun as error:
                    # Another writer recorded those attempts first (two nodes recovering one orphan, say).
                    log.warning("%s; the write goes on without those runs", error)
                    doubles = set(error.keys)
                    whole = replace(
                        whole,
                        runs=[
                            run for run in whole.runs if (run.job_id, run.fire_id, run.attempt) not in doubles
                        ],
                    )
                    landed = self.inner.save(whole)
            except StoreError as error:
                return self._failed(whole, keep, error)
            self._landed(whole, landed)
            self._end_degraded()
            return landed.map(_durable)

    def _landed(self, whole: WriteSet, landed: Saved[bool]) -> None:
        """A save landed: nothing it carried waits any more, but the entries of jobs kept by other saves."""
        self._pending_runs = []
        self._pending_notes = []
        for job in whole.jobs:
            if landed.of(job):
                self._recovered(job)
        self._pending_audit = [entry for entry in whole.audit if entry.job_id in self._pending]

    def _failed(self, whole: WriteSet, keep: bool, error: StoreError) -> Saved[Write]:
        landed, stored = self._read_back(whole.writes)
        if landed:
            # The transaction committed whole; each job was written if its row is what was written.
            log.warning("a write whose reply was lost had landed, as reading it back shows: %s", error)
            found = Saved.pair(
                whole.writes,
                (stored.get(job.id) == job.evolve(version=job.version + 1) for job in whole.writes),
            )
            self._landed(whole, found)
            return found.map(_durable)
        failed_claim = Write.LOST if landed is False else Write.UNKNOWN
        if not keep:
            log.warning("a claim could not be saved, so it does not run: %s", error)
            return Saved.pair(whole.writes, [failed_claim] * len(whole.writes))
        self._pending_notes = list(whole.notes)
        for job in whole.jobs:
            self._keep(job, error)
        self._pending_runs = list(whole.runs)
        # The entries of the jobs kept wait with them; a claim's (never kept) goes with it.
        self._pending_audit = [entry for entry in whole.audit if entry.job_id in self._pending]
        if whole.claims:
            log.warning("%d claims could not be saved, so they do not run: %s", len(whole.claims), error)
        return Saved.pair(
            whole.writes, [*[Write.KEPT] * len(whole.jobs), *[failed_claim] * len(whole.claims)]
        )

    def _read_back(self, written: Sequence[Job]) -> tuple[bool | None, dict[int, Job]]:
        """Whether a save of `written` that failed landed: True, False, or None when nothing tells.

        A save is one transaction, so one row tells for all: a row that is what was written says it
        landed; a row still at the version it was read at says it did not (versions only grow, and the
        write was conditional on that version). None if the read fails, or every row moved on.
        """
        if not written:
            return None, {}
        try:
            stored = self.inner.get_many([job.id for job in written])
        except StoreError:
            return None, {}
        for job in written:
            row = stored.get(job.id)
            if row is None:
                continue
            if row == job.evolve(version=job.version + 1):
                return True, stored
            if row.version == job.version:
                return False, stored
        return None, stored

    def _keep(self, job: Job, error: StoreError) -> None:
        self._pending[job.id] = job
        self._degrade()
        if job.id not in self._failing:
            self._failing.add(job.id)
            cause = repr(error.__cause__ or error)[:120]
            self._events.emit(
                Event(
                    EventKind.JOB_PERSISTENCE_FAILED,
                    job.id,
                    job.name,
                    {"error": cause, "dedupe_key": job.dedupe_key},
                )
            )

    def _degrade(self) -> None:
        """A write waits in memory: the first one makes the `persistence_degraded` transition."""
        if not self._degraded:
            self._degraded = True
            if self.alerts is not None:
                self._pending_notes.extend(self.alerts.degraded())

    def _end_degraded(self) -> None:
        """Once nothing waits in memory, `persistence_recovered`, written at once (or at the next save)."""
        if not self._degraded or self._pending or self._pending_runs or self._tombstones:
            return
        self._degraded = False
        if self.alerts is None:
            return
        recovered = self.alerts.recovered()
        try:
            self.inner.save(WriteSet(notes=[*self._pending_notes, *recovered]))
        except StoreError as error:
            log.warning("the notification that the store recovered waits for the next save: %s", error)
            self._pending_notes.extend(recovered)
            return
        self._pending_notes = []

    def _recovered(self, job: Job) -> None:
        self._pending.pop(job.id, None)
        if job.id in self._failing:
            self._failing.discard(job.id)
            self._events.emit(Event(EventKind.JOB_PERSISTENCE_RECOVERED, job.id, job.name, {}))

    def flush(self) -> Flushed:
        with self._lock:
            for job_id in list(self._tombstones):
                self.delete(job_id, self._tombstone_audit.get(job_id))
            pending = list(self._pending.values())
            if not (pending or self._pending_runs or self._pending_audit or self._pending_notes):
                return Flushed()
            written = self.save(WriteSet(pending))
            dropped: set[int] = set()
            for job in pending:
                if written.of(job) is Write.LOST and job.id in self._pending and self._stale(job):
                    # The row moved on without us (another writer); the stored row is the truth.
                    self._recovered(job)
                    dropped.add(job.id)
            durable = {job.id for job in pending if written.of(job) is Write.DURABLE}
            return Flushed(frozenset(durable), frozenset(dropped))

    def _stale(self, job: Job) -> bool:
        try:
            stored = self.inner.get(job.id)
        except StoreError:
            return False
        return stored is None or stored.version != job.version

    def delete(self, job_id: int, audit: AuditEntry | None = None) -> tuple[Job | None, Persistence]:
        with self._lock:
            known = self._tombstones.get(job_id) or self.get(job_id)
            audit = audit or self._tombstone_audit.get(job_id)
            try:
                gone = self.inner.delete(job_id, audit)
            except StoreError as error:
                if known is None:
                    raise
                self._tombstones[job_id] = known
                if audit is not None:
                    self._tombstone_audit[job_id] = audit
                self._pending.pop(job_id, None)
                self._keep_tombstone(known, error)
                return known, Persistence.DEGRADED
            self._pending.pop(job_id, None)
            self._tombstone_audit.pop(job_id, None)
            tomb = self._tombstones.pop(job_id, None)
            if tomb is not None:
                self._recovered(tomb)
                self._end_degraded()
            return gone or tomb, self.inner.persistence

    def delete_unreadable(self, job_id: int, audit: AuditEntry | None = None) -> bool:
        with self._lock:
            self._pending.pop(job_id, None)
            return self.inner.delete_unreadable(job_id, audit)

    def tombstone(self, job_id: object) -> Job | None:
        with self._lock:
            return self._tombstones.get(job_id) if isinstance(job_id, int) else None

    def _keep_tombstone(self, job: Job, error: StoreError) -> None:
        self._degrade()
        if job.id not in self._failing:
            self._failing.add(job.id)
            self._events.emit(
                Event(
                    EventKind.JOB_PERSISTENCE_FAILED, job.id, job.name, {"error": repr(error.__cause__)[:120]}
                )
            )

    # --- reads see the overlay ------------------------------------------------------------------

    def _overlay(self, job: Job | None) -> Job | None:
        if job is None or job.id in self._tombstones:
            return None
        return self._pending.get(job.id, job)

    def get(self, job_id: int) -> Job | None:
        with self._lock:
            if job_id in self._tombstones:
                return None
            if job_id in self._pending:
                return self._pending[job_id]
        return self.inner.get(job_id)

    def get_many(self, job_ids: Sequence[int]) -> dict[int, Job]:
        with self._lock:
            live = [job_id for job_id in job_ids if job_id not in self._tombstones]
            kept = {job_id: self._pending[job_id] for job_id in live if job_id in self._pending}
            unread = [job_id for job_id in live if job_id not in kept]
        return {**(self.inner.get_many(unread) if unread else {}), **kept}

    def find(self, name: str) -> Job | None:
        with self._lock:
            for job in self._pending.values():
                if job.name == name:
                    return job
            return self._overlay(self.inner.find(name))

    def with_dedupe_key(self, key: str) -> list[tuple[Job, bool]]:
        rows = self.inner.with_dedupe_key(key)
        with self._lock:
            return [
                (self._pending.get(job.id, job), deleted or job.id in self._tombstones)
                for job, deleted in rows
            ]

    def jobs(
        self,
        state: State | None = None,
        target: str | None = None,
        created_by: str | None = None,
        *,
        after_name: str | None = None,
        limit: int | None = None,
    ) -> list[Job]:
        with self._lock:
            if not self._pending and not self._tombstones:
                return self.inner.jobs(state, target, created_by, after_name=after_name, limit=limit)
            # A job's target and creator never change, so the stored row filters on them as well as the
            # overlay would; its state and name may differ in the overlay, so those filters come after it.
            found = [self._overlay(job) for job in self.inner.jobs(None, target, created_by)]
            kept = sorted(
                (
                    job
                    for job in found
                    if job is not None
                    and (state is None or job.state is state)
                    and (after_name is None or job.name > after_name)
                ),
                key=lambda job: job.name,
            )
            return kept[:limit]

    def _overlaid(self, created_by: str) -> bool:
        """Whether a job of that source waits in memory (kept, or a tombstone): then its row may not
        tell its state, and a count reads what the reads see (degraded mode only)."""
        return any(
            job.created_by == created_by for job in (*self._pending.values(), *self._tombstones.values())
        )

    def count_live(self, created_by: str) -> int:
        with self._lock:
            if self._overlaid(created_by):
                return sum(1 for job in self.jobs(created_by=created_by) if job.state.live)
            return self.inner.count_live(created_by)

    def backfills_waiting(self, created_by: str) -> int:
        with self._lock:
            if self._overlaid(created_by):
                return sum(1 for job in self.jobs(created_by=created_by) if job.backfill)
            return self.inner.backfills_waiting(created_by)

    def first_by_id(self, limit: int) -> list[Job]:
        with self._lock:
            # A tombstone hides its row: read as many more as there are, so the first `limit` stay.
            stored = self.inner.first_by_id(limit + len(self._tombstones))
            return [job for job in map(self._overlay, stored) if job is not None][: max(limit, 0)]

    def first_versions_by_id(self, limit: int) -> list[tuple[int, int]] | None:
        with self._lock:
            if self._pending or self._tombstones:
                return None
            return self.inner.first_versions_by_id(limit)

    def due(self, now: datetime, limit: int) -> list[Job]:
        with self._lock:
            due = [job for job in map(self._overlay, self.inner.due(now, limit)) if job is not None]
            seen = {job.id for job in due}
            for job in self._pending.values():
                wake = job.wake_at()
                if job.id not in seen and wake is not None and wake <= now:
                    due.append(job)
            return [job for job in due if (wake := job.wake_at()) is not None and wake <= now]

    def next_wake(self) -> datetime | None:
        with self._lock:
            wakes = [wake for job in self._pending.values() if (wake := job.wake_at()) is not None]
        stored = self.inner.next_wake()
        return min([*wakes, *([stored] if stored else [])], default=None)

    def runs(
        self,
        job_id: int | None = None,
        limit: int = 100,
        before: int | None = None,
        *,
        created_by: str | None = None,
    ) -> list[Run]:
        with self._lock:
            # Runs not yet written have no id; they are the newest, so they belong to the first page.
            waiting = [
                run
                for run in self._pending_runs
                if before is None and (job_id is None or run.job_id == job_id)
            ]
        if created_by is not None and waiting:
            owners = self.get_many(sorted({run.job_id for run in waiting}))
            waiting = [
                run for run in waiting if run.job_id in owners and owners[run.job_id].created_by == created_by
            ]
        stored = self.inner.runs(job_id, limit, before, created_by=created_by)
        return sorted([*waiting, *stored], key=lambda run: run.finished_at, reverse=True)[:limit]

    def audit(
        self,
        *,
        reader: str | None = None,
        source: str | None = None,
        job_id: int | None = None,
        name: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[AuditEntry]:
        return self.inner.audit(
            reader=reader, source=source, job_id=job_id, name=name, before=before, limit=limit
        )

    def prune_audit(self, older_than: datetime) -> int:
        return self.inner.prune_audit(older_than)

    def fold_counts(self) -> int:
        return self.inner.fold_counts()

    def beat(self, node: str, now: datetime) -> None:
        self.inner.beat(node, now)

    def forget(self, node: str) -> None:
        self.inner.forget(node)

    def beats(self) -> list[NodeBeat]:
        return self.inner.beats()

    def orphans(self, now: datetime, ttl: timedelta = LEASE_TTL) -> list[Job]:
        return [job for job in map(self._overlay, self.inner.orphans(now, ttl)) if job is not None]

    def held(self, node: str) -> list[Job]:
        with self._lock:
            held = [job for job in map(self._overlay, self.inner.held(node)) if job is not None]
            return [job for job in held if job.state is State.RUNNING and job.flight_node == node]

    def lease_left(self, now: datetime, ttl: timedelta, node: str) -> timedelta | None:
        return self.inner.lease_left(now, ttl, node)

    def counts(self, created_by: str | None = None) -> dict[str, int]:
        with self._lock:
            if created_by is not None and self._overlaid(created_by):
                counts = {state.value: 0 for state in State}
                for job in self.jobs(created_by=created_by):
                    counts[job.state.value] += 1
                return counts
        return self.inner.counts(created_by)

    def close(self) -> None:
        self.inner.close()

    # --- the outbox: the backend's own ----------------------------------------------------------

    def add(self, notifications: Sequence[Notification]) -> None:
        self.inner.add(notifications)

    def claim(self, node: str, now: datetime, hold: timedelta, limit: int) -> list[Notification]:
        return self.inner.claim(node, now, hold, limit)

    def sent_since(self, since: datetime) -> dict[str, int]:
        return self.inner.sent_since(since)

    def settle(self, node: str, done: Sequence[Notification]) -> None:
        self.inner.settle(node, done)

    def fold(self, node: str, digest: Notification, members: Sequence[Notification]) -> None:
        self.inner.fold(node, digest, members)

    def page(self, limit: int, before: str | None = None, source: str | None = None) -> list[Notification]:
        return self.inner.page(limit, before, source)

    def prune(self, now: datetime) -> int:
        return self.inner.prune(now)

    def next_due(self) -> datetime | None:
        return self.inner.next_due()


def _durable(written: bool) -> Write:
    return Write.DURABLE if written else Write.LOST


def _same_insert(stored: Job, job: Job) -> bool:
    """Whether `stored` is the row `job`'s insert wrote, though it may have moved on since (a node may
    have fired it already): what never changes after a create is what it was created with."""
    return (
        stored.created_at == job.created_at
        and stored.created_by == job.created_by
        and stored.target == job.target
        and stored.action == job.action
        and stored.dedupe_key == job.dedupe_key
    )
