"""The in-memory store: for tests and embedding. It keeps nothing across a restart (`memory_only`)."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta

from cronwright.core.audit import AuditEntry, visible
from cronwright.core.leases import LEASE_TTL
from cronwright.core.model import Job, Persistence, Run, State
from cronwright.core.notifications import Notification
from cronwright.errors import DoubleRun, NameTaken
from cronwright.store.base import NodeBeat, Saved, WriteSet, same_record, unknown_run
from cronwright.store.outbox import MemoryOutbox


class MemoryStore:
    def __init__(self, run_history: int = 100) -> None:
        self._lock = threading.Lock()
        self._exclusive = threading.Lock()  # one process holds a memory store: a lock serializes it
        self._jobs: dict[int, Job] = {}
        self._deleted: dict[int, Job] = {}
        self._runs: dict[int, deque[Run]] = defaultdict(lambda: deque(maxlen=run_history))
        self._fires: dict[tuple[int, str, int], Run] = {}  # every run ever recorded, by attempt
        self._beats: dict[str, NodeBeat] = {}
        self._next_id = 1
        self.outbox = MemoryOutbox()
        self._seq = 0  # the last run id given out
        self._audit: list[AuditEntry] = []  # oldest first, each with its id
        self._audit_keys: set[str] = set()
        # Jobs not deleted by (source, state), and the sources' jobs with a backfill queue: kept with every
        # change, under the lock, so a count costs what it answers (semantic 42), as an index does.
        self._tally: Counter[tuple[str, State]] = Counter()
        self._queued: Counter[str] = Counter()

    @property
    def persistence(self) -> Persistence:
        return Persistence.MEMORY_ONLY

    @property
    def description(self) -> str:
        return "memory:"

    @property
    def unreadable(self) -> dict[int, str]:
        return {}  # it holds the objects themselves: nothing to decode

    @contextlib.contextmanager
    def exclusive(self, guard: AbstractContextManager[object] | None = None) -> Iterator[None]:
        with self._exclusive, guard or contextlib.nullcontext():
            yield

    def insert(self, job: Job, audit: AuditEntry | None = None) -> Job:
        with self._lock:
            if any(other.name == job.name for other in self._jobs.values()):
                raise NameTaken(f"a job named '{job.name}' exists; choose another name, or `delete` it first")
            stored = job.evolve(id=self._next_id, version=1)
            self._next_id += 1
            self._jobs[stored.id] = stored
            self._account(None, stored)
            if audit is not None:
                self._record(audit.of_job(stored.id))
            return stored

    def _record(self, entry: AuditEntry) -> None:
        if entry.key in self._audit_keys:
            return  # a replay of an entry written already
        self._audit_keys.add(entry.key)
        self._audit.append(replace(entry, id=len(self._audit_keys)))

    def save(self, writes: WriteSet) -> Saved[bool]:
        with self._lock:
            # Idempotent by attempt: a record met again is not added twice; another record of it is a
            # double run, and nothing is written.
            new: dict[tuple[int, str, int], Run] = {}
            doubles = []
            for run in writes.runs:
                key = (run.job_id, run.fire_id, run.attempt)
                known = new.get(key) or self._fires.get(key)
                if known is None:
                    new[key] = run
                elif not same_record(known, run):
                    doubles.append(key)
            if doubles:
                raise DoubleRun.of(doubles)
            won: set[int] = set()
            lost: set[int] = set()
            written = []
            for job in writes.writes:
                current = self._jobs.get(job.id)
                ok = current is not None and current.version == job.version
                if ok:
                    self._account(current, job)
                    self._jobs[job.id] = job.evolve(version=job.version + 1)
                (won if ok else lost).add(job.id)
                written.append(ok)
            for key, run in new.items():
                self._seq += 1
                self._runs[run.job_id].appendleft(replace(run, id=self._seq))
                self._fires[key] = run
            for entry in writes.audit:
                if entry.job_id in won:
                    self._record(entry)
            self.outbox.add([note for note in writes.notes if note.job_id is None or note.job_id not in lost])
            return Saved.pair(writes.writes, written)

    def get(self, job_id: int) -> Job | None:
        return self._jobs.get(job_id)

    def get_many(self, job_ids: Sequence[int]) -> dict[int, Job]:
        with self._lock:
            return {job_id: self._jobs[job_id] for job_id in job_ids if job_id in self._jobs}

    def find(self, name: str) -> Job | None:
        with self._lock:
            return next((job for job in self._jobs.values() if job.name == name), None)

    def with_dedupe_key(self, key: str) -> list[tuple[Job, bool]]:
        with self._lock:
            rows = [(job, False) for job in self._jobs.values() if job.dedupe_key == key]
            rows += [(job, True) for job in self._deleted.values() if job.dedupe_key == key]
        return sorted(rows, key=lambda row: row[0].id)

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
            found = [
                job
                for job in self._jobs.values()
                if (state is None or job.state is state)
                and (target is None or job.target == target)
                and (created_by is None or job.created_by == created_by)
                and (after_name is None or job.name > after_name)
            ]
        return sorted(found, key=lambda job: job.name)[:limit]

    def _account(self, before: Job | None, after: Job | None) -> None:
        """Moves the tallies from the job as it was to the job as it is now (None: not there)."""
        for job, step in ((before, -1), (after, 1)):
            if job is not None:
                self._tally[(job.created_by, job.state)] += step
                self._queued[job.created_by] += step * bool(job.backfill)

    def count_live(self, created_by: str) -> int:
        with self._lock:
            return sum(self._tally[(created_by, state)] for state in State if state.live)

    def backfills_waiting(self, created_by: str) -> int:
        with self._lock:
            return self._queued[created_by]

    def first_by_id(self, limit: int) -> list[Job]:
        with self._lock:
            # Ids are handed out rising and a dict keeps insertion order: the first are the oldest.
            return [job for job, _ in zip(self._jobs.values(), range(max(limit, 0)), strict=False)]

    def first_versions_by_id(self, limit: int) -> list[tuple[int, int]]:
        return [(job.id, job.version) for job in self.first_by_id(limit)]

    def due(self, now: datetime, limit: int) -> list[Job]:
        with self._lock:
            waking = [(wake, job) for job in self._jobs.values() if (wake := job.wake_at()) is not None]
        due = sorted(((wake, job.id, job) for wake, job in waking if wake <= now), key=lambda row: row[:2])
        return [job for _, _, job in due[:limit]]

    def next_wake(self) -> datetime | None:
        with self._lock:
            wakes = [wake for job in self._jobs.values() if (wake := job.wake_at()) is not None]
        return min(wakes, default=None)

    def delete(self, job_id: int, audit: AuditEntry | None = None) -> Job | None:
        with self._lock:
            job = self._jobs.pop(job_id, None)
            if job is not None:
                self._account(job, None)
                self._deleted[job_id] = job
                if audit is not None:
                    self._record(audit)
            return job

    def delete_unreadable(self, job_id: int, audit: AuditEntry | None = None) -> bool:
        return self.delete(job_id, audit) is not None  # every row in memory can be read

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
        with self._lock:
            found = [
                entry
                for entry in reversed(self._audit)
                if visible(entry, reader)
                and (source is None or entry.source == source)
                and (job_id is None or entry.job_id == job_id)
                and (name is None or entry.name == name)
                and (before is None or (entry.id or 0) < before)
            ]
        return found[: max(limit, 0)]

    def fold_counts(self) -> int:
        return 0  # its tallies are kept in place

    def prune_audit(self, older_than: datetime) -> int:
        with self._lock:
            kept = [entry for entry in self._audit if entry.at >= older_than]
            dropped = len(self._audit) - len(kept)
            self._audit = kept
            return dropped

    def runs(
        self,
        job_id: int | None = None,
        limit: int = 100,
        before: int | None = None,
        *,
        created_by: str | None = None,
    ) -> list[Run]:
        with self._lock:
            every = [run for runs in self._runs.values() for run in runs]
            if before is not None:
                cursor = next((run for run in every if run.id == before), None)
                if cursor is None:
                    raise unknown_run(before)
                every = [run for run in every if _newest_first(run) < _newest_first(cursor)]
            if job_id is not None:
                every = [run for run in every if run.job_id == job_id]
            if created_by is not None:
                mine = {job.id for job in self._jobs.values() if job.created_by == created_by}
                every = [run for run in every if run.job_id in mine]
        return sorted(every, key=_newest_first, reverse=True)[:limit]

    def beat(self, node: str, now: datetime) -> None:
        with self._lock:
            known = self._beats.get(node)
            self._beats[node] = NodeBeat(node, now, known.started_at if known else now)

    def forget(self, node: str) -> None:
        with self._lock:
            self._beats.pop(node, None)

    def beats(self) -> list[NodeBeat]:
        with self._lock:
            return sorted(self._beats.values(), key=lambda beat: beat.beat_at, reverse=True)

    def orphans(self, now: datetime, ttl: timedelta = LEASE_TTL) -> list[Job]:
        with self._lock:
            alive = {beat.node for beat in self._beats.values() if beat.beat_at > now - ttl}
            return [
                job
                for job in self._jobs.values()
                if job.state is State.RUNNING and job.flight_node is not None and job.flight_node not in alive
            ]

    def held(self, node: str) -> list[Job]:
        with self._lock:
            return [
                job
                for job in sorted(self._jobs.values(), key=lambda job: job.id)
                if job.state is State.RUNNING and job.flight_node == node
            ]

    def lease_left(self, now: datetime, ttl: timedelta, node: str) -> timedelta | None:
        with self._lock:
            holders = {
                job.flight_node
                for job in self._jobs.values()
                if job.state is State.RUNNING and job.flight_node not in (None, node)
            }
            if not holders:
                return None
            beats = [self._beats[h].beat_at if h in self._beats else None for h in holders]
            if None in beats:
                return timedelta(0)  # a holder that never beat is overdue already
            return min(beat for beat in beats if beat is not None) + ttl - now

    def counts(self, created_by: str | None = None) -> dict[str, int]:
        with self._lock:
            counts = {state.value: 0 for state in State}
            for (source, state), number in self._tally.items():
                if created_by is None or source == created_by:
                    counts[state.value] += number
            return counts

    def close(self) -> None:
        pass

    # --- the outbox (notify.outbox.Outbox): a MemoryOutbox ---------------------------------------

    def add(self, notifications: Sequence[Notification]) -> None:
        self.outbox.add(notifications)

    def claim(self, node: str, now: datetime, hold: timedelta, limit: int) -> list[Notification]:
        return self.outbox.claim(node, now, hold, limit)

    def sent_since(self, since: datetime) -> dict[str, int]:
        return self.outbox.sent_since(since)

    def settle(self, node: str, done: Sequence[Notification]) -> None:
        self.outbox.settle(node, done)

    def fold(self, node: str, digest: Notification, members: Sequence[Notification]) -> None:
        self.outbox.fold(node, digest, members)

    def page(self, limit: int, before: str | None = None, source: str | None = None) -> list[Notification]:
        return self.outbox.page(limit, before, source)

    def prune(self, now: datetime) -> int:
        return self.outbox.prune(now)

    def next_due(self) -> datetime | None:
        return self.outbox.next_due()


def _newest_first(run: Run) -> tuple[datetime, int]:
    """The order of the history, as the SQL stores keep it: by finish, then by insertion."""
    return run.finished_at, run.id or 0
