"""Semantic 34, overlap allow, through the service and a node on SQLite: occurrences that come due while
others of the job run start beside them, within max_concurrency; each ends on its own; the row counts them."""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field
from pathlib import Path

from conftest import Harness, ScriptedRunner, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.events import EventKind
from cronwright.core.model import InFlight, Job, Occurrence, Result, State
from cronwright.store.base import WriteSet
from cronwright.store.sqlite import SqliteStore
from lost_replies import LostReplies


@dataclass
class GatedRunner(ScriptedRunner):
    """Holds each occurrence until its own fire_id is let go, so a test ends them one at a time."""

    gates: dict[str, threading.Event] = field(default_factory=dict)
    arrived: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def gate(self, fire_id: str) -> threading.Event:
        with self.lock:
            return self.gates.setdefault(fire_id, threading.Event())

    def run(self, job: Job, occurrence: Occurrence) -> Result:
        gate = self.gate(occurrence.fire_id)
        self.arrived.release()
        gate.wait(30)
        return super().run(job, occurrence)

    def close(self) -> None:
        for gate in list(self.gates.values()):
            gate.set()
        super().close()


def _harness(tmp_path: Path, clock: ManualClock, max_concurrency: int = 16) -> tuple[Harness, GatedRunner]:
    runner = GatedRunner()
    store = SqliteStore(tmp_path / "cronwright.db")
    made = make_harness(store, clock, runner, max_concurrency=max_concurrency)
    return made, runner


def _arrive(runner: GatedRunner, count: int) -> None:
    for _ in range(count):
        assert runner.arrived.acquire(timeout=10), "a claimed occurrence never started"


def test_two_occurrences_run_side_by_side_and_each_is_recorded(tmp_path: Path, clock: ManualClock) -> None:
    harness, runner = _harness(tmp_path, clock)
    try:
        assert harness.create("long", {"every": "1m"}, overlap="allow")["overlap"] == "allow"
        harness.clock.set(at("2026-03-02T09:01:00+01:00"))
        assert harness.node.run_pass().fired == ["1-1"]
        harness.clock.set(at("2026-03-02T09:02:00+01:00"))
        assert harness.node.run_pass().fired == ["1-2"]  # beside 1-1, not skipped
        _arrive(runner, 2)
        shown = harness.job("long")
        assert (shown["state"], shown["in_flight"], shown["overlapped"]) == ("running", 2, 1)
        assert shown["skipped"]["overlap"] == 0
        assert harness.node.in_flight() == 2

        runner.gate("1-2").set()  # the later one ends first
        _wait_recorded(harness, 1)
        shown = harness.job("long")
        assert (shown["state"], shown["in_flight"], shown["last_run"]["fire_id"]) == ("running", 1, "1-2")
        runner.gate("1-1").set()
        harness.node.wait_for_runs()
        shown = harness.job("long")
        assert (shown["state"], shown["in_flight"], shown["overlapped"]) == ("active", 0, 1)
        runs = harness.ok("history", name="long")["runs"]
        assert sorted(run["fire_id"] for run in runs) == ["1-1", "1-2"]
        assert harness.events.kinds().count(EventKind.JOB_OVERLAPPED) == 1
    finally:
        runner.close()


def _wait_recorded(harness: Harness, count: int) -> None:
    """Waits for a run to finish (its thread reports it) and records it, until `count` are recorded."""
    for _ in range(count + 5):
        if len(harness.ok("history", name="long")["runs"]) >= count:
            return
        wait(harness.node.runs.futures(), timeout=10, return_when=FIRST_COMPLETED)
        harness.node.record_finished()
    raise AssertionError(f"fewer than {count} runs were recorded")


def test_two_outcomes_of_one_job_recorded_in_one_pass_settle_both(tmp_path: Path, clock: ManualClock) -> None:
    harness, runner = _harness(tmp_path, clock)
    try:
        harness.create("long", {"every": "1m"}, overlap="allow")
        for minute in ("01", "02"):
            harness.clock.set(at(f"2026-03-02T09:{minute}:00+01:00"))
            harness.node.run_pass()
        _arrive(runner, 2)
        runner.gate("1-1").set()
        runner.gate("1-2").set()
        for future in harness.node.runs.futures():
            future.result(10)
        harness.clock.set(at("2026-03-02T09:02:30+01:00"))
        harness.node.run_pass()  # one pass records both outcomes, in one write of the job
        shown = harness.job("long")
        assert (shown["state"], shown["in_flight"]) == ("active", 0)
        assert len(harness.ok("history", name="long")["runs"]) == 2
    finally:
        runner.close()


def test_a_full_node_keeps_the_due_occurrence_waiting_for_a_slot(tmp_path: Path, clock: ManualClock) -> None:
    harness, runner = _harness(tmp_path, clock, max_concurrency=2)
    try:
        harness.create("long", {"every": "1m"}, overlap="allow")
        for minute in ("01", "02"):
            harness.clock.set(at(f"2026-03-02T09:{minute}:00+01:00"))
            harness.node.run_pass()
        _arrive(runner, 2)
        harness.clock.set(at("2026-03-02T09:03:00+01:00"))
        assert harness.node.run_pass().fired == []  # both slots are taken: 09:03 waits, not skipped
        shown = harness.job("long")
        assert (shown["next_run_at"], shown["skipped"]["overlap"]) == ("2026-03-02T09:03:00+01:00", 0)
        runner.gate("1-1").set()
        _wait_recorded(harness, 1)
        harness.clock.set(at("2026-03-02T09:03:10+01:00"))
        assert harness.node.run_pass().fired == ["1-3"]  # within its grace, in the freed slot
    finally:
        runner.close()


def test_run_now_on_a_running_allow_job_is_refused_job_running(tmp_path: Path, clock: ManualClock) -> None:
    harness, runner = _harness(tmp_path, clock)
    try:
        harness.create("long", {"every": "1m"}, overlap="allow")
        harness.clock.set(at("2026-03-02T09:01:00+01:00"))
        harness.node.run_pass()
        reply = harness.call("run_now", name="long")
        assert (reply["ok"], reply["error"]) == (False, "job_running")
    finally:
        runner.close()


def test_a_restarted_node_interrupts_both_flights_of_the_dead_one(tmp_path: Path, clock: ManualClock) -> None:
    harness, runner = _harness(tmp_path, clock)
    try:
        harness.create("long", {"every": "1m"}, overlap="allow")
        for minute in ("01", "02"):
            harness.clock.set(at(f"2026-03-02T09:{minute}:00+01:00"))
            harness.node.run_pass()
        _arrive(runner, 2)
        harness.clock.set(at("2026-03-02T09:02:30+01:00"))
        successor = harness.restart()  # the first node is abandoned, as if killed
        harness.clock.set(at("2026-03-02T09:05:00+01:00"))  # its lease has run out
        report = successor.node.run_pass()
        assert sorted(report.recovered) == ["1-1", "1-2"]
        runs = successor.ok("history", name="long")["runs"]
        assert sorted((run["fire_id"], run["outcome"]) for run in runs) == [
            ("1-1", "interrupted"),
            ("1-2", "interrupted"),
        ]
        assert successor.job("long")["in_flight"] in (0, 1)  # 09:05 may have started on the successor
        successor.runner.close()
    finally:
        runner.close()


def test_a_backfill_never_queues_an_occurrence_running_beside_another(
    tmp_path: Path, clock: ManualClock
) -> None:
    harness, runner = _harness(tmp_path, clock)
    try:
        harness.create("long", {"every": "1m"}, overlap="allow")
        for minute in ("01", "02"):
            harness.clock.set(at(f"2026-03-02T09:{minute}:00+01:00"))
            harness.node.run_pass()
        _arrive(runner, 2)
        harness.clock.set(at("2026-03-02T09:02:30+01:00"))
        listed = harness.ok(
            "backfill",
            name="long",
            dry_run=True,
            **{"from": "2026-03-02T09:00:30+01:00", "to": "2026-03-02T09:02:20+01:00"},
        )
        assert listed["occurrences"] == []  # 09:01 and 09:02 both run now
    finally:
        runner.close()


def test_a_claim_that_landed_unbeknown_beside_a_running_one_is_given_back_and_the_running_one_kept(
    clock: ManualClock,
) -> None:
    # 1-1 runs; the claim of 1-2 lands, but its reply is lost and no read back can tell (semantic 29).
    store = LostReplies()
    runner = GatedRunner()
    harness = make_harness(store, clock, runner=runner, node_id="node-x")
    try:
        harness.create("long", {"every": "1m"}, overlap="allow")
        harness.clock.set(at("2026-03-02T09:01:00+01:00"))
        assert harness.node.run_pass().fired == ["1-1"]
        assert runner.arrived.acquire(timeout=5)
        harness.clock.set(at("2026-03-02T09:02:00+01:00"))
        store.lose, store.dark_after_loss = 1, True
        assert harness.node.run_pass().fired == []  # not started: the claim may not be this node's
        stored = store.find("long")
        assert stored is not None and [f.fire_id for f in stored.flights] == ["1-1", "1-2"]

        store.unreachable = store.dark_after_loss = False
        harness.clock.set(at("2026-03-02T09:02:20+01:00"))
        # The node knows it never started 1-2: given back, the 09:02 occurrence is due again, within its
        # grace, and fires under a fresh fire_id; 1-1, which it did start, is left running.
        assert harness.node.run_pass().fired == ["1-3"]
        runner.gate("1-1").set()
        runner.gate("1-3").set()
        harness.node.wait_for_runs(5)
        harness.node.record_finished()
    finally:
        runner.close()
    assert sorted((c.fire_id, c.scheduled_for) for c in runner.calls) == [
        ("1-1", at("2026-03-02T09:01:00+01:00")),
        ("1-3", at("2026-03-02T09:02:00+01:00")),
    ]
    history = harness.ok("history", name="long")["runs"]
    assert sorted((run["fire_id"], run["outcome"]) for run in history) == [("1-1", "ok"), ("1-3", "ok")]
    shown = harness.job("long")
    assert (shown["state"], shown["in_flight"], shown["skipped"]["misfire"]) == ("active", 0, 0)


def test_rows_held_for_attempts_this_node_never_claimed_are_recorded_interrupted_never_given_back(
    tmp_path: Path, clock: ManualClock
) -> None:
    # The row says node-x runs 1-1 and 1-2, and node-x has no record of either: reconciliation never
    # guesses that they did not start. They are recorded interrupted, never run, and no fire_id is reused.
    store = SqliteStore(tmp_path / "cronwright.db")
    harness = make_harness(store, clock, node_id="node-x", boot=False)
    harness.create("long", {"every": "1m"}, overlap="allow")
    job = store.find("long")
    assert job is not None
    first = InFlight("1-1", at("2026-03-02T09:01:00+01:00"), 1, at("2026-03-02T09:01:00+01:00"), "node-x")
    second = InFlight("1-2", at("2026-03-02T09:02:00+01:00"), 1, at("2026-03-02T09:02:00+01:00"), "node-x")
    stranded = job.evolve(
        state=State.RUNNING, in_flight=first, alongside=(second,), occurrences=2, overlapped=1,
        next_run_at=at("2026-03-02T09:03:00+01:00"),
    )  # fmt: skip
    assert store.save(WriteSet([stranded])).of(stranded)  # the backend itself: True when it landed
    harness.clock.set(at("2026-03-02T09:02:05+01:00"))
    harness.node.boot()
    harness.clock.set(at("2026-03-02T09:02:20+01:00"))
    harness.node.run_pass()
    assert harness.runner.calls == []
    history = harness.ok("history", name="long")["runs"]
    assert sorted((run["fire_id"], run["outcome"]) for run in history) == [
        ("1-1", "interrupted"),
        ("1-2", "interrupted"),
    ]
    harness.clock.set(at("2026-03-02T09:03:00+01:00"))
    assert harness.node.run_pass().fired == ["1-3"]
