"""What only the SQLite store promises: its schema, durability, refusals, and safety across processes."""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import random
import re
import resource
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cronwright.core.model import EverySchedule, Job, Outcome, Run, State
from cronwright.errors import ConfigError, NameTaken, StoreCorrupt, StoreError
from cronwright.store import MemoryStore, SqliteStore, open_store
from cronwright.store.base import WriteSet
from cronwright.store.sqlite import APPLICATION_ID, schema_version

T0 = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
Result = TypeVar("Result")


def job(name: str = "every-5m", **changes: object) -> Job:
    made = Job(
        id=0,
        name=name,
        target="reports",
        action="daily",
        args={},
        schedule=EverySchedule(timedelta(minutes=5)),
        ends_at=T0 + timedelta(days=30),
        created_at=T0,
        updated_at=T0,
        next_run_at=T0,
    )
    return made.evolve(**changes)


def run(job_id: int, fire_id: str) -> Run:
    return Run(job_id, "every-5m", fire_id, 1, T0, T0, T0, Outcome.OK, "", 0, "node-a")


def connection_of(store: SqliteStore) -> sqlite3.Connection:
    """The store's own connection: per-connection settings can only be read, or broken, through it."""
    connection = store._conn
    assert connection is not None
    return connection


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cronwright.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(path)
    yield opened
    opened.close()


def digest(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def siblings(file: Path) -> list[str]:
    return sorted(entry.name for entry in file.parent.iterdir())


# -- schema --------------------------------------------------------------------------------------


def schema_of(file: Path) -> list[tuple[str, str, str]]:
    """sqlite_master with comments and layout taken out of the SQL, so only the meaning is compared."""
    with sqlite3.connect(file) as connection:
        rows = connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    connection.close()
    return [(kind, name, " ".join(re.sub(r"--[^\n]*", "", sql or "").split())) for kind, name, sql in rows]


def stamped_empty_file(file: Path, version: int = 0) -> None:
    """A file marked as a cronwright store at `version`, with no tables: what an old release left behind."""
    connection = sqlite3.connect(file)
    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.execute(f"PRAGMA user_version = {version}")
    connection.close()


def test_replayed_migrations_build_exactly_the_fresh_schema(tmp_path: Path) -> None:
    migrated, fresh = tmp_path / "migrated.db", tmp_path / "fresh.db"
    stamped_empty_file(migrated)

    SqliteStore(migrated).close()
    SqliteStore(fresh).close()

    assert schema_of(migrated) == schema_of(fresh)
    assert [name for kind, name, _ in schema_of(fresh) if kind == "table"] == [
        "audit",
        "job_counts",
        "jobs",
        "nodes",
        "notifications",
        "runs",
        "sqlite_sequence",
    ]
    for file in (migrated, fresh):
        with sqlite3.connect(file) as connection:
            stamps = connection.execute("SELECT * FROM pragma_user_version, pragma_application_id").fetchone()
        connection.close()
        assert stamps == (schema_version(), APPLICATION_ID)


def test_a_store_is_durable_and_waits_for_other_writers(store: SqliteStore) -> None:
    connection = connection_of(store)

    assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert connection.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    assert connection.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000


def test_the_parent_folders_are_created(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b" / "store.db"

    SqliteStore(nested).close()

    assert nested.is_file()


def test_what_was_written_survives_a_reopen_and_ids_are_never_reused(path: Path) -> None:
    first = SqliteStore(path)
    kept = first.insert(job("kept"))
    gone = first.insert(job("gone"))
    first.delete(gone.id)
    first.save(WriteSet(runs=[run(kept.id, "fire-1")]))
    first.close()

    second = SqliteStore(path)
    again = second.insert(job("gone"))
    assert second.get(kept.id) == kept
    assert [found.fire_id for found in second.runs()] == ["fire-1"]
    assert again.id > gone.id
    second.close()


def test_racing_creators_of_one_new_file_share_one_store(path: Path) -> None:
    barrier = threading.Barrier(6)
    stores: list[SqliteStore] = []

    def create() -> None:
        barrier.wait()
        stores.append(SqliteStore(path))

    threads = [threading.Thread(target=create) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(stores) == 6
    stores[0].insert(job())
    assert all(len(store.jobs()) == 1 for store in stores)
    for store in stores:
        store.close()
    assert siblings(path) == ["cronwright.db"]


def test_the_due_pass_reads_through_the_wake_index(store: SqliteStore) -> None:
    for number in range(50):
        store.insert(job(f"job-{number:02}", next_run_at=T0 + timedelta(minutes=number)))
    executed: list[str] = []
    connection = connection_of(store)
    connection.set_trace_callback(executed.append)
    try:
        store.due(T0, 10)
        store.next_wake()
    finally:
        connection.set_trace_callback(None)

    for query in [statement for statement in executed if statement.startswith("SELECT")]:
        plan = " / ".join(row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {query}"))
        assert "INDEX jobs_wake" in plan, (query, plan)
        assert "SCAN jobs" not in plan, (query, plan)
        assert "TEMP B-TREE" not in plan, (query, plan)


# -- refusals ------------------------------------------------------------------------------------


def foreign_database(file: Path) -> None:
    connection = sqlite3.connect(file)
    connection.execute("CREATE TABLE notes (body TEXT)")
    connection.execute("INSERT INTO notes VALUES ('not yours')")
    connection.commit()
    connection.close()


def foreign_database_with_its_own_id(file: Path) -> None:
    connection = sqlite3.connect(file)
    connection.execute("PRAGMA application_id = 1234")
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY)")
    connection.close()


def random_bytes(file: Path) -> None:
    file.write_bytes(random.Random(7).randbytes(8192))


def forged_header(file: Path) -> None:
    file.write_bytes(b"SQLite format 3\x00" + random.Random(7).randbytes(8176))


def empty_file(file: Path) -> None:
    file.write_bytes(b"")


def newer_store(file: Path) -> None:
    SqliteStore(file).close()
    connection = sqlite3.connect(file)
    connection.execute(f"PRAGMA user_version = {schema_version() + 1}")
    connection.close()


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (foreign_database, StoreCorrupt, "another application"),
        (foreign_database_with_its_own_id, StoreCorrupt, "application_id 0x4d2"),
        (random_bytes, StoreCorrupt, "not a SQLite database"),
        (forged_header, StoreCorrupt, "not a cronwright store"),
        (empty_file, StoreCorrupt, "not a SQLite database"),
        (newer_store, StoreError, "newer than this cronwright knows"),
    ],
)
def test_a_file_that_is_not_a_usable_store_is_refused_and_left_untouched(
    path: Path, make: Callable[[Path], None], error: type[StoreError], words: str
) -> None:
    make(path)
    before, files = digest(path), siblings(path)

    with pytest.raises(error, match=words) as refused:
        SqliteStore(path)

    assert str(path) in str(refused.value)
    assert digest(path) == before
    assert siblings(path) == files  # no -wal, -shm or -journal, and no half-made store beside it


def test_a_stamped_file_without_its_tables_is_refused(path: Path) -> None:
    stamped_empty_file(path, version=schema_version())

    with pytest.raises(
        StoreCorrupt, match="its tables audit, job_counts, jobs, nodes, notifications, runs are missing"
    ):
        SqliteStore(path)


@pytest.mark.parametrize("table", ["job_counts", "notifications"])
def test_a_store_at_the_current_version_that_lost_a_later_table_is_refused(path: Path, table: str) -> None:
    """Every table of the schema is looked for at open, not only the first release's: a store whose
    version says it has them, without one, is damaged, refused before a statement needs it."""
    SqliteStore(path).close()
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute(f"DROP TABLE {table}")
        connection.commit()

    with pytest.raises(StoreCorrupt, match=f"its tables {table} are missing"):
        SqliteStore(path)


def test_a_store_with_damaged_pages_is_refused(path: Path) -> None:
    SqliteStore(path).close()
    damaged = bytearray(path.read_bytes())
    damaged[100:4096] = random.Random(7).randbytes(3996)  # the schema page, after the header
    path.write_bytes(bytes(damaged))

    with pytest.raises(StoreCorrupt, match="damaged") as refused:
        SqliteStore(path)

    assert isinstance(refused.value.__cause__, sqlite3.DatabaseError)


# -- failures of writes --------------------------------------------------------------------------


def fail_every_file_write(action: Callable[[], Result]) -> Result | Exception:
    """Runs `action` while every write to a file fails in the kernel (EFBIG), as on a full disk.

    Tests run as root, and a root process writes a chmod-0444 file anyway, so a file-size limit of 0
    is the fault that really bites. Nothing else may write meanwhile (pytest's capture files included),
    so the outcome is returned, not asserted, inside.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))
    try:
        return action()
    except Exception as err:
        return err
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def test_a_failing_disk_fails_the_save_whole_and_the_store_recovers(store: SqliteStore) -> None:
    stored = store.insert(job())

    failed = fail_every_file_write(
        lambda: store.save(WriteSet([stored.evolve(occurrences=1)], runs=[run(stored.id, "f1")]))
    )

    assert isinstance(failed, StoreError)
    assert isinstance(failed.__cause__, sqlite3.OperationalError)
    assert store.get(stored.id) == stored
    assert store.runs() == []
    changed = stored.evolve(occurrences=1)
    assert store.save(WriteSet([changed], runs=[run(stored.id, "f1")])).of(changed)
    assert [found.fire_id for found in store.runs()] == ["f1"]


@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(lambda store, stored: store.insert(job("another")), id="insert"),
        pytest.param(lambda store, stored: store.save(WriteSet([stored])), id="save"),
        pytest.param(lambda store, stored: store.delete(stored.id), id="delete"),
        pytest.param(lambda store, stored: store.beat("node-a", T0), id="beat"),
        pytest.param(lambda store, stored: store.forget("node-a"), id="forget"),
    ],
)
def test_a_read_only_database_fails_each_write_and_the_store_recovers(
    store: SqliteStore, mutation: Callable[[SqliteStore, Job], object]
) -> None:
    # SQLite's own read-only switch gives the error a read-only file gives (SQLITE_READONLY).
    stored = store.insert(job())
    connection_of(store).execute("PRAGMA query_only = ON")

    with pytest.raises(StoreError) as failed:
        mutation(store, stored)

    assert isinstance(failed.value.__cause__, sqlite3.OperationalError)
    assert "readonly" in str(failed.value.__cause__)
    assert store.jobs() == [stored]
    connection_of(store).execute("PRAGMA query_only = OFF")
    mutation(store, stored)


def test_a_rename_onto_a_live_name_is_refused_whole(store: SqliteStore) -> None:
    taken = store.insert(job("taken"))
    mover = store.insert(job("mover"))

    with pytest.raises(NameTaken, match="taken"):
        store.save(WriteSet([mover.evolve(name="taken")], runs=[run(mover.id, "f1")]))

    assert store.jobs() == [mover, taken]
    assert store.runs() == []


def test_a_closed_store_refuses_calls(path: Path) -> None:
    closed = SqliteStore(path)
    closed.close()
    closed.close()

    with pytest.raises(StoreError, match="closed"):
        closed.jobs()


# -- several processes ---------------------------------------------------------------------------


def claim_in_passes(path: str, passes: int, gate: Barrier, wins: Queue[Any]) -> None:
    """One process's scheduling passes: read the due jobs, then compare-and-swap each of them.

    Every process reads at the same moment (the barrier), so each pass is a real race for the same
    (job, version) pairs. Reports each pair this process won.
    """
    store = SqliteStore(path)
    won: list[tuple[int, int]] = []
    for _ in range(passes):
        gate.wait(timeout=60)
        for due in store.due(T0, 100):
            fired = due.evolve(occurrences=due.occurrences + 1)
            if store.save(WriteSet([fired])).of(fired):
                won.append((due.id, due.version))
    store.close()
    wins.put(won)


def test_processes_claiming_the_same_jobs_each_win_a_version_exactly_once(path: Path) -> None:
    with contextlib.closing(SqliteStore(path)) as store:
        job_ids = [store.insert(job(f"job-{number}")).id for number in range(8)]
    spawn = multiprocessing.get_context("spawn")
    gate, wins = spawn.Barrier(3), spawn.Queue()
    workers = [spawn.Process(target=claim_in_passes, args=(str(path), 10, gate, wins)) for _ in range(3)]
    for worker in workers:
        worker.start()
    results = [wins.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0

    every_win = [win for result in results for win in result]
    assert len(every_win) == len(set(every_win))  # no (job, version) was won twice
    with contextlib.closing(SqliteStore(path)) as store:
        for job_id in job_ids:
            final = store.get(job_id)
            assert final is not None
            versions = sorted(version for won, version in every_win if won == job_id)
            assert versions == list(range(1, final.version))  # every write was won by exactly one
            assert final.occurrences == len(versions)


# -- open_store ----------------------------------------------------------------------------------


def test_open_store_reads_each_url_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    memory = open_store("memory:", run_history=5)
    relative = open_store("sqlite:///.cronwright/relative.db")
    absolute = open_store(f"sqlite:///{tmp_path}/absolute.db")

    assert isinstance(memory, MemoryStore)
    assert isinstance(relative, SqliteStore) and relative.path == tmp_path / ".cronwright" / "relative.db"
    assert isinstance(absolute, SqliteStore) and absolute.path == tmp_path / "absolute.db"
    assert absolute.description == f"sqlite:///{tmp_path}/absolute.db"
    for store in (memory, relative, absolute):
        store.close()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("mysql://user:hunter2@db/cron", "scheme 'mysql' is not understood"),
        ("sqlite://relative.db", "names no database file"),
        ("sqlite:///", "names no database file"),
        ("sqlite:///store.db?mode=ro", "options"),
        ("cronwright.db", "is not understood"),
    ],
)
def test_open_store_refuses_a_url_it_cannot_serve(url: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as refused:
        open_store(url)

    assert "hunter2" not in str(refused.value)
    assert "memory:" in str(refused.value)


def test_the_creator_column_is_backfilled_when_a_version_1_store_is_migrated(path: Path) -> None:
    store = SqliteStore(path)
    mine = store.insert(job("mine", created_by="agent"))
    gone = store.insert(job("gone", created_by="agent"))
    theirs = store.insert(job("theirs", created_by="other"))
    store.delete(gone.id)
    store.save(WriteSet(runs=[run(mine.id, "f-mine"), run(theirs.id, "f-theirs")]))
    store.close()
    # Back to what release 1 left: no created_by column, no index on it, user_version 1.
    with sqlite3.connect(path) as connection:
        connection.execute("DROP INDEX jobs_live_id_version")  # (migration 0006's)
        connection.execute("DROP TABLE audit")  # (migration 0003's)
        connection.execute("DROP INDEX jobs_backfilling")  # (migration 0005's: and runs.owner, the counters)
        connection.execute("DROP INDEX runs_owner_newest")
        connection.execute("DROP INDEX jobs_created_by_name")
        connection.execute("ALTER TABLE runs DROP COLUMN owner")
        for trigger in ("insert", "update", "delete"):
            connection.execute(f"DROP TRIGGER jobs_counted_{trigger}")
        connection.execute("DROP TABLE job_counts")
        connection.execute("DROP INDEX jobs_created_by")
        connection.execute("ALTER TABLE jobs DROP COLUMN created_by")
        connection.execute("DROP TABLE notifications")  # (migration 0004's)
        connection.execute("PRAGMA user_version = 1")
    connection.close()

    store = SqliteStore(path)
    try:
        assert store.jobs(created_by="agent") == [mine]
        assert store.jobs(created_by="other") == [theirs]
        assert store.count_live("agent") == 1
        rows = connection_of(store).execute("SELECT id, created_by FROM jobs ORDER BY id").fetchall()
        assert rows == [(mine.id, "agent"), (gone.id, "agent"), (theirs.id, "other")]
        # Migration 0005: each run takes its job's creator, and a source's history finds its own; the
        # counters start from the rows there are.
        assert [found.fire_id for found in store.runs(created_by="agent")] == ["f-mine"]
        assert (store.counts("agent")["active"], store.counts()["active"]) == (1, 2)
    finally:
        store.close()


def test_a_rename_onto_a_live_name_among_other_jobs_refuses_the_whole_save(store: SqliteStore) -> None:
    # A save of several jobs is one statement; the unique index that refuses it is told by the job's
    # name, and none of the save's rows is written.
    one, two, three = (store.insert(job(name)) for name in ("one", "two", "three"))

    with pytest.raises(NameTaken, match="'two'"):
        store.save(WriteSet([one.evolve(occurrences=1), three.evolve(name="two"), two.evolve(occurrences=1)]))

    assert [store.get(found.id) for found in (one, two, three)] == [one, two, three]


def test_the_counters_stay_equal_to_the_rows_through_writes_and_hand_edits(store: SqliteStore) -> None:
    # job_counts is kept by triggers: whatever writes a job's row (the store, or a hand edit behind its
    # back), each source's count in each state stays what counting the rows says.
    made = [
        store.insert(job(f"j{index}", created_by="agent" if index % 3 else "other")) for index in range(9)
    ]
    store.save(
        WriteSet([made[0].evolve(state=State.PAUSED), made[1].evolve(state=State.EXPIRED, next_run_at=None)])
    )
    store.delete(made[2].id)
    connection = connection_of(store)
    with connection:
        connection.execute("UPDATE jobs SET state = 'done' WHERE id = ?", (made[3].id,))
        connection.execute("DELETE FROM jobs WHERE id = ?", (made[4].id,))
        connection.execute("UPDATE jobs SET deleted = 1 WHERE id = ?", (made[5].id,))
        connection.execute("UPDATE jobs SET deleted = 0 WHERE id = ?", (made[2].id,))

    counted = connection.execute(
        "SELECT created_by, state, count(*) FROM jobs WHERE NOT deleted GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    kept = connection.execute(
        "SELECT created_by, state, n FROM job_counts WHERE n > 0 ORDER BY 1, 2"
    ).fetchall()
    assert kept == counted
    assert store.counts("agent") == {
        **{state.value: 0 for state in State},
        **{state: n for source, state, n in counted if source == "agent"},
    }
