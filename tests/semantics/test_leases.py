"""DESIGN semantic 30: leases are timed on a monotonic clock and beaten on their own timer.

The clock is injected with two sides (conftest's ManualClock): `set` and `advance` let time pass, `step`
moves the wall clock alone. Nodes share one real SQLite file. No test sleeps: a pass held up is an Event,
and the lease keeper's thread is nudged where the test needs it to look at its timer.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from conftest import Harness, ScriptedRunner, at, make_harness
from cronwright.clock import ManualClock
from cronwright.node import drive
from cronwright.store.sqlite import SqliteStore

HOUR = timedelta(hours=1)
BEAT = timedelta(seconds=10)  # NodeSettings' default lease_beat; lease_ttl is 45 s


def beat_of(harness: Harness, node: str) -> datetime:
    (beat,) = [beat for beat in harness.raw_store.beats() if beat.node == node]
    return beat.beat_at


def in_flight(harness: Harness, name: str = "slow") -> threading.Event:
    """Starts a run of `name` that lasts until the returned gate is set."""
    gate = threading.Event()
    harness.runner.hold[name] = gate
    harness.create(name, {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    assert harness.runner.started.wait(10)
    return gate


def test_a_wall_clock_stepped_back_does_not_stop_a_busy_node_beating(harness: Harness) -> None:
    gate = in_flight(harness)
    before = beat_of(harness, harness.node.id)

    harness.clock.step(-HOUR)  # the wall clock goes back an hour; no time passes
    harness.node.run_pass()
    assert beat_of(harness, harness.node.id) == before, "no beat is due yet: no time has passed"

    harness.clock.advance(BEAT)  # a beat's worth of real time later, on the stepped-back wall clock
    harness.node.run_pass()
    # Timed on the wall clock, the last beat would look an hour in the future and none would be due
    # for an hour: long enough for every peer to take the run for dead.
    assert beat_of(harness, harness.node.id) == at("2026-03-02T09:00:10+01:00")
    gate.set()
    harness.node.wait_for_runs()


class HeldDue:
    """The store, whose `due` waits on a gate: a scheduling pass that takes as long as the test wants."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self.holding = threading.Event()
        self.entered = threading.Event()
        self.released = threading.Event()

    def due(self, now: datetime, limit: int) -> Any:
        if self.holding.is_set():
            self.entered.set()
            self.released.wait(30)
        return self.inner.due(now, limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_long_pass_does_not_starve_the_lease_of_the_runs_in_flight(
    clock: ManualClock, tmp_path: Path
) -> None:
    store = HeldDue(SqliteStore(tmp_path / "cronwright.db"))
    harness = make_harness(store, clock)
    gate = in_flight(harness)
    store.holding.set()
    passing = threading.Thread(target=harness.node.run_pass)
    passing.start()
    assert store.entered.wait(10), "the pass is held up inside the store"

    clock.advance(BEAT * 2)  # the pass has taken two beats so far
    harness.node.lease.nudge()  # the keeper's own timer, looked at now rather than in real seconds
    assert harness.node.lease.wait_for_beat(10), "the keeper beat while the pass held the node"
    assert beat_of(harness, harness.node.id) == at("2026-03-02T10:00:20+01:00")

    store.released.set()
    passing.join(10)
    gate.set()
    harness.node.wait_for_runs()


def test_an_idle_node_s_keeper_does_not_beat(harness: Harness) -> None:
    """Semantic 25 stays: with nothing in flight the keeper sleeps, and only passes beat."""
    gate = in_flight(harness)
    gate.set()
    harness.node.wait_for_runs()
    before = beat_of(harness, harness.node.id)
    harness.clock.advance(BEAT * 3)
    harness.node.lease.nudge()
    assert not harness.node.lease.wait_for_beat(0.2)
    assert beat_of(harness, harness.node.id) == before


def test_a_wall_clock_stepped_forward_never_takes_a_live_peer_for_dead(
    clock: ManualClock, tmp_path: Path
) -> None:
    path = tmp_path / "cronwright.db"
    runner = ScriptedRunner()
    busy = make_harness(SqliteStore(path), clock, runner)
    gate = in_flight(busy)
    judge = make_harness(SqliteStore(path), clock)  # a peer on the same host, passing every minute
    judge.node.run_pass()

    clock.step(HOUR)  # every beat in the store now looks an hour old
    report = judge.node.run_pass()
    assert report.recovered == [], "a live run is never taken for dead on a wall clock's jump"

    clock.advance(BEAT)
    busy.node.run_pass()  # the busy node beats on the new time, as its keeper would
    clock.advance(timedelta(seconds=40))
    assert judge.node.run_pass().recovered == []
    assert busy.job("slow")["state"] == "running"
    gate.set()
    busy.node.wait_for_runs()
    assert [call.fire_id for call in runner.calls] == ["1-1"]
    assert busy.job("slow")["last_run"]["outcome"] == "ok"


def test_after_a_forward_step_a_dead_peer_is_still_found_within_a_lease(
    clock: ManualClock, tmp_path: Path
) -> None:
    path = tmp_path / "cronwright.db"
    dead = make_harness(SqliteStore(path), clock)
    in_flight(dead)
    judge = dead.restart()  # the first node dies (its keeper stops with it)
    judge.node.run_pass()

    clock.step(HOUR)
    assert judge.node.run_pass().recovered == [], "held off for a lease after the step"
    clock.advance(timedelta(seconds=46))  # a lease passes, and the dead node has not beaten
    assert judge.node.run_pass().recovered == ["1-1"]
    assert judge.job("slow")["last_run"]["outcome"] == "interrupted"


def test_a_beat_due_before_a_pass_that_comes_within_a_beat_is_taken_before_the_node_sleeps(
    harness: Harness,
) -> None:
    """The pass then claims without first waiting for the beat's durable write (a start-lag tail)."""
    harness.create("report", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T09:59:50+01:00"))
    harness.node.run_pass()  # an idle node's beat rides on its pass
    assert beat_of(harness, harness.node.id) == at("2026-03-02T09:59:50+01:00")

    harness.clock.set(at("2026-03-02T09:59:59.5+01:00"))  # the next beat falls due at 10:00:00
    assert drive.until_next_pass(harness.node) == 0.5
    assert beat_of(harness, harness.node.id) == at("2026-03-02T09:59:59.5+01:00"), "taken ahead"

    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    assert len(harness.node.run_pass().fired) == 1
    assert beat_of(harness, harness.node.id) == at("2026-03-02T09:59:59.5+01:00"), (
        "the firing pass wrote no beat"
    )
    harness.node.wait_for_runs()


def test_a_node_that_sleeps_longer_than_a_beat_takes_no_beat_before_it_sleeps(harness: Harness) -> None:
    """Semantic 25 stays: an idle node beats as its passes start, no more often than they come."""
    harness.create("report", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T09:30:00+01:00"))  # its beat is overdue; the next pass is far
    assert drive.until_next_pass(harness.node) == 60.0  # the safety interval
    assert beat_of(harness, harness.node.id) == at("2026-03-02T09:00:00+01:00")


class SlowNextWake:
    """The store, whose `next_wake` read takes a millisecond of the test's clock."""

    def __init__(self, inner: SqliteStore, clock: ManualClock) -> None:
        self.inner = inner
        self.clock = clock

    def next_wake(self) -> Any:
        found = self.inner.next_wake()
        self.clock.advance(timedelta(milliseconds=1))
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_node_sleeps_until_the_due_instant_not_that_plus_the_time_its_reads_took(
    clock: ManualClock, tmp_path: Path
) -> None:
    store = SlowNextWake(SqliteStore(tmp_path / "cronwright.db"), clock)
    harness = make_harness(store, clock)
    harness.create("report", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T09:59:59+01:00"))
    sleep = drive.seconds_until_next_pass(harness.node)
    assert clock.now() + timedelta(seconds=sleep) == at("2026-03-02T10:00:00+01:00")


def test_a_busy_node_takes_no_beat_before_it_waits_for_a_run_to_end(
    clock: ManualClock, tmp_path: Path
) -> None:
    """Its keeper beats on its own timer while runs are in flight. Taken ahead, a beat (a durable write
    and a reconcile read) came before the pass that follows every run's end: the wait is capped by the
    beat itself, so "the next pass comes within a beat" always held, by the time the reads took."""
    store = SlowNextWake(SqliteStore(tmp_path / "cronwright.db"), clock)
    harness = make_harness(store, clock)
    gate = in_flight(harness)
    beaten = beat_of(harness, harness.node.id)
    clock.advance(timedelta(seconds=1))  # a second into the run: the next beat falls due in the wait

    sleep = drive.until_next_pass(harness.node)
    assert 0 < sleep < harness.node.settings.lease_beat.total_seconds()
    assert beat_of(harness, harness.node.id) == beaten, "no beat taken ahead"
    gate.set()
    harness.node.wait_for_runs()
