"""The PostgreSQL store: one schedule set shared by several nodes on one database.

Schema. Every table lives in one PostgreSQL schema (`cronwright` unless the URL says `?schema=NAME`),
reached through each connection's search_path, so two stores in one database never meet. The schema is
created or upgraded at open, inside one transaction that holds an advisory lock on its name: nodes that
boot together wait for each other, and the second finds the work done.

Claims. Every job write is the compare-and-swap `UPDATE ... WHERE id = $id AND version = $read AND NOT
deleted` (see `save_job` in sql/postgres/queries.sql for why it is not `FOR UPDATE SKIP LOCKED`), and
the unique key on runs `(job_id, fire_id, attempt)` refuses a second record of one attempt even if a
lease were mis-handled; the same record again is written once (semantic 29).

Leases. By default they are judged on the database's clock, the one clock every node shares: a beat
stamps the row with `now()`, and `orphans` compares with `now() - ttl`, so a node whose own clock is off
never takes a live node's runs for dead, and is never taken for dead itself. See docs/postgres.md.

Wake-ups. A transaction that changes a job NOTIFYs the schema's channel when it commits; `watch` LISTENs
on a dedicated connection and wakes the node (see `postgres_listen`).

Threads: a connection pool. Every method checks a connection out for one transaction (or, for a read of
one statement, for that statement) and gives it back. A connection the server dropped is replaced by the
pool; the call that met the broken one fails with StoreError, and the caller's next call gets a new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.errors import LockNotAvailable, UniqueViolation
from psycopg.types.json import Json

from cronwright._version import __version__
from cronwright.core.audit import AuditEntry, entry_data
from cronwright.core.leases import LEASE_TTL
from cronwright.core.model import Job, Persistence, Run, State
from cronwright.errors import DoubleRun, NameTaken, StoreCorrupt, StoreError
from cronwright.store import sql_files
from cronwright.store.base import NodeBeat, Saved, WriteSet
from cronwright.store.codec import encode, job_data, read_job, read_run, run_data
from cronwright.store.pg_pool import Pool, PoolClosed, PoolTimeout
from cronwright.store.postgres_listen import Listener
from cronwright.store.sql_outbox import SqlOutbox
from cronwright.store.sql_reads import LIVE, SqlJobReads

log = logging.getLogger("cronwright.store")

DEFAULT_SCHEMA = "cronwright"
# pg_advisory_xact_lock(class, key): the class is "CrWt", the key the schema name's hash.
_LOCK_CLASS = int.from_bytes(b"CrWt", "big")
# pg_try_advisory_xact_lock(class, key) of a fold of the count rows: one at a time per schema.
_FOLD_CLASS = int.from_bytes(b"CrWf", "big")
# A read of a source's counts that sums more count rows than this folds that source's rows (a read of all
# the counts, more rows than one per source and state: all of them): a count reads about this many rows
# more than it must, however many writes came since the node's last fold, or if no node runs.
FOLD_AFTER = 256
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
# A node whose clock differs from the database's by more than this is told so (logs and `state`).
SKEW_WARNING = timedelta(seconds=2)
# Defaults for what the URL does not set. A dead server is found by TCP keepalives within about a
# minute even when no packet says so, and a boot against an unreachable host gives up after 10 s.
_CONNECT_DEFAULTS = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
    "application_name": "cronwright",
}


class LeaseClock(StrEnum):
    """Which clock judges a lease."""

    DATABASE = "database"  # the server's now(): one clock for every node (the default)
    CALLER = "caller"  # the `now` each call passes, as SqliteStore does (tests on a manual clock)


# The named statements (sql/postgres/queries.sql).
_Q = sql_files.queries("postgres")


# Nodes that beat within this long share the due rows (`due`): a busy node beats every LEASE_BEAT, an idle
# serving one at its safety wake-up (a minute), and one that stopped has removed its row.
PEERS_FRESH = LEASE_TTL + timedelta(minutes=1)

# The longest a create waits for another node's exclusive section.
EXCLUSIVE_WAIT = timedelta(seconds=10)

# -- the schema ------------------------------------------------------------------------------------


def schema_sql() -> str:
    return sql_files.schema_sql("postgres")


def migrations() -> tuple[tuple[int, str], ...]:
    return sql_files.migrations("postgres")


def schema_version() -> int:
    """The schema version this code writes: the number of the last migration."""
    return len(migrations())


def upgrade(connection: psycopg.Connection[Any], version: int) -> None:
    """Applies the migrations after `version` on the connection's search_path, and records each.

    The caller holds the transaction (and the advisory lock): a migration and its record commit together.
    """
    for number, script in migrations()[version:]:
        connection.execute(script)
        connection.execute(_Q["record_migration"], (number,))


def _create(connection: psycopg.Connection[Any]) -> None:
    connection.execute(schema_sql())
    with connection.cursor() as cursor:
        cursor.executemany(_Q["record_migration"], [(number,) for number in range(1, schema_version() + 1)])


def quoted(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def channel_of(schema: str) -> str:
    """The NOTIFY channel of a store's schema (an identifier: at most 63 bytes)."""
    channel = f"cronwright_{schema}"
    if len(channel) > 63:
        channel = "cronwright_" + hashlib.sha256(schema.encode()).hexdigest()[:40]
    return channel


# -- URLs ------------------------------------------------------------------------------------------


def split_url(url: str) -> tuple[str, str | None]:
    """libpq's URL without cronwright's own `schema` parameter, and the schema that parameter named."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    named = [value for key, value in query if key == "schema"]
    rest = [(key, value) for key, value in query if key != "schema"]
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), (named[-1] if named else None)


def masked(url: str) -> str:
    """The URL with any password replaced by `***`, for `status` and error messages."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        if ":" in credentials:
            credentials = credentials.split(":", 1)[0] + ":***"
        netloc = f"{credentials}@{host}"
    query = [
        (key, "***" if key == "password" else value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query, quote_via=quote, safe="*")))


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _unreachable(error: psycopg.Error) -> bool:
    """Whether the error says the server could not be reached (rather than that it refused the SQL)."""
    if isinstance(error, PoolTimeout):
        return True
    state = error.sqlstate
    return state is None or state.startswith("08") or state.startswith("57P")


# -- the store -------------------------------------------------------------------------------------


class PostgresStore(SqlJobReads, SqlOutbox):
    _p = "%s"
    _queries = _Q
    # Nodes claiming notifications at once skip each other's rows instead of waiting on them.
    _claim_lock = " FOR UPDATE SKIP LOCKED"

    """The Store protocol on one PostgreSQL schema (see the module docstring for how each guarantee holds).

    `url` is a libpq URL (`postgresql://user@host:5432/db`), optionally with `?schema=NAME`; `schema`
    overrides it. The server must be reachable now: an unreachable one, or a schema that holds something
    else, is a StoreError whose message is one line.
    """

    def __init__(
        self,
        url: str,
        run_history: int = 100,
        *,
        schema: str | None = None,
        lease_clock: LeaseClock | str = LeaseClock.DATABASE,
        pool_size: int = 8,
        timeout: float = 10.0,
    ) -> None:
        if run_history < 0:
            raise ValueError(f"run_history must be 0 or more, not {run_history}")
        self._conninfo, named = split_url(url)
        self._description = masked(url)
        self._schema = schema or named or DEFAULT_SCHEMA
        if not _SCHEMA_NAME.match(self._schema):
            raise StoreError(
                f"the schema name {self._schema!r} of {self._description} is not a plain SQL name:"
                " use letters, digits and underscores, at most 63"
            )
        self._run_history = run_history
        self._lease_clock = LeaseClock(lease_clock)
        self._channel = channel_of(self._schema)
        digest = hashlib.sha256(f"cronwright:exclusive:{self._schema}".encode()).digest()
        self._exclusive_key = int.from_bytes(digest[:8], "big", signed=True)
        # This store's mark on its notifications, so its own listener can tell them from other nodes'.
        self._token = secrets.token_hex(8)
        try:
            given = conninfo_to_dict(self._conninfo)
        except psycopg.Error as err:
            raise StoreError(
                f"{self._description} is not a PostgreSQL URL libpq reads: {_one_line(err)}"
            ) from err
        self._kwargs: dict[str, Any] = {k: v for k, v in _CONNECT_DEFAULTS.items() if k not in given}
        self._lock = threading.Lock()
        self._trouble: tuple[datetime, str] | None = None
        self._skew: timedelta | None = None
        self._listeners: list[Listener] = []
        self._unreadable: dict[int, str] = {}
        # (this node's rank, how many nodes beat lately, itself included), as `lease_left` last found them.
        self._share = (0, 1)
        self._prepare()
        self._pool: Pool | None = Pool(self._connect, pool_size, timeout)
        try:
            self._pool.open()
        except psycopg.Error as err:
            self._pool.close()
            self._pool = None
            raise StoreError(
                f"cannot reach the PostgreSQL store {self._description}: {_one_line(err)}"
            ) from err

    @property
    def persistence(self) -> Persistence:
        return Persistence.PERSISTED

    @property
    def description(self) -> str:
        return self._description

    @property
    def schema(self) -> str:
        return self._schema

    @property
    def channel(self) -> str:
        return self._channel

    @property
    def state(self) -> str:
        """How the store fares, for `status`: reachable or since when not, listening, and clock skew."""
        with self._lock:
            trouble, skew, listeners = self._trouble, self._skew, list(self._listeners)
        parts = ["connected"]
        if trouble is not None:
            parts = [f"unreachable since {trouble[0].isoformat()}: {trouble[1]}"]
        for listener in listeners:
            if listener.trouble is not None:
                since, why = listener.trouble
                parts.append(f"not listening for changes since {since.isoformat()}: {why}")
        if skew is not None and abs(skew) > SKEW_WARNING:
            parts.append(f"this node's clock is {skew.total_seconds():+.1f}s off the database's")
        return "; ".join(parts)

    # -- opening -----------------------------------------------------------------------------------

    def _prepare(self) -> None:
        """Creates or upgrades the schema in one transaction, under the schema's advisory lock."""
        try:
            with (
                psycopg.connect(self._conninfo, autocommit=True, **self._kwargs) as connection,
                connection.transaction(),
            ):
                connection.execute(_Q["schema_lock"], (_LOCK_CLASS, self._schema))
                self._migrate(connection)
        except psycopg.Error as err:
            if _unreachable(err):
                raise StoreError(
                    f"cannot reach the PostgreSQL store {self._description}: {_one_line(err)}"
                ) from err
            raise StoreError(
                f"cannot prepare the PostgreSQL store {self._description}: {_one_line(err)}"
            ) from err

    def _migrate(self, connection: psycopg.Connection[Any]) -> None:
        exists = connection.execute(_Q["schema_exists"], (self._schema,)).fetchone()
        where = f"the schema {self._schema} of {self._description}"
        if not exists or not exists[0]:
            connection.execute(f"CREATE SCHEMA {quoted(self._schema)}")
        else:
            usable = connection.execute(_Q["schema_usable"], (self._schema,)).fetchone()
            if not usable or not usable[0]:
                raise StoreError(
                    f"{where} exists, but this login may not use it: grant it USAGE (and CREATE, for"
                    " upgrades) on the schema, or log in as its owner"
                )
        connection.execute(_Q["use_schema_for_the_transaction"], (quoted(self._schema),))
        tables = self._tables(connection)
        if not tables:
            _create(connection)
        elif "schema_migrations" not in tables:
            raise StoreCorrupt(
                f"{where} holds tables that are not a cronwright store ({', '.join(sorted(tables))});"
                " it was left untouched. Point the store at another schema with ?schema=NAME."
            )
        else:
            row = connection.execute(_Q["schema_version"]).fetchone()
            version = int(row[0]) if row else 0
            if version > schema_version():
                raise StoreError(
                    f"{where} has schema version {version}, newer than this cronwright knows"
                    f" ({__version__}, schema version {schema_version()}): it was written by a later"
                    " release. Upgrade cronwright to use it; it was left untouched"
                    " (`cronwright migrate --check` says what each version holds)."
                )
            upgrade(connection, version)
        missing = sorted(sql_files.schema_tables("postgres") - self._tables(connection))
        if missing:
            raise StoreCorrupt(f"{where} is damaged: its tables {', '.join(missing)} are missing")

    def _tables(self, connection: psycopg.Connection[Any]) -> set[str]:
        rows = connection.execute(_Q["tables"], (self._schema,))
        return {str(row[0]) for row in rows}

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection of the pool: in autocommit (a write opens its transaction), on the schema."""
        connection = psycopg.connect(self._conninfo, autocommit=True, **self._kwargs)
        try:
            connection.execute(_Q["configure_connection"], (quoted(self._schema),))
        except BaseException:
            connection.close()
            raise
        return connection

    # -- transactions ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _session(self, write: bool, pipelined: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection: in one transaction for a write, in autocommit for a one-statement read.
        `pipelined`: in pipeline mode, so statements whose answers are not read at once cost no round trip.

        Any driver error becomes StoreError (the transaction rolls back whole), and is remembered for
        `state` when it says the server was out of reach.
        """
        pool = self._pool
        if pool is None:
            raise StoreError(f"the store {self._description} is closed")
        try:
            with pool.connection() as connection:
                if write:
                    with (
                        connection.pipeline() if pipelined else contextlib.nullcontext(),
                        connection.transaction(),
                    ):
                        yield connection
                else:
                    yield connection
        except PoolClosed as err:
            raise StoreError(f"the store {self._description} is closed") from err
        except psycopg.Error as err:
            if _unreachable(err):
                self._lost(err)
                raise StoreError(f"the store {self._description} is unreachable: {_one_line(err)}") from err
            raise StoreError(f"the store {self._description} failed: {_one_line(err)}") from err
        with self._lock:
            if self._trouble is not None:
                log.warning("the store %s is reachable again", self._description)
            self._trouble = None

    def _lost(self, err: psycopg.Error) -> None:
        with self._lock:
            if self._trouble is None:
                self._trouble = (datetime.now(UTC).replace(microsecond=0), _one_line(err)[:200])

    def _notify(self, connection: psycopg.Connection[Any]) -> None:
        connection.execute(_Q["notify"], (self._channel, self._token))

    def _read_job(self, row: Sequence[Any]) -> Job:
        job_id, version, data = row[0], row[1], row[2]
        try:
            record = dict(data)
            record["id"], record["version"] = int(job_id), int(version)
            return read_job(record)
        except Exception as err:  # whatever the codec or a schedule's own check raises: the row is bad
            raise StoreCorrupt(f"job {job_id} in {self._description} cannot be read: {err!r}") from err

    def _read_run(self, data: Any, seq: int) -> Run:
        try:
            return replace(read_run(data), id=int(seq))
        except Exception as err:  # whatever the codec raises: the row is bad
            raise StoreCorrupt(f"a run in {self._description} cannot be read: {err!r}") from err

    # -- jobs --------------------------------------------------------------------------------------

    def insert(self, job: Job, audit: AuditEntry | None = None) -> Job:
        columns = _job_columns(job)
        with self._session(write=True) as connection:
            try:
                row = connection.execute(_Q["insert_job"], columns).fetchone()
            except UniqueViolation as err:
                if err.diag.constraint_name == "jobs_live_name":
                    raise _name_taken(job.name) from err
                raise
            if audit is not None and row is not None:
                connection.execute(_Q["insert_audit"], _audit_columns(audit.of_job(int(row[0]))))
            self._notify(connection)
        if row is None:  # pragma: no cover - INSERT ... RETURNING always returns the row
            raise StoreError("the database assigned no id to a new job")
        return job.evolve(id=int(row[0]), version=1)

    def save(self, writes: WriteSet) -> Saved[bool]:
        jobs, runs, audit = writes.writes, writes.runs, writes.audit
        # Encode first, so a value that cannot be stored fails before any transaction opens.
        order = sorted(range(len(jobs)), key=lambda index: jobs[index].id)
        updates = [(*_job_columns(jobs[index]), jobs[index].id, jobs[index].version) for index in order]
        inserts = [  # (the job's id again, last: the run's owner is its job's creator)
            (
                run.job_id,
                run.fire_id,
                run.attempt,
                run.finished_at,
                Json(run_data(run), dumps=encode),
                run.job_id,
            )
            for run in runs
        ]
        written = [False] * len(jobs)
        # Pipelined: the statements go out together and the transaction costs two round trips, one for
        # the compare-and-swaps' answers (which decide what else is written) and one for the commit.
        with (
            self._session(write=True, pipelined=True) as connection,
            connection.cursor() as updating,
            connection.cursor() as recording,
        ):
            if updates:
                updating.executemany(_Q["save_job"], updates, returning=True)
            if inserts:
                recording.executemany(_Q["insert_run"], inserts, returning=True)
                job_ids = sorted({run.job_id for run in runs})
                connection.execute(_Q["prune_runs"], (job_ids, self._run_history))
            if updates:
                for index, won in zip(order, self._updated(updating, jobs), strict=True):
                    written[index] = won
            if inserts:
                self._recorded(recording, runs)
            # An entry records a mutation that happened: only one whose job was written.
            stored = {job.id for job, ok in zip(jobs, written, strict=True) if ok}
            entries = [_audit_columns(entry) for entry in audit if entry.job_id in stored]
            if entries:
                recording.executemany(_Q["insert_audit"], entries)
            lost = {job.id for job, ok in zip(jobs, written, strict=True) if not ok}
            self._add_notes(connection, writes.notes, lost)
            if any(written):
                self._notify(connection)
        return Saved.pair(jobs, written)

    def _updated(self, cursor: psycopg.Cursor[Any], jobs: Sequence[Job]) -> list[bool]:
        """Per compare-and-swap sent, whether its row was written (its version was the one read)."""
        won = []
        try:
            while True:
                won.append(cursor.fetchone() is not None)
                if not cursor.nextset():
                    break
        except UniqueViolation as err:
            # A rename onto a live job's name: the unique index refuses it, atomically.
            if err.diag.constraint_name == "jobs_live_name":
                detail = err.diag.message_detail or ""
                name = next((job.name for job in jobs if f"=({job.name})" in detail), "?")
                raise _name_taken(name) from err
            raise
        return won

    def _recorded(self, cursor: psycopg.Cursor[Any], runs: Sequence[Run]) -> None:
        """Reads the answers of the run inserts sent; a run met already recorded must be this very record."""
        met = []
        for run in runs:
            if cursor.fetchone() is None:
                met.append(run)
            cursor.nextset()
        doubles = []
        for run in met:
            key = (run.job_id, run.fire_id, run.attempt)
            row = cursor.execute(_Q["recorded_run"], key).fetchone()
            if not self._same_run(row, run):
                doubles.append(key)
        if doubles:
            raise DoubleRun.of(doubles)

    def _reading(self) -> AbstractContextManager[Any]:
        return self._session(write=False)

    def _writing(self) -> AbstractContextManager[Any]:
        return self._session(write=True)

    def _moment(self, value: Any) -> datetime:
        return _utc(value)

    @contextlib.contextmanager
    def exclusive(self, guard: AbstractContextManager[object] | None = None) -> Iterator[None]:
        """A session-level advisory lock of this schema's, held on one pooled connection: every node on
        the schema waits for it, at most EXCLUSIVE_WAIT (a node that hung inside its section must not
        hang every create). The server drops it if the connection dies. `guard` is taken only once the
        lock is held, so this node's other store calls never wait on another node."""
        with self._session(write=False) as connection:
            connection.execute(f"SET lock_timeout = '{int(EXCLUSIVE_WAIT.total_seconds() * 1000)}ms'")
            try:
                connection.execute(_Q["exclusive_lock"], (self._exclusive_key,))
            except LockNotAvailable as err:
                raise StoreError(
                    f"another node has held the create lock of {self._description} for"
                    f" {EXCLUSIVE_WAIT.total_seconds():.0f} s; try again"
                ) from err
            finally:
                connection.execute("RESET lock_timeout")
            try:
                with guard or contextlib.nullcontext():
                    yield
            finally:
                connection.execute(_Q["exclusive_unlock"], (self._exclusive_key,))

    def _instant(self, moment: datetime) -> object:
        return moment

    def next_wake(self) -> datetime | None:
        with self._session(write=False) as connection:
            row = connection.execute(_Q["next_wake"]).fetchone()
        earliest = row[0] if row else None
        return None if earliest is None else _utc(earliest)

    def delete(self, job_id: int, audit: AuditEntry | None = None) -> Job | None:
        with self._session(write=True) as connection:
            row = connection.execute(_Q["delete_job"], (job_id,)).fetchone()
            if row is not None:
                if audit is not None:
                    connection.execute(_Q["insert_audit"], _audit_columns(audit))
                self._notify(connection)
        return None if row is None else self._read_job(row)

    def delete_unreadable(self, job_id: int, audit: AuditEntry | None = None) -> bool:
        with self._session(write=True) as connection:
            done = connection.execute(_Q["mark_deleted"], (job_id,))
            if done.rowcount:
                if audit is not None:
                    connection.execute(_Q["insert_audit"], _audit_columns(audit))
                self._notify(connection)
            return done.rowcount > 0

    def prune_audit(self, older_than: datetime) -> int:
        with self._session(write=True) as connection:
            return int(connection.execute(_Q["prune_audit"], (older_than,)).rowcount)

    # -- counts: sums of the rows the triggers append (job_count_deltas), folded now and then --------

    def counts(self, created_by: str | None = None) -> dict[str, int]:
        counts = {state.value: 0 for state in State}
        with self._session(write=False) as connection:
            if created_by is None:
                rows = connection.execute(_Q["counts"]).fetchall()
            else:
                rows = connection.execute(_Q["counts_of_source"], (created_by,)).fetchall()
        counts.update({str(state): int(number) for state, number, _ in rows})
        self._fold_if_many(created_by, sum(int(summed) for _, _, summed in rows))
        return counts

    def count_live(self, created_by: str) -> int:
        with self._session(write=False) as connection:
            query = _Q["count_live"].format(live=self._marks(LIVE))
            row = connection.execute(query, (created_by, *LIVE)).fetchone()
        live, summed = (int(row[0]), int(row[1])) if row else (0, 0)
        self._fold_if_many(created_by, summed)
        return live

    def fold_counts(self, created_by: str | None = None) -> int:
        """Folds the count rows of one source, or of all, into one per (source, state); answers how many
        rows it wrote in their place (0 also while another fold holds the lock: that one does the work)."""
        with self._session(write=True) as connection:
            locked = connection.execute(_Q["fold_lock"], (_FOLD_CLASS, self._schema)).fetchone()
            if not locked or not locked[0]:
                return 0
            if created_by is None:
                done = connection.execute(_Q["fold_counts"].format(where=""))
            else:
                done = connection.execute(
                    _Q["fold_counts"].format(where="AND created_by = %s"), (created_by,)
                )
            return int(done.rowcount)

    def _fold_if_many(self, created_by: str | None, summed: int) -> None:
        if summed <= FOLD_AFTER:
            return
        try:
            self.fold_counts(created_by)
        except StoreError as error:  # the count read is answered; the next read or pass folds
            log.debug("could not fold the counts of %s: %s", created_by, error)

    def _decoded(self, data: Any) -> Any:
        return data

    # -- runs, beats, counts -----------------------------------------------------------------------

    def beat(self, node: str, now: datetime) -> None:
        sent = time.monotonic()
        with self._session(write=True) as connection:
            row = connection.execute(_Q["beat"], (node, now, now)).fetchone()
        if row is not None:
            # The database read its clock somewhere between `sent` and now: a beat that waited (for a
            # connection, a stalled server, a paused process) reads late, which is no skew of the clocks.
            waited = timedelta(seconds=time.monotonic() - sent)
            self._measure_skew(now - _utc(row[0]), now + waited - _utc(row[0]))

    def due(self, now: datetime, limit: int) -> list[Job]:
        """As `Storage.due`; while other nodes beat, this node's share of the earliest due rows comes first
        (see `due_shared` in sql/postgres/queries.sql): nodes reading at once claim different rows."""
        rank, nodes = self._share
        if nodes < 2:
            return super().due(now, limit)
        window = (max(limit, 0) + len(self._unreadable)) * nodes
        return self._read_up_to(_Q["due_shared"], (now, window, nodes, rank), limit)

    def _measure_skew(self, low: timedelta, high: timedelta) -> None:
        """Judges this node's clock against the database's, from a reading whose skew lies between
        `low` and `high` (how long the round trip took): only what the whole range says is told. A
        range too wide to tell (a stall) changes nothing, so a stall is never reported as a skew that
        then "agrees again" a moment later."""
        if low > SKEW_WARNING or high < -SKEW_WARNING:
            skew = low if low > SKEW_WARNING else high  # the least the clocks can be apart
        elif low >= -SKEW_WARNING and high <= SKEW_WARNING:
            skew = (low + high) / 2
        else:
            return
        with self._lock:
            before, self._skew = self._skew, skew
        was_off = before is not None and abs(before) > SKEW_WARNING
        if abs(skew) > SKEW_WARNING and not was_off:
            where = "ahead of" if skew > timedelta(0) else "behind"
            log.warning(
                "this node's clock is %.1fs %s the database's: leases are judged on the database's"
                " clock, but this node fires jobs by its own; synchronize it (NTP)",
                abs(skew.total_seconds()),
                where,
            )
        elif was_off and abs(skew) <= SKEW_WARNING:
            log.warning("this node's clock agrees with the database's again")

    def forget(self, node: str) -> None:
        with self._session(write=True) as connection:
            connection.execute(_Q["forget"], (node,))

    def beats(self) -> list[NodeBeat]:
        query = _Q["beats_by_database_clock"] if self._lease_clock is LeaseClock.DATABASE else _Q["beats"]
        with self._session(write=False) as connection:
            rows = connection.execute(query).fetchall()
        return [NodeBeat(node, _utc(beat_at), _utc(started_at)) for node, beat_at, started_at in rows]

    def orphans(self, now: datetime, ttl: timedelta = LEASE_TTL) -> list[Job]:
        if self._lease_clock is LeaseClock.DATABASE:
            # `now` is the caller's clock, which may be wrong; the lease is judged on the server's.
            query = _Q["orphans_by_database_clock"]
            params: tuple[Any, ...] = (State.RUNNING.value, ttl)
        else:
            query = _Q["orphans"]
            params = (State.RUNNING.value, now - ttl)
        with self._session(write=False) as connection:
            rows = connection.execute(query, params).fetchall()
        return self._read_jobs(rows)

    def lease_left(self, now: datetime, ttl: timedelta, node: str) -> timedelta | None:
        # On the database's clock, the answer is a duration from the server's now: no node clock enters.
        database = self._lease_clock is LeaseClock.DATABASE
        unreadable = list(self._unreadable)  # one array parameter: those rows hold no lease
        with self._session(write=False) as connection:
            row = connection.execute(
                _Q["lease_left"], (ttl, node, PEERS_FRESH, node, PEERS_FRESH, node, unreadable)
            ).fetchone()
        if row is None:
            return None
        holders, never_beat, oldest, left, peers, before = row
        self._share = (int(before), int(peers) + 1)
        if not holders:
            return None
        if never_beat:
            return timedelta(0)
        return left if database else oldest + ttl - now  # type: ignore[no-any-return]

    # -- wake-ups ----------------------------------------------------------------------------------

    def watch(self, wake: Callable[[], None]) -> Listener:
        """Calls `wake` whenever another store (another node, or a CLI) changes a job in this schema.

        Listens on a dedicated connection, in a thread; a lost connection is retried with backoff, and
        `wake` is called once it is back, since changes may have been missed meanwhile. Returns the
        listener: calling it stops listening (so does `close`); `listening` is set while it listens.
        """
        if self._pool is None:
            raise StoreError(f"the store {self._description} is closed")
        listener = Listener(
            self._conninfo,
            self._kwargs,
            self._channel,
            self._token,
            wake,
            poke=self._poke,
            forget=self._forget_listener,
        )
        with self._lock:
            self._listeners.append(listener)
        listener.start()
        return listener

    def _forget_listener(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _poke(self, payload: str) -> None:
        """Sends one notification on the channel, best effort (it wakes a listener that should stop)."""
        pool = self._pool
        if pool is None:
            return
        with contextlib.suppress(psycopg.Error), pool.connection(timeout=2.0) as connection:
            connection.execute(_Q["notify"], (self._channel, payload))

    def close(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.stop()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


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
        job.wake_at(),
        node,
        Json(record, dumps=encode),
        job.created_by,
    )


def _audit_columns(entry: AuditEntry) -> tuple[Any, ...]:
    return (
        entry.key,
        entry.at,
        entry.source,
        entry.action,
        entry.job_id,
        entry.name,
        entry.owner,
        Json(entry_data(entry), dumps=encode),
    )


def _name_taken(name: str) -> NameTaken:
    return NameTaken(f"a job named '{name}' exists; choose another name, or `delete` it first")
