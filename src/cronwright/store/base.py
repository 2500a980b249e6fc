"""The store seam, written once: `Storage`, the guarantees every store keeps (reads, leases, counts, the
audit log and the outbox); `Backend`, the durable truth, which adds its atomic writes; and `Store`, the
one interface that the node and the service write with, which declares only what it adds to a backend.

A backend (memory, SQLite, PostgreSQL) is atomic per method and raises StoreError when it fails. The
node never writes to one directly: it wraps it in a `Store` (store/resilient.py), which adds what a node
needs on top: degraded mode (writes that failed wait in memory, seen by every read, and are replayed
at the next pass), and answers for writes whose outcome is unknown (semantic 29). The one contract suite
(tests/store/test_store_contract.py) runs through that very object on every backend.

The store, not memory, is the truth about jobs. Every job write is a compare-and-swap on the job's
`version`: a write succeeds only if the stored row still has the version the writer read, and stores
it with the version plus one. A claim of an occurrence is such a write (the job turns `running` with
its `in_flight` set, and its `next_run_at` moves past the occurrence), so however many processes or
nodes read a due job at once, exactly one of them claims it. A save is given its writes as one
`WriteSet`, and answers what became of each as `Saved`, asked of the job written, never by position.

Leases are per node: a node that runs attempts beats (`beat`) at least every `LEASE_BEAT`. A running
job whose `in_flight.node` has not beaten for `LEASE_TTL` belongs to a dead node; `orphans` finds it,
and the engine records its attempt `interrupted` (never re-running it). A live node's beat keeps all
of its runs covered at once, so the cost of a lease does not grow with the runs in flight.

The audit log (semantic 36): `insert`, `save` and `delete` take the entries that record them, and write
each in the very transaction of its mutation, so an entry exists exactly when its mutation does. An entry
whose job was not written (a lost compare-and-swap, a delete of nothing) is not written either.

Optional capabilities (`Watches`, `Troubled`) are small protocols checked with isinstance, never found by
probing for a name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import KW_ONLY, dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Generic, Protocol, TypeVar, runtime_checkable

from cronwright.core.audit import AuditEntry
from cronwright.core.leases import LEASE_TTL
from cronwright.core.model import Job, Persistence, Run, State
from cronwright.core.notifications import Notification
from cronwright.errors import NotFound
from cronwright.store.outbox import Outbox

T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True, slots=True)
class NodeBeat:
    node: str
    beat_at: datetime
    started_at: datetime


def same_record(stored: Run, run: Run) -> bool:
    """Whether a stored run is this very record of its attempt (all but the store's own id agree): then
    writing it again is a replay, not a double run (semantic 29)."""
    return replace(stored, id=None) == replace(run, id=None)


def unknown_run(run_id: int) -> NotFound:
    """The refusal of a `before` that names no run in the history."""
    return NotFound(
        f"no run with id {run_id} in the history (each job keeps its newest run_history runs); "
        "ask again without 'before' to start from the newest"
    )


@dataclass(frozen=True, slots=True)
class WriteSet:
    """What one save writes, in one transaction of the backend.

    - `jobs`, then `claims`: compare-and-swaps. One is written only if its stored row exists, is not
      deleted, and has version `job.version`; it is stored with `job.version + 1`. A job given twice is
      written in order, as one save after another. A backend writes both alike; a `Store` answers a claim
      apart (it is never kept in memory, see `Store.save`).
    - `runs`: appended whatever the jobs' fate (a run of a job deleted meanwhile still reaches the
      history), idempotently by (job_id, fire_id, attempt): a run already recorded, the very same record,
      is not recorded again, so a save replayed after its outcome was unknown writes nothing twice. Each
      job's history is pruned to its newest `run_history` runs.
    - `audit`: each entry is written if its job (`entry.job_id`) was.
    - `notes`, the outbox's (semantic 38): each is added unless its id is stored already (the same
      transition detected twice), or it is about a job of this save whose write did not land: its
      transition was decided on a row that was not the truth.
    """

    jobs: Sequence[Job] = ()
    _: KW_ONLY
    claims: Sequence[Job] = ()
    runs: Sequence[Run] = ()
    audit: Sequence[AuditEntry] = ()
    notes: Sequence[Notification] = ()

    def __post_init__(self) -> None:
        # Frozen through and through: a caller's list changed later never changes what was saved.
        object.__setattr__(self, "jobs", tuple(self.jobs))
        object.__setattr__(self, "claims", tuple(self.claims))
        object.__setattr__(self, "runs", tuple(self.runs))
        object.__setattr__(self, "audit", tuple(self.audit))
        object.__setattr__(self, "notes", tuple(self.notes))

    @property
    def writes(self) -> tuple[Job, ...]:
        """Every compare-and-swap, in the order it is written: `jobs`, then `claims`."""
        return (*self.jobs, *self.claims)


@dataclass(frozen=True, slots=True)
class Saved(Generic[T]):
    """What became of each compare-and-swap of a save, asked of the job written (`of`), never by
    position: `Saved[bool]` from a backend (written or not), `Saved[Write]` from a `Store`."""

    answers: Mapping[int, tuple[tuple[Job, T], ...]]  # by job id: each write of that job, and its outcome

    @staticmethod
    def pair(writes: Iterable[Job], outcomes: Iterable[T]) -> Saved[T]:
        """The answer whose n-th outcome is that of the n-th write (each as long as the other)."""
        answers: dict[int, tuple[tuple[Job, T], ...]] = {}
        for job, outcome in zip(writes, outcomes, strict=True):
            answers[job.id] = (*answers.get(job.id, ()), (job, outcome))
        return Saved(answers)

    def of(self, job: Job) -> T:
        """What became of the write of `job`, the value the save was given (a job given twice in one save
        is answered for each of its values). KeyError if the save was not given it."""
        for written, outcome in self.answers.get(job.id, ()):
            if written is job or written == job:
                return outcome
        raise KeyError(f"job {job.id} at version {job.version} was not in this save")

    def map(self, how: Callable[[T], U]) -> Saved[U]:
        """The same answer with each outcome told as `how` tells it."""
        return Saved(
            {
                job_id: tuple((job, how(outcome)) for job, outcome in pairs)
                for job_id, pairs in self.answers.items()
            }
        )


class Write(StrEnum):
    """What became of one job written by `Store.save`."""

    DURABLE = "durable"  # stored (on disk, or in the memory store, which is all it has)
    KEPT = "kept"  # the store failed; the job lives in memory, seen by reads, and is written again later
    LOST = "lost"  # another writer changed the row first, or the write surely did not land
    UNKNOWN = "unknown"  # a claim whose write failed, and no read back could tell whether it landed


class Storage(Outbox, Protocol):
    """What every store keeps, a backend and the resilient `Store` alike: jobs, runs, node beats, the
    audit log and the outbox of notifications (store/outbox.py's protocol). Every method is atomic on its
    own. `Backend` and `Store` add their writes of many rows (`save`), `delete` and `exclusive`."""

    @property
    def persistence(self) -> Persistence:
        """`persisted` for a durable store (a write has reached disk when it returns), else `memory_only`;
        through a `Store`, `degraded` while a write waits in memory."""
        ...

    @property
    def description(self) -> str:
        """Where the store lives, for `status` (no secrets: a password in a URL is masked)."""
        ...

    @property
    def unreadable(self) -> dict[int, str]:
        """Rows that reads of many rows left out because they cannot be read (a hand edit behind the
        store's back), by job id, with why; a row leaves this once a read finds it whole again."""
        ...

    def insert(self, job: Job, audit: AuditEntry | None = None) -> Job:
        """Stores a new job; returns it with its assigned id and version 1. `audit`, the entry that
        records the create, is written in the same transaction, with the job's id.

        Raises NameTaken if a job that is not deleted already has the name. Atomic with that check.
        """
        ...

    def get(self, job_id: int) -> Job | None:
        """The job with that id, or None if there is none or it was deleted."""
        ...

    def get_many(self, job_ids: Sequence[int]) -> dict[int, Job]:
        """The jobs with these ids that exist and are not deleted, by id, read together."""
        ...

    def find(self, name: str) -> Job | None:
        """The job with that name that is not deleted, if any."""
        ...

    def with_dedupe_key(self, key: str) -> list[tuple[Job, bool]]:
        """Every job ever stored with that key, deleted ones included, as (job, deleted), oldest first.

        StoreCorrupt if one of them cannot be read: leaving it out would let a `once` key be used twice.
        """
        ...

    def jobs(
        self,
        state: State | None = None,
        target: str | None = None,
        created_by: str | None = None,
        *,
        after_name: str | None = None,
        limit: int | None = None,
    ) -> list[Job]:
        """Jobs that are not deleted, ordered by name, optionally of one state, one target and one source.

        `created_by` filters in the store (a durable store reads it through an index), so a source's own
        jobs cost what that source has, not what the store holds. A page is the first `limit` of those
        whose name sorts after `after_name` (names compare by code point).
        """
        ...

    def count_live(self, created_by: str) -> int:
        """How many jobs not deleted that source created are live (active, paused or running).

        Cheap: no job is decoded. It is what a source's `max_schedules` is checked against.
        """
        ...

    def backfills_waiting(self, created_by: str) -> int:
        """How many jobs not deleted that source created have backfilled occurrences queued (each counts
        against its `max_schedules` until its queue has started, docs/backfill.md).

        Cheap: no job is decoded, and a durable store reads only the rows that have a queue (an index).
        """
        ...

    def first_by_id(self, limit: int) -> list[Job]:
        """The first `limit` jobs not deleted, by id: a set that stays stable from read to read (the
        per-job metrics'), read without decoding the jobs beyond it."""
        ...

    def due(self, now: datetime, limit: int) -> list[Job]:
        """Jobs not deleted whose `wake_at()` is at or before `now`, earliest first, at most `limit`. A store
        shared by several nodes may put this node's share of the earliest first (PostgresStore.due)."""
        ...

    def next_wake(self) -> datetime | None:
        """The earliest `wake_at()` of any job not deleted, or None."""
        ...

    def delete_unreadable(self, job_id: int, audit: AuditEntry | None = None) -> bool:
        """Marks a job deleted without reading its row: the operator's way to remove a row that cannot be
        read (a botched hand edit). True if a row that was not deleted had that id. Its runs stay.
        `audit` is written in the same transaction if a row went."""
        ...

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
        """Audit entries, newest first (by id), at most `limit`: those `reader` may see (None: all; a
        source: those it made and those about its own jobs), of one `source`, one job, one name, and
        with `before` (an entry's id) only older ones."""
        ...

    def prune_audit(self, older_than: datetime) -> int:
        """Drops the entries from before `older_than` (retention); answers how many went."""
        ...

    def fold_counts(self) -> int:
        """Folds what the store appended to keep `counts` (PostgreSQL appends a row per change of a job's
        state, so that the nodes' writes never wait on one counter) into one row per source and state;
        answers how many rows it wrote in place of those it folded. Counts stay exact throughout. A store
        that keeps its counts otherwise has nothing to fold (0)."""
        ...

    def runs(
        self,
        job_id: int | None = None,
        limit: int = 100,
        before: int | None = None,
        *,
        created_by: str | None = None,
    ) -> list[Run]:
        """Recorded runs, newest first (by `finished_at`, then by id), of one job or of all, each with
        its `id`. With `before`, a run's id, only the runs that come after that run in this order: the
        next page. NotFound if no run has that id (it was pruned, or never was).

        `created_by` keeps the runs of the jobs not deleted that source created, filtered in the store:
        a source's history decodes the runs it answers with, not its jobs."""
        ...

    def beat(self, node: str, now: datetime) -> None:
        """Renews node `node`'s lease over all of its runs in flight."""
        ...

    def forget(self, node: str) -> None:
        """Drops a node's beat row (on a clean shutdown, after its runs were concluded)."""
        ...

    def beats(self) -> list[NodeBeat]:
        """Every node's last beat, newest first."""
        ...

    def orphans(self, now: datetime, ttl: timedelta = LEASE_TTL) -> list[Job]:
        """Running jobs whose attempt is held by a node that has not beaten since `now - ttl`."""
        ...

    def held(self, node: str) -> list[Job]:
        """Running jobs whose attempt node `node` holds (not those waiting for a retry), by id.

        A node reads its own with it to reconcile them with what it really runs (semantic 29).
        """
        ...

    def lease_left(self, now: datetime, ttl: timedelta, node: str) -> timedelta | None:
        """How long until a run that a node other than `node` holds would be orphaned if its holder beat
        no more: the oldest such holder's last beat plus `ttl`, less now (zero or less once one is
        overdue). None while no other node holds a run. A node sleeps no longer than this, so it finds a
        dead peer's runs within a lease, not a safety interval, later.
        """
        ...

    def counts(self, created_by: str | None = None) -> dict[str, int]:
        """How many jobs (not deleted) are in each state, every state named; of one source's jobs, or of
        all. Cheap: counted from indexed columns, no job decoded."""
        ...

    def close(self) -> None: ...


class Backend(Storage, Protocol):
    """Durable storage (memory, SQLite, PostgreSQL): `Storage` plus the backend's atomic writes."""

    def exclusive(self, guard: AbstractContextManager[object] | None = None) -> AbstractContextManager[None]:
        """A section that no other `exclusive` section on this store runs beside, in any thread, process
        or node: it makes a create's checks (dedupe key, quota, name) and its insert one atomic step.

        Keep it short: it holds the store's write lock (SQLite) or an advisory lock (PostgreSQL). The
        store's own methods may be called inside it, from the thread that entered it, each still atomic on
        its own. It never nests. `guard`, a lock its caller takes around its other calls into this store,
        is held for the section too, taken in the order that cannot deadlock with those calls, and never
        while the section waits for another node.
        """
        ...

    def save(self, writes: WriteSet) -> Saved[bool]:
        """Writes `writes` (see `WriteSet`) in one transaction; answers, per compare-and-swap, whether it
        was written.

        A different record of an attempt already recorded would be a double run: the whole transaction
        fails with DoubleRun (a StoreError naming the attempts). StoreError otherwise: then nothing was
        written, or (the connection dropped after COMMIT was sent) the outcome is unknown, and only reading
        back can tell.
        """
        ...

    def first_versions_by_id(self, limit: int) -> list[tuple[int, int]]:
        """(id, version) of the jobs `first_by_id` would answer, read from two columns, none decoded: a
        reader that keeps what it made of each job's version sees which changed (the /metrics gauges)."""
        ...

    def delete(self, job_id: int, audit: AuditEntry | None = None) -> Job | None:
        """Marks a job deleted and returns the row that went; None if there was none. `audit` is written
        in the same transaction if a row went.

        The row stays for `once` dedupe and its runs stay in the history, but it is never read as a
        job again and its name is free.
        """
        ...


@runtime_checkable
class Watches(Protocol):
    """A backend that announces other processes' changes (PostgreSQL's LISTEN/NOTIFY): `watch` calls
    `wake` on each, and returns what stops it. Without it, such changes land at a node's safety pass."""

    def watch(self, wake: Callable[[], None]) -> Callable[[], None]: ...


@runtime_checkable
class Troubled(Protocol):
    """A backend that says how it fares beyond `persistence`, for `status` (reachable, listening, skew)."""

    @property
    def state(self) -> str: ...


class StoreAlerts(Protocol):
    """Makes the notifications of a `Store`'s own transitions (the node's rules, clock and id)."""

    def degraded(self) -> list[Notification]: ...

    def recovered(self) -> list[Notification]: ...


@dataclass(frozen=True, slots=True)
class Flushed:
    """What a `Store.flush` did with the jobs that waited in memory, by id."""

    written: frozenset[int] = frozenset()  # durable now
    dropped: frozenset[int] = frozenset()  # their rows had moved on: not written, and no longer kept


class Store(Storage, Protocol):
    """The one interface the node and the service write with: a `Backend` (`inner`) plus degraded mode
    and answers for writes of unknown outcome. Below, only what it adds or answers otherwise; every other
    method does what `Storage` says, through the overlay of writes waiting in memory:

    - Reads see the writes waiting in memory (a job kept, a tombstone), so a job stays live, and a deleted
      one gone, while the backend fails; a count of a source's jobs, while one of them waits, counts what
      the reads see. Runs waiting (no id yet) are the newest, on the first page of `runs`; audit entries
      waiting are not shown until written. `delete_unreadable` drops a write of that job waiting.
    - Unknown outcomes (semantic 29): a write that failed may have landed all the same (the connection
      dropped after COMMIT was sent, and the reply was lost). It is found out by reading its rows back,
      never guessed. A save is one transaction, so one row read back tells for all of it. An `insert` that
      failed but landed is answered as the insert it was; one no read back can tell about raises
      OutcomeUnknown; otherwise its StoreError stands.
    """

    inner: Backend
    alerts: StoreAlerts | None  # makes the notifications of its degraded and recovered transitions

    def exclusive(self) -> AbstractContextManager[None]:
        """As `Backend.exclusive`, this store's own lock held for the section too."""
        ...

    def save(self, writes: WriteSet, *, keep: bool = True) -> Saved[Write]:
        """Writes `writes` (see `WriteSet`) in one transaction of the backend, with what waits in memory
        from saves before; answers one Write per compare-and-swap. It never raises StoreError.

        - DURABLE: the row was stored (with the version plus one). LOST: another writer changed the row
          first (decide again from a fresh read), or the write surely did not land.
        - If the backend fails, the save is read back. Found landed, it is answered as written. Else each
          of `jobs` is KEPT in memory (if `keep`; else LOST) and written again by the next save or
          `flush`, and the runs and notes wait with them; `job_persistence_failed` is emitted once per
          job, and `job_persistence_recovered` when it lands. With `keep=False` nothing is kept, runs
          included.
        - A claim is never kept: an occurrence runs only on a DURABLE claim, so that no restart could
          claim it again. A claim that failed is LOST when the read back shows it did not land, and
          UNKNOWN when no read could tell: it must not run, and it may have landed, so its node
          reconciles its own rows once the store answers (`held`, `engine.release`).
        - A different record of an attempt already recorded (a double run) is left out, and said so, and
          the rest of the save is written.
        - Audit entries go with their jobs (or claims): written in the same transaction when the job is,
          and waiting in memory with a KEPT job, to be written when it lands (idempotently, by key).
        """
        ...

    def flush(self) -> Flushed:
        """Writes again what waits in memory (each pass begins with it). A kept job whose row moved on
        meanwhile (another writer, or its own write that had landed unheard) is dropped: the row is the
        truth, and the caller, told which, decides again on it what the kept job recorded."""
        ...

    def delete(self, job_id: int, audit: AuditEntry | None = None) -> tuple[Job | None, Persistence]:
        """As `Backend.delete`, with the persistence of the delete. If the backend fails, a tombstone
        hides the job (it never runs) and the answer is `degraded`; a delete by id retried finishes it,
        and writes the entry with it."""
        ...

    def tombstone(self, job_id: object) -> Job | None:
        """The job a failed delete left behind, if `job_id` names one."""
        ...

    def first_versions_by_id(self, limit: int) -> list[tuple[int, int]] | None:
        """As `Backend.first_versions_by_id`, or None while writes wait in memory: their jobs are not what
        the rows' versions say, so the reader decodes `first_by_id` instead."""
        ...
