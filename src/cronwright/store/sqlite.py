"""The SQLite store: one file on one host, durable, shared safely by every process that opens it.

Durability: WAL with `synchronous=FULL`, so a write is on disk when its method returns (semantic 18).
Atomicity: one transaction per method; writes take the write lock up front (`BEGIN IMMEDIATE`), so a
compare-and-swap and its run inserts are one atomic step across processes, and a second process waits
(`busy_timeout`) instead of failing. Order: a firing node's write goes before any caller's write that has not
begun (a front's, a CLI's): a burst of creates holds a claim back by the one write in flight at most
(turnstile.py, semantic 42).

Threads: one connection, guarded by one lock. SQLite serializes writers anyway and every read here is
short, so a connection per thread would buy little, would leak with threads that come and go, and
`close()` could not reach it.

Safety of foreign files: an existing file is first checked by reading its header bytes, before SQLite
opens it, so a file that is not a cronwright store (another application's database, random bytes) is
refused with StoreCorrupt and left byte for byte as it was, with no -wal or -shm beside it. A new store
is built in a temporary file and linked into place complete, so no process ever sees a half-made one.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cronwright._version import __version__
from cronwright.core.audit import AuditEntry, entry_data
from cronwright.core.leases import LEASE_TTL
from cronwright.core.model import Job, Persistence, Run, State
from cronwright.errors import DoubleRun, NameTaken, StoreCorrupt, StoreError
from cronwright.store import sql_files
from cronwright.store.base import NodeBeat, Saved, WriteSet
from cronwright.store.codec import encode, from_micros, job_data, micros, read_job, read_run, run_data
from cronwright.store.sql_outbox import SqlOutbox
from cronwright.store.sql_reads import SqlJobReads
from cronwright.store.turnstile import Turnstile, turnstile_path

# PRAGMA application_id: "CrWt". It marks a file as a cronwright store, so another application's
# database is never taken for one (and never migrated).
APPLICATION_ID = int.from_bytes(b"CrWt", "big")

_MAGIC = b"SQLite format 3\x00"
_BUSY_TIMEOUT = 30.0

# The named statements (sql/sqlite/queries.sql).
_Q = sql_files.queries("sqlite")
# Rows per statement of a save, within SQLite's limit on bound parameters (32,766 since 3.32).
_JOBS_PER_STATEMENT = 1000  # ten parameters each
_RUNS_PER_STATEMENT = 1000  # five each
_IDS_PER_STATEMENT = 1000
_JOB_ROW = "(" + ", ".join(["?"] * 10) + ")"


def schema_sql() -> str:
    return sql_files.schema_sql("sqlite")


def migrations() -> tuple[tuple[int, str], ...]:
    return sql_files.migrations("sqlite")


def schema_version() -> int:
    """The schema version this code writes: the number of the last migration."""
    return len(migrations())


def statements(script: str) -> list[str]:
    """Splits a SQL script into statements, so each runs inside the caller's transaction.

    `executescript` would commit any open transaction first, which is exactly what a migration must
    not do: the version check and the migration it decides on have to be one transaction.
    """
    found: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            found.append(pending.strip())
            pending = ""
    rest = "".join(line for line in pending.splitlines() if not line.strip().startswith("--"))
    if rest.strip():
        raise StoreError(f"a SQL script ends with an unfinished statement: {rest.strip()[:80]!r}")
    return found


class SqliteStore(SqlJobReads, SqlOutbox):
    """The Store protocol on one SQLite file (see the module docstring for how each guarantee is kept)."""

    _p = "?"
    _queries = _Q
    # The class of the store's connection (a fault test puts in one whose commit lands, then raises).
    _connection_class: type[sqlite3.Connection] = sqlite3.Connection

    def __init__(
        self,
        path: str | Path,
        run_history: int = 100,
        *,
        busy_timeout: float = _BUSY_TIMEOUT,
        first_writer: bool = False,
    ) -> None:
        """`first_writer` for a firing node's store: its writes go before any caller's write that has
        not begun yet (turnstile.py)."""
        if run_history < 0:
            raise ValueError(f"run_history must be 0 or more, not {run_history}")
        self._path = Path(path).expanduser().absolute()
        self._run_history = run_history
        self._lock = threading.RLock()
        self._exclusive_thread: int | None = None  # inside `exclusive`: its calls join its transaction
        self._unreadable: dict[int, str] = {}
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            if not self._path.exists():
                self._create()
        except OSError as err:
            raise StoreError(f"cannot create the store {self._path}: {err}") from err
        except sqlite3.Error as err:
            raise StoreError(f"cannot create the store {self._path}: {err}") from err
        self._check_header()
        self._conn: sqlite3.Connection | None = self._open(busy_timeout)
        self._turnstile = Turnstile(turnstile_path(self._path), first_writer, busy_timeout)

    @property
    def persistence(self) -> Persistence:
        return Persistence.PERSISTED

    @property
    def description(self) -> str:
        return f"sqlite:///{self._path}"

    @property
    def path(self) -> Path:
        return self._path

    # -- opening -----------------------------------------------------------------------------------

    def _create(self) -> None:
        """Builds a complete store in a temporary file and links it into place.

        A crash part-way leaves only a temporary file, never a half-made store at the path. When two
        processes create at once, the first link wins and the other simply opens that one. The file is
        readable by its owner only (as mkstemp makes it), since jobs' args may be private.
        """
        handle, temporary = tempfile.mkstemp(
            prefix=f".{self._path.name}.", suffix=".new", dir=self._path.parent
        )
        os.close(handle)
        try:
            connection = sqlite3.connect(temporary, isolation_level=None)
            try:
                connection.execute("PRAGMA synchronous = FULL")
                connection.execute("BEGIN IMMEDIATE")
                # The marker goes in before WAL is on, so it is in the file's header bytes, where the
                # next open reads it without SQLite.
                connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                for statement in statements(schema_sql()):
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {schema_version()}")
                connection.execute("COMMIT")
                connection.execute("PRAGMA journal_mode = WAL")
            finally:
                connection.close()
            _fsync(Path(temporary))
            _link(Path(temporary), self._path)
            _fsync(self._path.parent)
        finally:
            for leftover in ("", "-journal", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary + leftover)

    def _check_header(self) -> None:
        """Refuses a file that is not a cronwright store by its header bytes, before SQLite opens it."""
        try:
            with self._path.open("rb") as file:
                header = file.read(100)
        except OSError as err:
            raise StoreError(f"cannot read the store {self._path}: {err}") from err
        untouched = "It was left untouched; move it away, or point the store at another path."
        if len(header) < 100 or not header.startswith(_MAGIC):
            raise StoreCorrupt(
                f"{self._path} is not a cronwright store: it is not a SQLite database, or it is damaged."
                f" {untouched}"
            )
        application = int.from_bytes(header[68:72], "big", signed=True)
        if application != APPLICATION_ID:
            raise StoreCorrupt(
                f"{self._path} is not a cronwright store: it is a SQLite database of another application"
                f" (application_id {application:#x}). {untouched}"
            )
        # user_version only grows, and the WAL can only hold a newer one, so the header's is a safe
        # early refusal; `_migrate` checks again under the write lock.
        self._refuse_newer(int.from_bytes(header[60:64], "big", signed=True))

    def _refuse_newer(self, version: int) -> None:
        if version > schema_version():
            raise StoreError(
                f"{self._path} has schema version {version}, newer than this cronwright knows"
                f" ({__version__}, schema version {schema_version()}): it was written by a later release."
                " Upgrade cronwright to open it; it was left untouched."
            )

    def _open(self, busy_timeout: float) -> sqlite3.Connection:
        try:
            # isolation_level=None: the driver opens no transaction of its own; each method opens one.
            connection = sqlite3.connect(
                self._path,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                factory=self._connection_class,
            )
        except sqlite3.Error as err:
            raise self._open_error(err) from err
        try:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal":
                raise StoreError(f"{self._path} could not be switched to WAL (journal_mode is {mode})")
            connection.execute("PRAGMA synchronous = FULL")
            self._migrate(connection)
        except sqlite3.Error as err:
            connection.close()
            raise self._open_error(err) from err
        except BaseException:
            connection.close()
            raise
        return connection

    def _migrate(self, connection: sqlite3.Connection) -> None:
        connection.execute("BEGIN IMMEDIATE")
        try:
            application = connection.execute("PRAGMA application_id").fetchone()[0]
            if application != APPLICATION_ID:
                raise StoreCorrupt(
                    f"{self._path} is not a cronwright store (application_id {application:#x})"
                )
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            self._refuse_newer(version)
            for number, script in migrations()[version:]:
                for statement in statements(script):
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {number}")
            # Reading the schema parses it, so a damaged first page shows here and not at the first write;
            # and a file stamped as a store but missing its tables is refused rather than half used.
            tables = {row[0] for row in connection.execute(_Q["tables"])}
            missing = sorted(sql_files.schema_tables("sqlite") - tables)
            if missing:
                raise StoreCorrupt(f"{self._path} is damaged: its tables {', '.join(missing)} are missing")
            connection.execute("COMMIT")
        except BaseException:
            _rollback(connection)
            raise

    def _open_error(self, err: sqlite3.Error) -> StoreError:
        if _damaged(err):
            return StoreCorrupt(f"{self._path} is damaged and cannot be opened as a cronwright store: {err}")
        return StoreError(f"cannot open the store {self._path}: {err}")

    # -- transactions ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction, under the lock; any driver error becomes StoreError and rolls it all back."""
        with self._lock:
            connection = self._conn
            if connection is None:
                raise StoreError(f"the store {self._path} is closed")
            joined = self._exclusive_thread == threading.get_ident()
            # Inside an `exclusive` section this call is part of its transaction, and a savepoint keeps
            # it atomic on its own: a call that fails leaves nothing of itself in the section.
            begin, commit, rollback = (
                ("SAVEPOINT store_call", "RELEASE store_call", _undo_call)
                if joined
                else ("BEGIN IMMEDIATE" if write else "BEGIN", "COMMIT", _rollback)
            )
            try:
                # IMMEDIATE takes the write lock before the first read, so a read-then-write is atomic
                # across processes, and a busy database is waited for here rather than failing mid-way.
                with self._turnstile.entering() if write and not joined else contextlib.nullcontext(False):
                    connection.execute(begin)
                yield connection
                connection.execute(commit)
            except sqlite3.Error as err:
                rollback(connection)
                if _damaged(err):
                    raise StoreCorrupt(f"the store {self._path} is damaged: {err}") from err
                raise StoreError(f"the store {self._path} failed: {err}") from err
            except BaseException:
                rollback(connection)
                raise

    @contextlib.contextmanager
    def exclusive(self, guard: AbstractContextManager[object] | None = None) -> Iterator[None]:
        """One write transaction (`BEGIN IMMEDIATE`: SQLite's single writer lock, across processes) that
        the store's calls from this thread join until the section ends. `guard` first, as its holder's
        other calls take it before this store's lock."""
        with guard or contextlib.nullcontext(), self._transaction(write=True):
            self._exclusive_thread = threading.get_ident()
            try:
                yield
            finally:
                self._exclusive_thread = None

    def _read_job(self, row: Sequence[Any]) -> Job:
        job_id, version, data = row[0], row[1], row[2]
        try:
            record = json.loads(data)
            record["id"], record["version"] = job_id, version
            return read_job(record)
        except Exception as err:  # whatever the codec or a schedule's own check raises: the row is bad
            raise StoreCorrupt(f"job {job_id} in {self._path} cannot be read: {err!r}") from err

    def _read_run(self, data: str, seq: int) -> Run:
        try:
            return replace(read_run(json.loads(data)), id=seq)
        except Exception as err:  # whatever the codec raises: the row is bad
            raise StoreCorrupt(f"a run in {self._path} cannot be read: {err!r}") from err

    # -- jobs --------------------------------------------------------------------------------------

    def insert(self, job: Job, audit: AuditEntry | None = None) -> Job:
        columns = _job_columns(job)
        with self._transaction(write=True) as connection:
            try:
                cursor = connection.execute(_Q["insert_job"], columns)
            except sqlite3.IntegrityError as err:
                if _name_conflict(err):
                    raise _name_taken(job) from err
                raise
            job_id = cursor.lastrowid
            if audit is not None and job_id is not None:
                connection.execute(_Q["insert_audit"], _audit_columns(audit.of_job(job_id)))
        if job_id is None:  # pragma: no cover - an INSERT into a rowid table always has one
            raise StoreError("the database assigned no id to a new job")
        return job.evolve(id=job_id, version=1)

    def save(self, writes: WriteSet) -> Saved[bool]:
        jobs, runs = writes.writes, writes.runs
        # Encode first, so a value that cannot be stored fails before any transaction opens.
        updates = [(*_job_columns(job), job.id, job.version) for job in jobs]
        inserts = [
            (run.job_id, run.fire_id, run.attempt, micros(run.finished_at), encode(run_data(run)))
            for run in runs
        ]
        entries = [(entry.job_id, _audit_columns(entry)) for entry in writes.audit]
        with self._transaction(write=True) as connection:
            written = self._save_jobs(connection, jobs, updates)
            self._insert_runs(connection, runs, inserts)
            job_ids = sorted({run.job_id for run in runs})
            for start in range(0, len(job_ids), _IDS_PER_STATEMENT):
                chunk = job_ids[start : start + _IDS_PER_STATEMENT]
                query = _Q["prune_runs"].format(ids=self._marks(chunk))
                connection.execute(query, (*chunk, self._run_history))
            # An entry records a mutation that happened: only one whose job was written.
            won = {job.id for job, ok in zip(jobs, written, strict=True) if ok}
            for job_id, columns in entries:
                if job_id in won:
                    connection.execute(_Q["insert_audit"], columns)
            self._add_notes(
                connection, writes.notes, {job.id for job, ok in zip(jobs, written, strict=True) if not ok}
            )
        return Saved.pair(jobs, written)

    def _save_jobs(
        self, connection: sqlite3.Connection, jobs: Sequence[Job], updates: list[tuple[Any, ...]]
    ) -> list[bool]:
        """The compare-and-swaps of `jobs`, in one statement; whether each was written.

        One row at a time, in order, where the order can matter: a job twice in one save (its second
        write must meet the first), or a unique index that refused the statement (renames that swap
        names, say, or a rename onto a live job's name, which must name the job refused); and beyond
        one statement's worth of rows.
        """
        if 1 < len(jobs) <= _JOBS_PER_STATEMENT and len({job.id for job in jobs}) == len(jobs):
            query = _Q["save_jobs"].format(rows=", ".join([_JOB_ROW] * len(jobs)))
            try:
                won = {row[0] for row in connection.execute(query, _flat(updates)).fetchall()}
                return [job.id in won for job in jobs]
            except sqlite3.IntegrityError:
                pass  # the statement wrote nothing: the rows one by one tell which job was refused
        written = []
        for job, update in zip(jobs, updates, strict=True):
            try:
                written.append(connection.execute(_Q["save_job"], update).rowcount == 1)
            except sqlite3.IntegrityError as err:
                # A rename onto a live job's name: the unique index refuses it, atomically.
                if _name_conflict(err):
                    raise _name_taken(job) from err
                raise
        return written

    def _insert_runs(
        self, connection: sqlite3.Connection, runs: Sequence[Run], inserts: list[tuple[Any, ...]]
    ) -> None:
        """Appends the runs, one statement per chunk; DoubleRun if one met another record of its attempt.

        A run already recorded as this very record is not written again (a save replayed, semantic 29).
        """
        inserted = 0
        for start in range(0, len(inserts), _RUNS_PER_STATEMENT):
            chunk = inserts[start : start + _RUNS_PER_STATEMENT]
            query = _Q["insert_runs"].format(rows=", ".join(["(?, ?, ?, ?, ?)"] * len(chunk)))
            inserted += connection.execute(query, _flat(chunk)).rowcount
        if inserted == len(inserts):
            return
        doubles = [
            (run.job_id, run.fire_id, run.attempt)
            for run, insert in zip(runs, inserts, strict=True)
            if not self._same_run(connection.execute(_Q["recorded_run"], insert[:3]).fetchone(), run)
        ]
        if doubles:
            raise DoubleRun.of(doubles)

    def _reading(self) -> AbstractContextManager[Any]:
        return self._transaction(write=False)

    def _writing(self) -> AbstractContextManager[Any]:
        return self._transaction(write=True)

    def _moment(self, value: Any) -> datetime:
        return from_micros(int(value))

    def _instant(self, moment: datetime) -> object:
        return micros(moment)

    def next_wake(self) -> datetime | None:
        with self._transaction(write=False) as connection:
            (earliest,) = connection.execute(_Q["next_wake"]).fetchone()
        return None if earliest is None else from_micros(earliest)

    def delete(self, job_id: int, audit: AuditEntry | None = None) -> Job | None:
        with self._transaction(write=True) as connection:
            row = connection.execute(_Q["live_job_by_id"], (job_id,)).fetchone()
            if row is None:
                return None
            connection.execute(_Q["mark_deleted"], (job_id,))
            if audit is not None:
                connection.execute(_Q["insert_audit"], _audit_columns(audit))
        return self._read_job(row)

    def delete_unreadable(self, job_id: int, audit: AuditEntry | None = None) -> bool:
        with self._transaction(write=True) as connection:
            done = connection.execute(_Q["mark_deleted"], (job_id,))
            if done.rowcount > 0 and audit is not None:
                connection.execute(_Q["insert_audit"], _audit_columns(audit))
            return done.rowcount > 0

    def fold_counts(self) -> int:
        return 0  # job_counts is kept in place: SQLite has one writer at a time, so a counter row is free

    def prune_audit(self, older_than: datetime) -> int:
        with self._transaction(write=True) as connection:
            return int(connection.execute(_Q["prune_audit"], (micros(older_than),)).rowcount)

    def _decoded(self, data: Any) -> Any:
        return json.loads(data)

    # -- runs, beats, counts -----------------------------------------------------------------------

    def beat(self, node: str, now: datetime) -> None:
        with self._transaction(write=True) as connection:
            connection.execute(_Q["beat"], (node, micros(now), micros(now)))

    def forget(self, node: str) -> None:
        with self._transaction(write=True) as connection:
            connection.execute(_Q["forget"], (node,))

    def beats(self) -> list[NodeBeat]:
        with self._transaction(write=False) as connection:
            rows = connection.execute(_Q["beats"]).fetchall()
        return [
            NodeBeat(node, from_micros(beat_at), from_micros(started_at))
            for node, beat_at, started_at in rows
        ]

    def orphans(self, now: datetime, ttl: timedelta = LEASE_TTL) -> list[Job]:
        with self._transaction(write=False) as connection:
            rows = connection.execute(_Q["orphans"], (State.RUNNING.value, micros(now - ttl))).fetchall()
        return self._read_jobs(rows)

    def lease_left(self, now: datetime, ttl: timedelta, node: str) -> timedelta | None:
        with self._transaction(write=False) as connection:
            unreadable = json.dumps(list(self._unreadable))  # one parameter: those rows hold no lease
            holders, oldest = connection.execute(_Q["lease_left"], (node, unreadable)).fetchone()
        if not holders:
            return None
        return from_micros(oldest) + ttl - now

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._turnstile.close()


def _job_columns(job: Job) -> tuple[Any, ...]:
    record = job_data(job)
    # id and version live in their columns only, so the JSON can never disagree with them.
    del record["id"], record["version"]
    node = job.flight_node
    return (
        job.name,
        job.state.value,
        job.dedupe_key,
        job.target,
        micros(job.wake_at()),
        node,
        encode(record),
        job.created_by,
    )


def _flat(rows: Sequence[tuple[Any, ...]]) -> list[Any]:
    """The parameters of several rows, in order, for one statement."""
    return [value for row in rows for value in row]


def _audit_columns(entry: AuditEntry) -> tuple[Any, ...]:
    return (
        entry.key,
        micros(entry.at),
        entry.source,
        entry.action,
        entry.job_id,
        entry.name,
        entry.owner,
        encode(entry_data(entry)),
    )


def _name_conflict(err: sqlite3.IntegrityError) -> bool:
    return "jobs.name" in str(err)


def _name_taken(job: Job) -> NameTaken:
    return NameTaken(f"a job named '{job.name}' exists; choose another name, or `delete` it first")


def _damaged(err: sqlite3.Error) -> bool:
    # The primary result code: the low byte of an extended one.
    code = getattr(err, "sqlite_errorcode", 0) & 0xFF
    return code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _rollback(connection: sqlite3.Connection) -> None:
    # After some errors (a full disk, an I/O error) SQLite has already rolled back on its own; after
    # others the transaction is still open and would block every later write. Either way, end it.
    if connection.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")


def _undo_call(connection: sqlite3.Connection) -> None:
    """Undoes one call inside an `exclusive` section, leaving the section's transaction open."""
    if connection.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK TO store_call")
            connection.execute("RELEASE store_call")


def _link(source: Path, target: Path) -> None:
    """Puts `source` at `target` unless something is there already (then the other creator won)."""
    try:
        os.link(source, target)
    except FileExistsError:
        pass
    except OSError:
        # A file system without hard links: a rename is as atomic, but it would replace a store that
        # another process linked in the meantime, so it is used only while the path is still free.
        if not target.exists():
            os.replace(source, target)


def _fsync(path: Path) -> None:
    """Flushes a file, or a folder's entries, to disk, so a new store survives a power cut once linked."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:  # some platforms cannot open a folder; the link is then as durable as they allow
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
