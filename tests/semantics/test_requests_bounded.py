"""Semantic 42, first half: a request costs what it returns. At 10,000 schedules, on SQLite and on
PostgreSQL, every verb of the protocol (which the HTTP API, MCP's tools, the CLI and the dashboard's pages
all ask) decodes no more rows than its reply holds, counted where the stores decode them
(`store.codec.Decoded`); a create's quota check decodes no job at all; and a `/metrics` scrape decodes the
jobs its per-job series cover, once, and none beyond them.

A page reads one row more than it shows, to tell whether another page follows: that row is its
look-ahead, allowed here and named `PEEK`. Counts, quotas and backfills waiting are aggregates of indexed
columns, and must say exactly what decoding every job said before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from psycopg import sql

import pg
from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.model import Outcome, Run, State
from cronwright.core.sources import Source, operator
from cronwright.node.scheduler import FOLD_COUNTS_EVERY
from cronwright.notify.gauges import AlertGauges
from cronwright.store.base import Backend, WriteSet
from cronwright.store.codec import Decoded
from cronwright.store.postgres import FOLD_AFTER, PostgresStore
from cronwright.store.sqlite import SqliteStore
from cronwright.telemetry.metrics import NodeGauges

SCHEDULES = 10_000
PEEK = 1  # the look-ahead row of a page
HOURLY = {"cron": "0 * * * *"}
AGENT = Source("agent", targets=("reports.*",), max_schedules=SCHEDULES * 2)
OTHER = Source("other", targets=("reports.*",))
OPERATOR = operator()


@dataclass
class Crowded:
    """A store holding SCHEDULES schedules, most of them the agent's, with a few runs and a backfill."""

    harness: Harness
    store: Backend

    def ask(self, caller: Source, action: str, /, **fields: Any) -> tuple[dict[str, Any], int, int]:
        """The reply to a request, and the jobs and runs the store decoded to answer it."""
        jobs, runs = Decoded.jobs, Decoded.runs
        reply = self.harness.protocol.dispatch({"action": action, **fields}, caller)
        assert reply["ok"], reply
        return reply, Decoded.jobs - jobs, Decoded.runs - runs


def _copy_sqlite(store: SqliteStore, template: str, count: int) -> None:
    """`count` copies of the job named `template`, written straight into the file (fast, not a create)."""
    with closing(__import__("sqlite3").connect(store.path)) as connection:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO jobs (name, state, deleted, target, wake_at, version, data, created_by) "
            "SELECT j.name || '-' || printf('%05d', i), j.state, 0, j.target, j.wake_at, 1, "
            "json_set(j.data, '$.name', j.name || '-' || printf('%05d', i)), j.created_by "
            "FROM n, jobs AS j WHERE j.name = ? AND NOT j.deleted",
            (count, template),
        )
        connection.execute("COMMIT")


def _copy_postgres(url: str, schema: str, template: str, count: int) -> None:
    copies = (
        "WITH c AS (SELECT j.*, j.name || '-' || lpad(i::text, 5, '0') AS copy "
        "FROM generate_series(1, %s) AS i, {}.jobs AS j WHERE j.name = %s AND NOT j.deleted) "
        "INSERT INTO {}.jobs (name, state, deleted, target, wake_at, version, data, created_by) "
        "SELECT copy, state, false, target, wake_at, 1, "
        "jsonb_set(data::jsonb, '{{name}}', to_jsonb(copy))::json, created_by FROM c"
    )
    with pg.connect(url) as connection:
        connection.execute(
            sql.SQL(copies).format(sql.Identifier(schema), sql.Identifier(schema)), (count, template)
        )


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def crowded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crowded]:
    clock = ManualClock(at("2026-03-02T09:00:00+01:00"))
    with pg.scratch_schema() if request.param == "postgres" else _no_schema() as (url, schema):
        store: Backend
        if request.param == "postgres":
            store = PostgresStore(url, schema=schema)
        else:
            store = SqliteStore(tmp_path_factory.mktemp("crowded") / "cronwright.db")
        harness = make_harness(store, clock)
        crowd = Crowded(harness, store)
        for source, name in ((AGENT, "agent-job"), (OTHER, "other-job")):
            crowd.ask(
                source,
                "create_job",
                job={"name": name, "target": "reports", "action": "daily", "schedule": HOURLY},
            )
        copies = {"agent-job": SCHEDULES - 1_001, "other-job": 999}
        for template, count in copies.items():
            if isinstance(store, SqliteStore):
                _copy_sqlite(store, template, count)
            else:
                _copy_postgres(url, schema, template, count)
        _history(store)
        crowd.ask(AGENT, "pause", name="agent-job-00001")
        assert sum(store.counts().values()) == SCHEDULES
        yield crowd
        harness.runner.close()
        harness.node.lease.close()
        store.close()


def _history(store: Backend) -> None:
    """Some runs of the agent's jobs and the other's, and a backfill waiting on the agent's first job."""
    hour = timedelta(hours=1)
    start = at("2026-03-01T09:00:00+01:00")
    owners = [store.find(f"agent-job-{index:05d}") for index in range(1, 31)] + [store.find("other-job")]
    runs = [
        Run(
            owner.id,
            owner.name,
            f"f-{owner.id}-{when}",
            1,
            start + when * hour,
            start + when * hour,
            start + when * hour + timedelta(seconds=1),
            Outcome.OK,
            "ok",
            1000,
            "node-a",
        )
        for owner in owners
        if owner is not None
        for when in range(3)
    ]
    store.save(WriteSet(runs=runs))
    first = store.find("agent-job")
    assert first is not None
    queued = first.evolve(backfill=(start, start + hour))
    assert store.save(WriteSet([queued])).of(queued)


class _no_schema:
    def __enter__(self) -> tuple[str, str]:
        return "", ""

    def __exit__(self, *exc: object) -> None:
        return None


# The reads: each request, as whom, and how many job rows and run rows its reply holds.
READS: list[tuple[str, Source, str, dict[str, Any]]] = [
    ("list, a page", AGENT, "list", {"limit": 50}),
    ("list, a later page", AGENT, "list", {"limit": 50, "after_name": "agent-job-05000"}),
    ("list, a state", AGENT, "list", {"state": "paused", "limit": 50}),
    ("list, the operator's page", OPERATOR, "list", {"limit": 50}),
    ("list, another source's as the operator", OPERATOR, "list", {"source": "other", "limit": 20}),
    ("get", AGENT, "get", {"name": "agent-job"}),
    ("history, the source's", AGENT, "history", {"limit": 20}),
    ("history, the operator's", OPERATOR, "history", {"limit": 20}),
    ("history, one job", AGENT, "history", {"name": "agent-job", "limit": 5}),
    ("audit, the source's", AGENT, "audit", {"limit": 20}),
    ("audit, one job", AGENT, "audit", {"name": "agent-job", "limit": 20}),
    ("status, the source's", AGENT, "status", {}),
    ("status, the operator's", OPERATOR, "status", {}),
    ("preview", AGENT, "preview", {"expression": "0 9 * * 1-5", "count": 5}),
    ("notifications", AGENT, "notifications", {"limit": 20}),
    ("targets", AGENT, "targets", {}),
    (
        "a backfill's dry run",
        AGENT,
        "backfill",
        {
            "name": "agent-job-00002",
            "dry_run": True,
            "from": "2026-03-01T09:30:00+01:00",
            "to": "2026-03-01T11:30:00+01:00",
        },
    ),
]


def _returned(reply: dict[str, Any]) -> tuple[int, int]:
    """The job rows and run rows a reply holds."""
    jobs = len(reply.get("jobs", [])) + (1 if "job" in reply else 0)
    return jobs, len(reply.get("runs", []))


@pytest.mark.parametrize(("request_", "source", "action", "fields"), READS, ids=[read[0] for read in READS])
def test_each_read_decodes_no_more_rows_than_it_returns(
    crowded: Crowded, request_: str, source: Source, action: str, fields: dict[str, Any]
) -> None:
    reply, jobs, runs = crowded.ask(source, action, **fields)

    shown_jobs, shown_runs = _returned(reply)
    assert jobs <= shown_jobs + PEEK, f"{request_} decoded {jobs} jobs for {shown_jobs} shown"
    # A backfill reads the job's own history (at most run_history runs) to tell what ran: bounded by
    # the job, not the store.
    most_runs = crowded.harness.service.limits.run_history if action == "backfill" else shown_runs + PEEK
    assert runs <= most_runs, f"{request_} decoded {runs} runs for {shown_runs} shown"


def test_the_reads_answer_from_the_crowd(crowded: Crowded) -> None:
    """The bounds above are about real answers: the pages are full, the counts whole."""
    listed, _, _ = crowded.ask(AGENT, "list", limit=50)
    assert len(listed["jobs"]) == 50 and listed["next_after_name"]
    status, _, _ = crowded.ask(AGENT, "status")
    assert sum(status["counts"].values()) == SCHEDULES - 1_000
    assert status["counts"]["paused"] == 1
    history, _, _ = crowded.ask(AGENT, "history", limit=20)
    assert len(history["runs"]) == 20


def test_a_create_with_a_quota_decodes_no_job(crowded: Crowded) -> None:
    job = {"name": "one-more", "target": "reports", "action": "daily", "schedule": HOURLY}

    dry, dry_jobs, _ = crowded.ask(AGENT, "create_job", job={**job, "name": "dry-one"}, dry_run=True)
    reply, jobs, runs = crowded.ask(AGENT, "create_job", job=job)

    assert (jobs, runs, dry_jobs) == (0, 0, 0)
    live = SCHEDULES - 1_000  # the agent's, the one paused among them
    assert dry["quota"] == {"used": live + 1 + 1, "max": AGENT.max_schedules}  # + its backfill waiting
    assert reply["job"]["name"] == "one-more"


# Each change, and the reads of its one job it makes: once to check the request; a claim (run_now) reads
# it again to claim it, and a delete twice more (the row a failed delete would leave as a tombstone, and
# the row that went). A constant: none of them reads another job.
CHANGES: list[tuple[str, dict[str, Any], int]] = [
    ("update", {"name": "agent-job-00010", "changes": {"max_attempts": 2}}, 1),
    ("update", {"name": "agent-job-00011", "changes": {"name": "renamed-00011"}}, 1),
    ("pause", {"name": "agent-job-00012"}, 1),
    ("resume", {"name": "agent-job-00001"}, 1),
    ("run_now", {"name": "agent-job-00013"}, 2),
    ("delete", {"name": "agent-job-00014"}, 3),
]


@pytest.mark.parametrize(
    ("action", "fields", "reads"), CHANGES, ids=["update", "rename", "pause", "resume", "run_now", "delete"]
)
def test_each_change_decodes_the_job_it_changes_and_none_else(
    crowded: Crowded, action: str, fields: dict[str, Any], reads: int
) -> None:
    reply, jobs, _ = crowded.ask(AGENT, action, **fields)
    crowded.harness.node.wait_for_runs(10)  # (a run_now's run, recorded outside the count)

    assert "job" in reply and jobs <= reads, f"{action} decoded {jobs} jobs"


def test_a_metrics_scrape_decodes_the_jobs_of_its_series_once(crowded: Crowded) -> None:
    node = crowded.harness.node
    total = sum(node.store.counts().values())
    for limit in (100, SCHEDULES * 2):
        registry = CollectorRegistry()
        registry.register(NodeGauges(node))
        registry.register(AlertGauges(node.store, lambda: node.last_pass_at, limit))
        before = Decoded.jobs

        text = generate_latest(registry).decode()

        # Per-job series are as large as the jobs they cover, by definition: each decoded once a scrape,
        # and none beyond them.
        assert Decoded.jobs - before == min(limit, total)
        covered = node.store.first_by_id(limit)
        armed = sum(1 for job in covered if job.next_run_at is not None)
        assert text.count("cronwright_job_next_run_timestamp_seconds{") == armed > 0


def test_a_scrape_decodes_only_the_jobs_changed_since_the_last(crowded: Crowded) -> None:
    node = crowded.harness.node
    gauges = AlertGauges(node.store, lambda: node.last_pass_at, SCHEDULES)
    registry = CollectorRegistry()
    registry.register(gauges)
    first = Decoded.jobs
    text = gauges.render()
    assert Decoded.jobs - first == SCHEDULES

    before = Decoded.jobs
    assert gauges.render() == text
    assert Decoded.jobs == before, "a scrape with nothing changed decodes no job"

    every_day = {"cron": "30 7 * * *"}
    crowded.ask(AGENT, "update", name="agent-job-00002", changes={"schedule": every_day})
    try:
        before = Decoded.jobs
        changed = gauges.render()
        assert Decoded.jobs - before == 1, "only the changed job is decoded again"
        assert changed != text
        # The text kept per job is what prometheus_client writes from the same gauges' families.
        assert changed == generate_latest(registry)
    finally:
        crowded.ask(AGENT, "update", name="agent-job-00002", changes={"schedule": HOURLY})


# -- counts and quotas say what decoding said ---------------------------------------------------------


def _decoded_counts(harness: Harness, source: str) -> tuple[dict[str, int], int, int]:
    """What status and the quota computed before semantic 42, by decoding every job of the source."""
    jobs = harness.node.store.jobs(created_by=source)
    counts = {state.value: sum(1 for job in jobs if job.state is state) for state in State}
    return counts, sum(1 for job in jobs if job.state.live), sum(1 for job in jobs if job.backfill)


def test_counts_and_quotas_equal_what_decoding_every_job_computed(tmp_path: Path) -> None:
    agent = Source("agent", targets=("reports.*",), max_schedules=4)
    harness = make_harness(
        SqliteStore(tmp_path / "cronwright.db"), ManualClock(at("2026-03-02T09:00:00+01:00"))
    )

    def ask(action: str, **fields: Any) -> dict[str, Any]:
        return harness.protocol.dispatch({"action": action, **fields}, agent)

    def create(name: str, **spec: Any) -> dict[str, Any]:
        job = {"name": name, "target": "reports", "action": "daily", **(spec or {"schedule": HOURLY})}
        return ask("create_job", job=job)

    assert create("hourly")["ok"] and create("gone")["ok"]
    made = create("once", run_at="2026-03-02T09:30:00+01:00")
    assert made["ok"], made
    harness.clock.set(at("2026-03-02T09:30:00+01:00"))
    harness.tick()  # the one-shot runs, and is done
    harness.clock.set(at("2026-03-02T13:30:00+01:00"))
    harness.node.run_pass()  # the node was down: hourly missed 10, 11, 12 and 13 o'clock
    missed = {"from": "2026-03-02T09:30:00+01:00", "to": "2026-03-02T13:30:00+01:00"}
    assert ask("backfill", name="hourly", **missed)["ok"]
    assert ask("delete", name="gone")["ok"]
    assert create("paused")["ok"] and ask("pause", name="paused")["ok"]

    counts, live, waiting = _decoded_counts(harness, "agent")
    assert (live, waiting) == (2, 1)  # hourly and paused; the done one-shot and the deleted job count not
    assert counts["done"] == 1
    assert ask("status")["counts"] == counts
    assert harness.service.quota_used(agent, adds=False) == (live + waiting, 4)
    # Two live and one backfill waiting: one more fits, the next is refused, naming the backfill.
    assert create("fourth")["ok"]
    refused = create("fifth")
    assert refused["error"] == "quota_exceeded" and "1 backfills still waiting" in refused["message"]


# -- a source's newest audit page reads a page, whatever the log holds ---------------------------------


def _audit_steps(path: Path, reader: str) -> int:
    """The SQLite virtual machine's steps to read `reader`'s newest page of 20 entries with the store's
    own statement: what the read costs in rows visited, counted without a clock."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    with closing(__import__("sqlite3").connect(path)) as connection:
        connection.set_progress_handler(count, 1)
        query = SqliteStore._queries["audit_of_reader"].format(rest="")
        rows = connection.execute(query, (reader, 21, reader, 21, 21)).fetchall()
        connection.set_progress_handler(None, 1)
    assert len(rows) == 21
    return steps


def _more_audit(path: Path, count: int) -> None:
    """`count` more copies of the log's first entry, each under a new key: the agent's and, one in ten,
    another source's, as a crowd of creates would write them."""
    with closing(__import__("sqlite3").connect(path)) as connection:
        connection.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO audit (key, at, source, action, job_id, name, owner, data) "
            "SELECT a.key || '-' || (SELECT count(*) FROM audit) || '-' || i, a.at, "
            "CASE WHEN i % 10 = 0 THEN 'other' ELSE a.source END, a.action, a.job_id, a.name, "
            "CASE WHEN i % 10 = 0 THEN 'other' ELSE a.owner END, a.data "
            "FROM n, (SELECT * FROM audit ORDER BY seq LIMIT 1) AS a",
            (count,),
        )
        connection.commit()


def test_a_sources_newest_audit_page_reads_the_same_rows_at_any_size_of_the_log(tmp_path: Path) -> None:
    path = tmp_path / "cronwright.db"
    harness = make_harness(SqliteStore(path), ManualClock(at("2026-03-02T09:00:00+01:00")))
    job = {"name": "first", "target": "reports", "action": "daily", "schedule": HOURLY}
    assert harness.protocol.dispatch({"action": "create_job", "job": job}, AGENT)["ok"]
    _more_audit(path, 1_000)
    small = _audit_steps(path, AGENT.name)
    _more_audit(path, 50_000)
    large = _audit_steps(path, AGENT.name)

    # Each side of the statement walks its index backwards for a page: the log's size does not count
    # (1,075 steps at both sizes here; `source = ? OR owner = ?` took 25,634 and then 1,285,634).
    assert large <= small * 1.1, (small, large)
    reply = harness.protocol.dispatch({"action": "audit", "limit": 20}, AGENT)
    assert reply["ok"] and len(reply["entries"]) == 20 and "next_before" in reply
    harness.runner.close()
    harness.node.lease.close()


# -- PostgreSQL's counts: appended rows, folded, exact at every instant --------------------------------


def _agrees(store: Backend, *sources: str) -> None:
    """The store's counts (each source's, its live ones, and all) say what decoding every job says."""
    for source in sources:
        jobs = store.jobs(created_by=source)
        counts = {state.value: sum(1 for job in jobs if job.state is state) for state in State}
        assert store.counts(created_by=source) == counts, source
        assert store.count_live(source) == sum(1 for job in jobs if job.state.live), source
    every = store.jobs()
    assert store.counts() == {state.value: sum(1 for job in every if job.state is state) for state in State}


def _count_rows(url: str, schema: str, source: str) -> int:
    with pg.connect(url) as connection:
        query = sql.SQL("SELECT count(*) FROM {}.job_count_deltas WHERE created_by = %s")
        row = connection.execute(query.format(sql.Identifier(schema)), (source,)).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_postgres_counts_stay_exact_beside_open_writers_folds_and_writes_that_bypass_the_store() -> None:
    with pg.scratch_schema() as (url, schema):
        store = PostgresStore(url, schema=schema)
        harness = make_harness(store, ManualClock(at("2026-03-02T09:00:00+01:00")))
        try:
            for source, name in ((AGENT, "a"), (OTHER, "o")):
                job = {"name": name, "target": "reports", "action": "daily", "schedule": HOURLY}
                assert harness.protocol.dispatch({"action": "create_job", "job": job}, source)["ok"]
            # Copies written by SQL, behind the store's back (as a node of the previous release, or a
            # hand edit, would): the triggers count them all the same, one row each.
            _copy_postgres(url, schema, "a", FOLD_AFTER + 44)
            assert _count_rows(url, schema, "agent") == FOLD_AFTER + 45
            _agrees(store, "agent", "other")
            # That read summed more than FOLD_AFTER rows: it folded the agent's into one per state.
            assert _count_rows(url, schema, "agent") == 1

            qualified = sql.Identifier(schema)
            with pg.connect(url) as first, pg.connect(url) as second:
                # Two writers, each in a transaction left open: one copies the other source's job, the
                # other deletes (marks, as the store does) some of the agent's and removes one outright.
                first.execute("BEGIN")
                first.execute(
                    sql.SQL(
                        "INSERT INTO {}.jobs"
                        " (name, state, deleted, target, wake_at, version, data, created_by)"
                        " SELECT name || '-' || i, state, false, target, wake_at, 1,"
                        " jsonb_set(data::jsonb, '{{name}}', to_jsonb(name || '-' || i))::json, created_by"
                        " FROM generate_series(1, 7) AS i, {}.jobs WHERE name = 'o' AND NOT deleted"
                    ).format(qualified, qualified)
                )
                second.execute("BEGIN")
                second.execute(
                    sql.SQL(
                        "UPDATE {}.jobs SET deleted = true WHERE name BETWEEN 'a-00020' AND 'a-00029'"
                    ).format(qualified)
                )
                second.execute(sql.SQL("DELETE FROM {}.jobs WHERE name = 'a-00030'").format(qualified))
                # A fold meanwhile neither waits for them nor sees their rows; a change through the store
                # (a pause: a state change) lands beside them.
                store.fold_counts()
                assert harness.protocol.dispatch({"action": "pause", "name": "a-00010"}, AGENT)["ok"]
                _agrees(store, "agent", "other")
                first.execute("COMMIT")
                _agrees(store, "agent", "other")
                assert store.fold_counts() > 0
                _agrees(store, "agent", "other")
                second.execute("COMMIT")
                _agrees(store, "agent", "other")
            assert store.fold_counts() > 0
            _agrees(store, "agent", "other")
            counts = store.counts(created_by="agent")
            assert (counts["active"], counts["paused"]) == (FOLD_AFTER + 45 - 11 - 1, 1)
            assert store.counts(created_by="other")["active"] == 8
            assert _count_rows(url, schema, "agent") == 2  # folded: one row per state
            # A scheduling pass folds too, every source's rows, at most once per FOLD_COUNTS_EVERY.
            _copy_postgres(url, schema, "o", 3)
            assert _count_rows(url, schema, "other") == 4
            harness.clock.advance(FOLD_COUNTS_EVERY)
            harness.node.run_pass()
            assert _count_rows(url, schema, "other") == 1
            _agrees(store, "agent", "other")
            # So does a read of all the counts (the operator's `status`) that met too many rows unfolded.
            _copy_postgres(url, schema, "a-00001", FOLD_AFTER + 1)
            assert sum(store.counts().values()) == len(store.jobs())
            assert _count_rows(url, schema, "agent") == 2
            _agrees(store, "agent", "other")
        finally:
            harness.runner.close()
            harness.node.lease.close()
            store.close()
