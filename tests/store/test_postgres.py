"""What only the PostgreSQL store must show: its schema, racing boots, claims across nodes, the database's
clock for leases, NOTIFY wake-ups, lost connections, and one-line refusals at boot.

The guarantees every store shares are in test_store_contract.py, which runs on PostgreSQL too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

import pg
from conftest import ScriptedRunner
from cronwright.clock import SystemClock
from cronwright.core.events import MemorySink
from cronwright.core.model import AtSchedule, InFlight, Job, Outcome, Run, State
from cronwright.errors import StoreCorrupt, StoreError
from cronwright.node import drive
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.store import open_store
from cronwright.store.base import WriteSet
from cronwright.store.codec import encode, run_data
from cronwright.store.postgres import SKEW_WARNING, PostgresStore, quoted, schema_version, upgrade
from cronwright.store.resilient import ResilientStore

CRONWRIGHT = Path(sys.executable).parent / "cronwright"
T0 = datetime.fromisoformat("2026-03-02T09:00:00+00:00")


def job(name: str = "nightly", due: datetime = T0, **changes: Any) -> Job:
    made = Job(
        id=0,
        name=name,
        target="reports",
        action="daily",
        args={},
        schedule=AtSchedule(due),
        ends_at=due + timedelta(days=1),
        created_at=due,
        updated_at=due,
        next_run_at=due,
    )
    return made.evolve(**changes)


@pytest.fixture
def url() -> Iterator[str]:
    """A store URL with a scratch schema of its own."""
    with pg.scratch_url() as made:
        yield made


@pytest.fixture
def opened() -> Iterator[list[PostgresStore]]:
    """Stores a test opens; each is closed after the test (a pool left open would leak connections)."""
    stores: list[PostgresStore] = []
    yield stores
    for store in stores:
        store.close()


@pytest.fixture
def open_(url: str, opened: list[PostgresStore]) -> Callable[..., PostgresStore]:
    def make(at: str | None = None, **options: Any) -> PostgresStore:
        store = PostgresStore(at or url, **options)
        opened.append(store)
        return store

    return make


def race(count: int, action: Callable[[int], object]) -> list[object]:
    """Runs `action(i)` on `count` threads released at once; returns each result or the exception raised."""
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def worker(index: int) -> None:
        barrier.wait()
        try:
            results[index] = action(index)
        except Exception as err:
            results[index] = err

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# -- schema ----------------------------------------------------------------------------------------


def catalog(schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """What the server's catalog says of a schema's tables, columns, indexes, constraints and sequences."""
    queries = {
        "columns": "SELECT table_name, column_name, ordinal_position, data_type, is_nullable, column_default,"
        " collation_name, is_identity, identity_generation FROM information_schema.columns"
        " WHERE table_schema = %(schema)s ORDER BY table_name, ordinal_position",
        "indexes": "SELECT tablename, indexname, replace(indexdef, %(schema)s || '.', '')"
        " FROM pg_indexes WHERE schemaname = %(schema)s ORDER BY tablename, indexname",
        "constraints": "SELECT rel.relname, con.conname, con.contype, pg_get_constraintdef(con.oid)"
        " FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid"
        " JOIN pg_namespace ns ON ns.oid = rel.relnamespace WHERE ns.nspname = %(schema)s ORDER BY 1, 2",
        "sequences": "SELECT sequence_name, data_type, start_value, increment"
        " FROM information_schema.sequences WHERE sequence_schema = %(schema)s ORDER BY 1",
        "triggers": "SELECT event_object_table, trigger_name, action_timing, event_manipulation,"
        " action_condition, replace(action_statement, %(schema)s || '.', '')"
        " FROM information_schema.triggers WHERE trigger_schema = %(schema)s ORDER BY 1, 2",
        # (the schema's name, wherever it is: qualifying a name, or a function's own search_path)
        "functions": "SELECT p.proname, replace(pg_get_functiondef(p.oid), %(schema)s, '')"
        " FROM pg_proc p JOIN pg_namespace ns ON ns.oid = p.pronamespace"
        " WHERE ns.nspname = %(schema)s ORDER BY 1",
    }
    with pg.connect(pg.server_url()) as connection:
        found = {
            key: connection.execute(query, {"schema": schema}).fetchall() for key, query in queries.items()
        }
        found["versions"] = connection.execute(
            sql.SQL("SELECT version FROM {}.schema_migrations ORDER BY version").format(
                sql.Identifier(schema)
            )
        ).fetchall()
    return found


def test_replayed_migrations_build_exactly_the_fresh_schema(opened: list[PostgresStore]) -> None:
    with pg.scratch_schema() as (server, fresh), pg.scratch_schema() as (_, migrated):
        with pg.connect(server) as connection, connection.transaction():
            connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(migrated)))
            connection.execute("SELECT set_config('search_path', %s, true)", (quoted(migrated),))
            upgrade(connection, 0)
        opened.append(PostgresStore(server, schema=fresh))
        opened.append(PostgresStore(server, schema=migrated))  # found current: nothing to do

        assert catalog(migrated) == catalog(fresh)
        tables = sorted({row[0] for row in catalog(fresh)["columns"]})
        assert tables == [
            *("audit", "job_count_deltas", "jobs", "nodes", "notifications", "runs", "schema_migrations")
        ]
        assert catalog(fresh)["versions"] == [(number,) for number in range(1, schema_version() + 1)]
        assert ("runs", "runs_once", "u", "UNIQUE (job_id, fire_id, attempt)") in catalog(fresh)[
            "constraints"
        ]


def test_nodes_booting_together_migrate_the_schema_once(url: str, opened: list[PostgresStore]) -> None:
    stores = race(6, lambda index: PostgresStore(url))
    opened.extend(store for store in stores if isinstance(store, PostgresStore))

    assert all(isinstance(store, PostgresStore) for store in stores), stores
    first = opened[0]
    stored = first.insert(job())
    assert all(store.get(stored.id) == stored for store in opened)
    assert catalog(first.schema)["versions"] == [(number,) for number in range(1, schema_version() + 1)]


def test_a_schema_holding_other_tables_is_refused_and_left_untouched(url: str) -> None:
    schema = url.rsplit("schema=", 1)[1]
    with pg.connect(url) as connection:
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        connection.execute(sql.SQL("CREATE TABLE {}.notes (body text)").format(sql.Identifier(schema)))

    with pytest.raises(StoreCorrupt, match=r"not a cronwright store \(notes\).*untouched"):
        PostgresStore(url)

    with pg.connect(url) as connection:
        left = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
    assert left == [("notes",)]


@pytest.mark.parametrize("table", ["job_count_deltas", "notifications"])
def test_a_schema_at_the_current_version_that_lost_a_later_table_is_refused(
    open_: Callable[..., PostgresStore], url: str, table: str
) -> None:
    """Every table of the schema is looked for at open, not only the first release's."""
    open_().close()
    schema = url.rsplit("schema=", 1)[1]
    with pg.connect(url) as connection:
        connection.execute(
            sql.SQL("DROP TABLE {}.{} CASCADE").format(sql.Identifier(schema), sql.Identifier(table))
        )

    with pytest.raises(StoreCorrupt, match=f"its tables {table} are missing"):
        PostgresStore(url)


def test_a_schema_written_by_a_later_release_is_refused(
    open_: Callable[..., PostgresStore], url: str
) -> None:
    open_().close()
    schema = url.rsplit("schema=", 1)[1]
    with pg.connect(url) as connection:
        connection.execute(
            sql.SQL("INSERT INTO {}.schema_migrations (version) VALUES (%s)").format(sql.Identifier(schema)),
            (schema_version() + 1,),
        )

    with pytest.raises(StoreError, match="newer than this cronwright knows"):
        PostgresStore(url)


def test_a_schema_name_must_be_a_plain_name(url: str) -> None:
    with pytest.raises(StoreError, match="not a plain SQL name"):
        PostgresStore(pg.with_params(url, schema='x"; DROP TABLE jobs; --'))


# -- claims across nodes ---------------------------------------------------------------------------


def test_two_stores_saving_one_read_let_exactly_one_win(open_: Callable[..., PostgresStore]) -> None:
    one, two = open_(), open_()
    stored = one.insert(job())

    def save(index: int) -> bool:
        changed = stored.evolve(occurrences=index)
        return (one if index % 2 else two).save(WriteSet([changed])).of(changed)

    results = race(8, save)

    assert sorted(results, key=str) == [False] * 7 + [True]
    current = two.get(stored.id)
    assert current is not None and current.version == 2


def test_nodes_claiming_overlapping_batches_each_win_a_job_once_and_never_deadlock(
    open_: Callable[..., PostgresStore],
) -> None:
    stores = [open_() for _ in range(3)]
    for number in range(200):
        stores[0].insert(job(f"job-{number:03}"))
    reads = [store.due(T0, 1000) for store in stores]

    def claim(index: int) -> list[bool]:
        batch = reads[index] if index % 2 else reads[index][::-1]  # opposite orders: the deadlock risk
        claims = [due.evolve(state=State.RUNNING, occurrences=1) for due in batch]
        written = stores[index].save(WriteSet(claims))
        return [written.of(claim) for claim in claims]

    results = race(3, claim)

    assert not [result for result in results if isinstance(result, Exception)], results
    wins = [won for result in results if isinstance(result, list) for won in result]
    assert sum(wins) == 200
    assert stores[1].counts()["running"] == 200
    assert {found.version for found in stores[2].jobs()} == {2}


def test_nodes_reading_due_jobs_at_once_each_read_their_own_share_first(
    open_: Callable[..., PostgresStore],
) -> None:
    """Three live nodes, 30 one-shots due at one instant: each node's first 10 are its own (no two nodes
    start by racing for the same rows), together they are the 30, and each still reads the others' after
    its own (a share whose node is busy or gone is taken by the rest)."""
    stores = [open_() for _ in range(3)]
    for number in range(30):
        stores[0].insert(job(f"job-{number:03}"))
    for index, store in enumerate(stores):
        store.beat(f"node-{index}", T0)
    for index, store in enumerate(stores):
        assert store.lease_left(T0, timedelta(seconds=45), f"node-{index}") is None  # no peer holds a run

    firsts = [{due.id for due in store.due(T0, 10)} for store in stores]

    assert [len(first) for first in firsts] == [10, 10, 10]
    assert set.union(*firsts) == {found.id for found in stores[0].jobs()}
    everything = stores[1].due(T0, 30)
    assert {due.id for due in everything[:10]} == firsts[1]
    assert {due.id for due in everything} == set.union(*firsts)


def test_a_node_alone_reads_due_jobs_earliest_first(open_: Callable[..., PostgresStore]) -> None:
    store = open_()
    for number in range(5):
        store.insert(job(f"job-{number}", due=T0 - timedelta(minutes=number)))
    store.beat("alone", T0)
    assert store.lease_left(T0, timedelta(seconds=45), "alone") is None

    assert [due.name for due in store.due(T0, 5)] == [f"job-{number}" for number in reversed(range(5))]


def test_a_store_starts_no_thread_of_its_own(open_: Callable[..., PostgresStore]) -> None:
    """Its connections are opened and checked in the calling thread: nothing in it can wake an idle node
    on a timer (psycopg_pool's scheduler wakes every ten minutes even with nothing to do; semantic 25).
    Only `watch` starts a thread, which waits for notifications without a timeout."""
    before = set(threading.enumerate())
    store = open_()
    stored = store.insert(job())
    race(4, lambda index: store.get(stored.id))  # several connections in use at once
    store.save(WriteSet([stored.evolve(occurrences=1)]))
    store.beat("node", T0)
    assert store.due(T0, 10)

    assert set(threading.enumerate()) - before == set()


# -- leases on the database's clock ----------------------------------------------------------------


def held(store: PostgresStore, name: str, node: str) -> Job:
    stored = store.insert(job(name))
    running = stored.evolve(state=State.RUNNING, in_flight=InFlight("f1", T0, 1, T0, node))
    assert store.save(WriteSet([running])).of(running)
    return running


def test_a_node_whose_clock_runs_ahead_never_takes_a_live_nodes_runs_for_dead(
    open_: Callable[..., PostgresStore],
) -> None:
    alive, ahead = open_(), open_()
    held(alive, "busy", "node-alive")
    now = datetime.now(UTC)
    alive.beat("node-alive", now)

    assert ahead.orphans(now + timedelta(minutes=10), ttl=timedelta(seconds=45)) == []
    assert ahead.orphans(now + timedelta(days=3), ttl=timedelta(seconds=45)) == []


def test_a_node_whose_clock_runs_behind_is_never_taken_for_dead(open_: Callable[..., PostgresStore]) -> None:
    behind, checker = open_(), open_()
    held(behind, "busy", "node-behind")
    now = datetime.now(UTC)
    behind.beat("node-behind", now - timedelta(minutes=10))

    assert checker.orphans(now, ttl=timedelta(seconds=45)) == []
    assert "off the database's" in behind.state


def test_a_node_silent_for_the_ttl_on_the_databases_clock_is_dead(
    open_: Callable[..., PostgresStore], url: str
) -> None:
    store = open_()
    held(store, "stuck", "node-dead")
    held(store, "fine", "node-alive")
    now = datetime.now(UTC)
    store.beat("node-dead", now)
    store.beat("node-alive", now)
    # A minute passes for node-dead on the database's clock (and for nobody else).
    with pg.connect(url) as connection:
        connection.execute(
            sql.SQL(
                "UPDATE {}.nodes SET db_beat_at = now() - interval '1 minute' WHERE node = 'node-dead'"
            ).format(sql.Identifier(store.schema))
        )

    # Whatever the caller's clock says: even one that runs an hour behind.
    orphans = store.orphans(now - timedelta(hours=1), ttl=timedelta(seconds=45))

    assert [orphan.name for orphan in orphans] == ["stuck"]


def test_lease_left_is_measured_on_the_databases_clock(open_: Callable[..., PostgresStore], url: str) -> None:
    store, watcher = open_(), open_()
    held(store, "busy", "node-busy")
    now = datetime.now(UTC)
    store.beat("node-busy", now)
    # Its last beat was 30 s ago on the database's clock.
    with pg.connect(url) as connection:
        connection.execute(
            sql.SQL(
                "UPDATE {}.nodes SET db_beat_at = now() - interval '30 seconds' WHERE node = 'node-busy'"
            ).format(sql.Identifier(store.schema))
        )

    # Whatever the watcher's own clock says: 15 s left, less the moments this test took.
    for clock in (now, now + timedelta(hours=1), now - timedelta(days=2)):
        left = watcher.lease_left(clock, timedelta(seconds=45), "node-watcher")
        assert left is not None and timedelta(seconds=10) < left <= timedelta(seconds=15)


def test_a_peers_running_row_that_cannot_be_read_is_no_lease_to_wait_for(
    open_: Callable[..., PostgresStore], url: str
) -> None:
    store = open_()
    running = held(store, "broken", "node-peer")
    store.beat("node-peer", datetime.now(UTC))
    assert store.lease_left(datetime.now(UTC), timedelta(seconds=45), "node-me") is not None
    with pg.connect(url) as connection:  # a hand edit behind the store's back
        connection.execute(
            sql.SQL("UPDATE {}.jobs SET data = '{{\"name\": 1}}'::jsonb WHERE id = %s").format(
                sql.Identifier(store.schema)
            ),
            (running.id,),
        )

    assert store.held("node-peer") == []  # a read of many rows leaves it out, and notes it
    assert list(store.unreadable) == [running.id]
    assert store.lease_left(datetime.now(UTC), timedelta(seconds=45), "node-me") is None


def test_a_create_waiting_for_another_nodes_section_never_holds_up_this_nodes_passes(
    open_: Callable[..., PostgresStore],
) -> None:
    other, mine = open_(), ResilientStore(open_(), MemorySink())
    entered = threading.Event()

    def create() -> None:
        with mine.exclusive():  # waits for the other node's section
            entered.set()

    with other.exclusive():
        waiting = threading.Thread(target=create)
        waiting.start()
        read = threading.Thread(target=lambda: mine.due(T0, 16))
        read.start()
        read.join(5)
        assert not read.is_alive(), "a pass's read waited for another node's create"
        assert not entered.is_set()
    waiting.join(10)
    assert entered.is_set()


def test_beats_are_shown_on_the_databases_clock(open_: Callable[..., PostgresStore]) -> None:
    store = open_()
    before = datetime.now(UTC)

    store.beat("node-skewed", before + timedelta(hours=1))

    [beat] = store.beats()
    assert beat.node == "node-skewed"
    assert before - timedelta(seconds=5) < beat.beat_at < before + timedelta(seconds=5)
    assert beat.started_at == beat.beat_at
    assert "this node's clock is +3600" in store.state


def test_a_beat_that_waited_on_a_stalled_store_is_not_taken_for_a_clock_skew(
    open_: Callable[..., PostgresStore], caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 39: a node's first reading after a hang said its clock was "18.7 s behind the database's",
    # which was its own stall, then "agrees again" a moment later. Here the store's one connection is
    # held (its create lock, as a create holds it) for longer than the warning's threshold, so the beat
    # reaches the server late: the database reads its clock that much after the node read its own.
    store = open_(pool_size=1)
    store.beat("node-stalled", datetime.now(UTC))
    with store.exclusive():
        beating = threading.Thread(target=lambda: store.beat("node-stalled", datetime.now(UTC)))
        beating.start()
        beating.join(SKEW_WARNING.total_seconds() + 1.5)  # the beat waits for the connection meanwhile
        assert beating.is_alive()
    beating.join(10)
    assert "the database's" not in caplog.text
    assert "off the database's" not in store.state
    store.beat("node-stalled", datetime.now(UTC) - timedelta(minutes=5))  # a real skew is still told
    assert "300" in caplog.text and "behind the database's" in caplog.text


# -- NOTIFY ----------------------------------------------------------------------------------------


def test_a_change_made_by_another_store_wakes_a_watcher(open_: Callable[..., PostgresStore]) -> None:
    watcher, writer = open_(), open_()
    woke = threading.Semaphore(0)
    listener = watcher.watch(woke.release)
    assert listener.listening.wait(10)
    # Listening, it wakes its node once: a change made before the LISTEN took effect was announced to
    # nobody (the node may have read the store before it).
    assert woke.acquire(timeout=10)
    assert not woke.acquire(blocking=False)

    # Notifications arrive in commit order, so a wake for the watcher's own insert would be counted
    # before the one for the writer's: exactly one wake-up means its own change woke nobody.
    watcher.insert(job("own"))
    stored = writer.insert(job("theirs"))
    assert woke.acquire(timeout=10)
    assert not woke.acquire(blocking=False)

    first = stored.evolve(occurrences=1)
    assert writer.save(WriteSet([first])).of(first)
    assert woke.acquire(timeout=10)
    second = stored.evolve(occurrences=2)
    assert not writer.save(WriteSet([second])).of(second)  # a write that lost changes nothing
    writer.delete(stored.id)
    assert woke.acquire(timeout=10)
    assert not woke.acquire(blocking=False)

    started = time.monotonic()
    listener()
    assert time.monotonic() - started < 3
    assert not listener.listening.is_set()


def test_a_watcher_and_a_store_survive_their_connections_being_cut(
    open_: Callable[..., PostgresStore], url: str
) -> None:
    name = f"cw_cut_{url.rsplit('_', 1)[1]}"
    watcher, writer = open_(pg.with_params(url, application_name=name)), open_()
    woke = threading.Semaphore(0)
    listener = watcher.watch(woke.release)
    assert listener.listening.wait(10)
    assert woke.acquire(timeout=10)  # the first LISTEN's wake-up

    with pg.connect(url) as connection:
        cut = connection.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        ).fetchone()
    assert cut is not None and isinstance(cut[0], int)
    assert cut[0] >= 2  # the listener's connection and the pool's

    # Back, the listener wakes its node at once: changes made meanwhile were announced to nobody.
    assert woke.acquire(timeout=15)
    assert listener.listening.is_set()
    stored = writer.insert(job())
    assert woke.acquire(timeout=10)
    # The pool replaced its cut connection: the next call works.
    assert watcher.get(stored.id) == stored
    assert watcher.state == "connected"


# -- losing the server -----------------------------------------------------------------------------


@pytest.fixture
def role(url: str) -> Iterator[str]:
    """A login role of its own, which a test can lock out of the server (and let back in)."""
    name = f"cw_role_{url.rsplit('_', 1)[1]}"
    with pg.connect(url) as connection:
        connection.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        connection.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(connection.info.dbname), sql.Identifier(name)
            )
        )
    try:
        yield name
    finally:
        with pg.connect(url) as connection:
            schema = url.rsplit("schema=", 1)[1]
            connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (name,)
            )
            connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
            connection.execute(
                sql.SQL("REVOKE ALL ON DATABASE {} FROM {}").format(
                    sql.Identifier(connection.info.dbname), sql.Identifier(name)
                )
            )
            connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def lock_out(url: str, role: str, locked: bool) -> None:
    with pg.connect(url) as connection:
        connection.execute(
            sql.SQL("ALTER ROLE {} " + ("NOLOGIN" if locked else "LOGIN")).format(sql.Identifier(role))
        )
        if locked:
            connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
            )


def as_role(url: str, role: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)


def eventually(action: Callable[[], Any], seconds: float = 20.0) -> Any:
    """`action()`, tried again while it raises StoreError (a pool reconnects with backoff), for a while."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return action()
        except StoreError:
            if time.monotonic() > deadline:
                raise


# `role` comes first: its teardown (dropping the role) must follow the closing of the stores.
def test_a_store_that_loses_the_server_fails_each_call_says_so_and_recovers(
    role: str, open_: Callable[..., PostgresStore], url: str
) -> None:
    if "postgresql://postgres@" not in url:
        pytest.skip(
            "this test logs in as a role of its own, so it needs a URL of the form postgresql://postgres@"
        )
    store = open_(as_role(url, role), timeout=1.0)
    stored = store.insert(job())

    lock_out(url, role, True)
    with pytest.raises(StoreError, match="unreachable"):
        store.get(stored.id)
    assert store.state.startswith("unreachable since ")

    lock_out(url, role, False)
    assert eventually(lambda: store.get(stored.id)) == stored
    assert store.state == "connected"


def test_a_node_cut_off_from_the_server_fires_nothing_until_it_is_back_then_fires_once(
    role: str, open_: Callable[..., PostgresStore], url: str
) -> None:
    if "postgresql://postgres@" not in url:
        pytest.skip(
            "this test logs in as a role of its own, so it needs a URL of the form postgresql://postgres@"
        )
    node_store = open_(as_role(url, role), timeout=1.0)  # first: the schema is the role's
    writer = open_()
    runner = ScriptedRunner()
    node = Node(node_store, runner, SystemClock(), MemorySink(), NodeSettings(max_concurrency=4))
    serving = threading.Thread(target=drive.serve_forever, args=(node,), daemon=True)
    serving.start()
    try:
        # A change on another store wakes the serving node (NOTIFY): it fires long before its
        # 60-second safety wake-up.
        writer.insert(job("first", due=datetime.now(UTC)))
        assert runner.started.wait(10)
        runner.started.clear()

        lock_out(url, role, True)
        writer.insert(job("second", due=datetime.now(UTC)))
        node.wake()  # its pass fails: it cannot read, so it fires nothing, and tries again later
        assert not runner.started.wait(3)

        lock_out(url, role, False)
        assert runner.started.wait(20)  # its failed passes are retried, with backoff
    finally:
        node.stop()
        serving.join(10)
    assert len({call.fire_id for call in runner.calls}) == len(runner.calls) == 2
    assert writer.counts()["done"] == 2
    assert len(writer.runs()) == 2


# -- opening ---------------------------------------------------------------------------------------


def test_open_store_opens_postgresql_and_postgres_urls(url: str, opened: list[PostgresStore]) -> None:
    for scheme in ("postgresql", "postgres"):
        store = open_store(url.replace("postgresql", scheme, 1), run_history=5)
        assert isinstance(store, PostgresStore)
        opened.append(store)
        assert store.description.startswith(f"{scheme}://")


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    with pytest.raises(StoreError) as refused:
        open_store("postgresql://postgres:hunter2@127.0.0.1:1/test")

    message = str(refused.value)
    assert message.startswith(
        "cannot reach the PostgreSQL store postgresql://postgres:***@127.0.0.1:1/test: "
    )
    assert "hunter2" not in message and "\n" not in message


@pytest.mark.parametrize("verb", ["serve", "tick", "status"])
def test_a_node_that_cannot_reach_the_server_says_so_in_one_line_and_exits_2(
    verb: str, tmp_path: Path
) -> None:
    config = tmp_path / "cronwright.toml"
    config.write_text('[node]\nzone = "UTC"\nstore = "postgresql://postgres:hunter2@127.0.0.1:1/test"\n')

    done = subprocess.run(
        [str(CRONWRIGHT), "--config", str(config), verb],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "cronwright: error: cannot reach the PostgreSQL store postgresql://postgres:***@"
    )
    assert "hunter2" not in done.stderr


def test_status_shows_the_store_and_the_nodes_with_their_last_beat(
    open_: Callable[..., PostgresStore], url: str, tmp_path: Path
) -> None:
    store = open_()
    store.beat("host-a:101:abc123", datetime.now(UTC))
    store.beat("host-b:202:def456", datetime.now(UTC))
    config = tmp_path / "cronwright.toml"
    config.write_text(f'[node]\nzone = "UTC"\nstore = "{url}"\n')

    done = subprocess.run(
        [str(CRONWRIGHT), "--config", str(config), "status", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    node = json.loads(done.stdout)["node"]
    assert node["store"] == url
    assert node["persistence"] == "persisted"
    assert node["store_state"] == "connected"
    assert sorted(peer["node"] for peer in node["peers"]) == ["host-a:101:abc123", "host-b:202:def456"]
    assert all(peer["last_beat"].endswith("+00:00") for peer in node["peers"])


def test_the_creator_column_is_backfilled_when_a_version_1_schema_is_migrated(
    url: str, open_: Callable[..., PostgresStore]
) -> None:
    store = open_()
    mine = store.insert(job("mine", created_by="agent"))
    gone = store.insert(job("gone", created_by="agent"))
    theirs = store.insert(job("theirs", created_by="other"))
    store.delete(gone.id)
    store.save(
        WriteSet(
            runs=[
                Run(owner.id, owner.name, f"f-{owner.name}", 1, T0, T0, T0, Outcome.OK, "", 0, "n")
                for owner in (mine, theirs)
            ]
        )
    )
    store.close()
    # Back to what release 1 left: no created_by column, no index on it, schema version 1.
    with pg.connect(url) as connection, connection.transaction():
        connection.execute("SELECT set_config('search_path', %s, true)", (quoted(store.schema),))
        for trigger in ("jobs_counted", "jobs_counted_change", "jobs_counted_truncate"):  # (0006's)
            connection.execute(f"DROP TRIGGER {trigger} ON jobs")
        connection.execute("DROP FUNCTION cronwright_count_job(), cronwright_count_no_jobs()")
        connection.execute("DROP TABLE job_count_deltas")
        connection.execute("DROP INDEX jobs_live_id_version")
        connection.execute("DROP TRIGGER runs_owner_from_job ON runs")  # (migration 0005's)
        connection.execute("DROP FUNCTION cronwright_run_owner()")
        connection.execute("ALTER TABLE runs DROP COLUMN owner")  # (migration 0005's, and its index)
        connection.execute("DROP TABLE audit")  # (migration 0003's)
        connection.execute("DROP INDEX jobs_created_by")
        connection.execute("ALTER TABLE jobs DROP COLUMN created_by")
        connection.execute("DROP TABLE notifications")  # (migration 0004's)
        connection.execute("DELETE FROM schema_migrations WHERE version > 1")

    again = open_()
    assert again.jobs(created_by="agent") == [mine]
    assert again.jobs(created_by="other") == [theirs]
    assert again.count_live("agent") == 1
    # Migration 0006: the counts start from the rows there are.
    assert (again.counts("agent")["active"], again.counts()["active"]) == (1, 2)
    # Migration 0005: each run takes its job's creator, and a source's history finds its own.
    assert [found.fire_id for found in again.runs(created_by="agent")] == ["f-mine"]
    with pg.connect(url) as connection:
        rows = connection.execute(
            sql.SQL("SELECT id, created_by FROM {}.jobs ORDER BY id").format(sql.Identifier(store.schema))
        ).fetchall()
    assert rows == [(mine.id, "agent"), (gone.id, "agent"), (theirs.id, "other")]


def test_a_run_inserted_by_a_node_of_the_previous_release_is_in_its_sources_history(
    url: str, open_: Callable[..., PostgresStore]
) -> None:
    """During a rolling upgrade a node of schema version 4 inserts runs without an owner: the database
    fills it in from the job, so the source's history (read by owner) still shows the run."""
    store = open_()
    mine = store.insert(job("mine", created_by="agent"))
    old = Run(mine.id, mine.name, "f-old-node", 1, T0, T0, T0, Outcome.OK, "", 0, "n")
    with pg.connect(url) as connection, connection.transaction():
        connection.execute("SELECT set_config('search_path', %s, true)", (quoted(store.schema),))
        connection.execute(
            "INSERT INTO runs (job_id, fire_id, attempt, finished_at, data) VALUES (%s, %s, 1, %s, %s)",
            (mine.id, old.fire_id, T0, encode(run_data(old))),
        )
    assert [found.fire_id for found in store.runs(created_by="agent")] == ["f-old-node"]
