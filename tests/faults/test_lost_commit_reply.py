"""One lost COMMIT reply never stops a node firing (DESIGN semantic 29), on real PostgreSQL and SQLite.

PostgreSQL: a TCP proxy (pg_proxy.py) between the node and the server loses the server's answer to
COMMIT once the commit has landed, so the node cannot know that it did; in the harder case it also
cuts every other connection and refuses new ones for that moment, so reading back cannot tell either.
SQLite has no wire: its store gets a connection whose COMMIT lands, then raises (the one cue-driven
fault), and, in the harder case, whose reads fail until the fault ends.

Both run one scenario on a manual clock with an in-process node (its passes driven by the test, as
`serve` would run them): jobs every minute and a one-shot, faults at their claims and at the records
of their runs for three minutes; then the faults stop. Every job must fire again within a minute,
nothing may run twice, every attempt started must be recorded once, and `status` must say
`persisted` again.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest

import pg
from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.model import State
from cronwright.errors import StoreError
from cronwright.store.sqlite import SqliteStore
from faults.pg_proxy import CommitReplyDropper

START = at("2026-03-02T09:00:30+01:00")
EVERY_MINUTE = 4


class Fault(Protocol):
    cuts: int

    def lose_commit_replies(self, count: int, refuse_after_cut: bool = False) -> None: ...

    def restore(self) -> None: ...


def scenario(harness: Harness, fault: Fault, caplog: pytest.LogCaptureFixture) -> None:
    clock, node, runner = harness.clock, harness.node, harness.runner
    for number in range(EVERY_MINUTE):
        harness.create(f"minutely-{number}", {"cron": "* * * * *"})
    harness.create("shot", run_at="2026-03-02T09:02:00+01:00")

    def settle_runs() -> None:
        """Waits for every started attempt to return; a pass records it."""
        for future in node.runs.futures():
            future.result(10)

    def attempt_pass() -> None:
        # A pass may fail while the store is out of reach: `serve` tries again, as the next step here.
        with contextlib.suppress(StoreError):
            node.run_pass()

    # Three minutes of faults: the claims of each minute's firings lose their COMMIT reply, and so does
    # the record of their runs five seconds later; every other fault also takes the server out of reach.
    faults = 0
    for minute in (1, 2, 3):
        due = START + timedelta(seconds=30 + 60 * (minute - 1))
        clock.set(due - timedelta(seconds=1))
        attempt_pass()  # a clean pass: it beats, so the faulted passes below do not
        for second, what in ((0, "claims"), (5, "records")):  # the server out of reach at odd faults
            clock.set(due + timedelta(seconds=second))
            fault.lose_commit_replies(1, refuse_after_cut=(minute + second) % 2 == 0)
            attempt_pass()
            fault.restore()
            faults += 1
            assert fault.cuts == faults, f"the {what} of minute {minute} wrote nothing: nothing ran"
            settle_runs()
    stopped = clock.now()

    # The faults have stopped: a pass every five seconds for a minute.
    fired_after: set[int] = set()
    for _ in range(12):
        clock.set(clock.now() + timedelta(seconds=5))
        report = node.run_pass()
        settle_runs()
        fired_after |= {int(fire_id.split("-")[0]) for fire_id in report.fired}
    node.wait_for_runs(10)
    node.record_finished()

    minutely = {harness.job(f"minutely-{number}")["id"] for number in range(EVERY_MINUTE)}
    assert minutely <= fired_after, "a job never fired again within a minute of the faults stopping"
    assert clock.now() - stopped <= timedelta(seconds=60)
    started = Counter((call.job_id, call.fire_id, call.attempt) for call in runner.calls)
    assert started and max(started.values()) == 1, "an attempt ran twice"
    recorded = Counter((run.job_id, run.fire_id, run.attempt) for run in harness.raw_store.runs(None, 10_000))
    assert recorded == started, "each attempt started is recorded once, and only those"
    shot = harness.job("shot")
    assert shot["state"] == State.DONE.value
    assert [job for job in harness.raw_store.jobs(state=State.RUNNING)] == []
    assert harness.call("status")["node"]["persistence"] == "persisted"
    # Both ways out of doubt were taken: a write read back as landed, and a claim given back.
    assert "had landed, as reading it back shows" in caplog.text
    assert "never started it: it is given back to the schedule" in caplog.text


# -- PostgreSQL ------------------------------------------------------------------------------------


@pytest.fixture
def proxied(caplog: pytest.LogCaptureFixture) -> Iterator[tuple[Harness, CommitReplyDropper]]:
    from cronwright.store.postgres import LeaseClock, PostgresStore

    caplog.set_level(logging.WARNING)
    with pg.scratch_url() as url:
        proxy = CommitReplyDropper(pg.server_url())
        # Leases on the caller's (manual) clock; a short pool wait, so an unreachable store fails fast.
        store = PostgresStore(proxy.url(url), lease_clock=LeaseClock.CALLER, timeout=1.0)
        harness = make_harness(store, ManualClock(START))
        try:
            yield harness, proxy
        finally:
            harness.runner.close()
            harness.node.stop()
            store.close()
            proxy.close()


def test_a_lost_commit_reply_on_postgres_fires_every_job_again_and_nothing_twice(
    proxied: tuple[Harness, CommitReplyDropper], caplog: pytest.LogCaptureFixture
) -> None:
    harness, proxy = proxied
    scenario(harness, proxy, caplog)


# -- SQLite ----------------------------------------------------------------------------------------


class CommitFault:
    """The SQLite fault's cue: how many more commits land then raise, and whether reads fail meanwhile."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.left = 0
        self.refuse_after_cut = False
        self.refusing = False
        self.cuts = 0

    def lose_commit_replies(self, count: int, refuse_after_cut: bool = False) -> None:
        with self._lock:
            self.left, self.refuse_after_cut = count, refuse_after_cut

    def restore(self) -> None:
        with self._lock:
            self.left, self.refuse_after_cut, self.refusing = 0, False, False

    def cut(self) -> bool:
        with self._lock:
            if self.left <= 0:
                return False
            self.left -= 1
            self.cuts += 1
            self.refusing = self.refuse_after_cut
            return True


def faulty_sqlite(path: Path, fault: CommitFault) -> SqliteStore:
    class CommitThenRaise(sqlite3.Connection):
        writing = False  # in a write transaction (a read's COMMIT has nothing to lose)

        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            if sql.startswith("BEGIN"):
                self.writing = sql == "BEGIN IMMEDIATE"
            if sql == "COMMIT" and self.writing and fault.cut():
                super().execute(sql, *args)  # the commit lands...
                raise sqlite3.OperationalError("disk I/O error")  # ...and the caller never hears so
            if fault.refusing and sql.startswith("BEGIN"):
                raise sqlite3.OperationalError("unable to open database file")
            return super().execute(sql, *args)

    class FaultyStore(SqliteStore):
        _connection_class = CommitThenRaise

    return FaultyStore(path)


def test_a_commit_that_lands_then_raises_on_sqlite_fires_every_job_again_and_nothing_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    fault = CommitFault()
    harness = make_harness(faulty_sqlite(tmp_path / "cronwright.db", fault), ManualClock(START))
    try:
        scenario(harness, fault, caplog)
    finally:
        harness.runner.close()
        harness.node.stop()
