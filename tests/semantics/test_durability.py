"""DESIGN semantics 18 and 19: persistence that says what it did, and recovery after a crash."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.events import EventKind
from cronwright.node import drive
from cronwright.store.memory import MemoryStore
from cronwright.store.sqlite import SqliteStore


@contextmanager
def failing_writes(path: Path) -> Iterator[None]:
    """Makes every write to the jobs table fail inside SQLite itself, as a full disk would."""
    with sqlite3.connect(path) as connection:
        connection.executescript(
            """
            CREATE TRIGGER fail_update BEFORE UPDATE ON jobs BEGIN SELECT RAISE(ABORT, 'disk is full'); END;
            CREATE TRIGGER fail_delete BEFORE DELETE ON jobs BEGIN SELECT RAISE(ABORT, 'disk is full'); END;
            """
        )
    try:
        yield
    finally:
        with sqlite3.connect(path) as connection:
            connection.executescript("DROP TRIGGER fail_update; DROP TRIGGER fail_delete;")
        connection.close()


def stored_state(path: Path, name: str) -> str | None:
    store = SqliteStore(path)
    try:
        job = store.find(name)
        return job.state.value if job else None
    finally:
        store.close()


def test_a_mutation_is_persisted_before_the_reply_says_so(harness: Harness, tmp_path: Path) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    assert harness.ok("pause", name="daily")["persistence"] == "persisted"
    assert stored_state(tmp_path / "cronwright.db", "daily") == "paused"


def test_a_failed_save_keeps_the_job_live_in_memory_and_says_degraded(
    harness: Harness, tmp_path: Path
) -> None:
    db = tmp_path / "cronwright.db"
    harness.create("daily", {"cron": "0 10 * * *"})
    with failing_writes(db):
        reply = harness.ok("pause", name="daily")
        assert reply["persistence"] == "degraded"
        assert harness.job("daily")["state"] == "paused"  # live in memory
        assert stored_state(db, "daily") == "active"  # not on disk
        assert harness.ok("resume", name="daily")["persistence"] == "degraded"
        harness.tick()
        assert harness.events.kinds().count(EventKind.JOB_PERSISTENCE_FAILED) == 1
        assert "job_persistence_recovered" not in harness.events.kinds()
    harness.tick()  # the next pass saves what waited in memory
    assert harness.events.kinds().count(EventKind.JOB_PERSISTENCE_RECOVERED) == 1
    assert stored_state(db, "daily") == "active"
    assert harness.ok("pause", name="daily")["persistence"] == "persisted"


def test_a_failed_delete_leaves_a_tombstone_and_a_retry_by_id_finishes_it(
    harness: Harness, tmp_path: Path
) -> None:
    db = tmp_path / "cronwright.db"
    job = harness.create("daily", {"cron": "0 10 * * *"})
    with failing_writes(db):
        reply = harness.ok("delete", name="daily")
        assert reply["persistence"] == "degraded"
        assert harness.ok("list")["jobs"] == []
        harness.clock.set(at("2026-03-02T10:00:00+01:00"))
        assert harness.tick()["fired"] == 0  # a tombstone never runs
    again = harness.ok("delete", job_id=job["id"])
    assert again["persistence"] == "persisted"
    assert stored_state(db, "daily") is None


def test_the_memory_store_says_memory_only(clock: ManualClock) -> None:
    harness = make_harness(MemoryStore(), clock)
    reply = harness.ok("create_job", job={"name": "a", "target": "reports", "action": "daily",
                                          "schedule": {"every": "5m"}})  # fmt: skip
    assert reply["persistence"] == "memory_only"


def test_a_run_in_flight_when_its_process_dies_is_interrupted_and_never_run_again(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()  # node A starts the run, then "dies": nobody drives it again
    assert harness.runner.started.wait(10)

    harness.clock.set(at("2026-03-02T10:00:30+01:00"))
    restarted = harness.restart()
    # Node A beat at 10:00:00; 30 s later its lease still holds, so its run is not taken for dead.
    assert restarted.job("slow")["state"] == "running"

    harness.clock.set(at("2026-03-02T10:00:50+01:00"))
    report = restarted.node.run_pass()
    assert report.recovered == ["1-1"]
    assert report.fired == []
    shown = restarted.job("slow")
    assert shown["state"] == "active"
    assert shown["last_run"]["outcome"] == "interrupted"
    assert shown["next_run_at"] == "2026-03-03T10:00:00+01:00"
    runs = restarted.ok("history", name="slow")["runs"]
    assert [(r["fire_id"], r["outcome"]) for r in runs] == [("1-1", "interrupted")]
    assert restarted.runner.calls == []
    gate.set()


def test_a_live_node_keeps_its_runs_covered(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    other = harness.restart()
    for seconds in range(10, 300, 10):  # node A keeps beating through a five-minute run
        harness.clock.set(at("2026-03-02T10:00:00+01:00") + timedelta(seconds=seconds))
        harness.node.run_pass()
        assert other.node.run_pass().recovered == []
    gate.set()
    harness.node.wait_for_runs()
    assert harness.job("slow")["last_run"]["outcome"] == "ok"


def test_recovery_re_arms_by_the_misfire_policy_over_occurrences_that_never_started(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["hourly"] = gate
    harness.create("hourly", {"cron": "0 * * * *"}, misfire="coalesce")
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    assert harness.runner.started.wait(10)
    # The process dies; the node comes back at 13:20.
    harness.clock.set(at("2026-03-02T13:20:00+01:00"))
    restarted = harness.restart()
    restarted.node.wait_for_runs()
    assert [c.scheduled_for for c in restarted.runner.calls] == [at("2026-03-02T13:00:00+01:00")]
    assert [c.fire_id for c in restarted.runner.calls] == ["1-2"]
    gate.set()


def test_a_node_whose_run_was_taken_for_dead_records_nothing_twice_and_keeps_claiming(
    harness: Harness,
) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.create("later", {"cron": "5 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    assert harness.runner.started.wait(10)
    # Node A is cut off from the store past its lease; another process records its run interrupted.
    harness.clock.set(at("2026-03-02T10:01:00+01:00"))
    other = harness.restart()  # its boot pass recovers the run
    assert other.job("slow")["last_run"]["outcome"] == "interrupted"
    # A's run then finishes: its late result must not be a second record of the attempt.
    gate.set()
    harness.clock.set(at("2026-03-02T10:05:00+01:00"))
    report = harness.node.run_pass()
    harness.node.wait_for_runs()
    assert report.fired == ["2-1"]  # A still claims
    assert harness.node.store.persistence.value == "persisted"
    runs = harness.ok("history", name="slow")["runs"]
    assert [(r["fire_id"], r["attempt"], r["outcome"]) for r in runs] == [("1-1", 1, "interrupted")]


def test_an_idle_node_looks_again_when_a_peers_lease_could_run_out(harness: Harness) -> None:
    """Semantic 19, "within a minute": a serving node with nothing due for hours still finds a dead peer's
    run when the peer's lease runs out (45 s), not at its next safety wake-up (60 s later)."""
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()  # the peer claims and beats at 10:00:00, then dies (it never beats again)
    assert harness.runner.started.wait(10)
    harness.clock.set(at("2026-03-02T10:00:05+01:00"))
    watcher = harness.restart()

    assert drive.seconds_until_next_pass(watcher.node) == 40.0
    harness.clock.set(at("2026-03-02T10:00:45+01:00"))
    assert watcher.node.run_pass().recovered == ["1-1"]
    assert drive.seconds_until_next_pass(watcher.node) == 60.0  # no peer holds a run: the safety interval
    gate.set()
