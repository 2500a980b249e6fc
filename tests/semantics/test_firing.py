"""DESIGN semantics 6-8: misfire, overlap and concurrency."""

from __future__ import annotations

import threading
from datetime import datetime

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.events import EventKind
from cronwright.core.model import Job
from cronwright.node import drive
from cronwright.node.scheduler import DUE_CHUNK
from cronwright.store.memory import MemoryStore


class CountingStore(MemoryStore):
    """A memory store that counts the due rows each pass reads."""

    def __init__(self) -> None:
        super().__init__()
        self.rows_read = 0

    def due(self, now: datetime, limit: int) -> list[Job]:
        rows = super().due(now, limit)
        self.rows_read += len(rows)
        return rows


def test_node_down_over_a_firing_skips_it(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 7 * * *"})
    harness.clock.set(at("2026-03-03T07:00:30+01:00"))
    assert harness.tick()["fired"] == 1
    # Down all of 4 March; back at noon.
    harness.clock.set(at("2026-03-04T12:00:00+01:00"))
    reply = harness.tick()
    assert reply["fired"] == 0
    assert reply["skipped"] == 1
    shown = harness.job("daily")
    assert shown["skipped"]["misfire"] == 1
    assert shown["next_run_at"] == "2026-03-05T07:00:00+01:00"
    harness.clock.set(at("2026-03-05T07:00:00+01:00"))
    assert harness.tick()["fired"] == 1
    assert len(harness.runner.calls) == 2


def test_coalesce_runs_exactly_one_catch_up_for_the_latest_missed(harness: Harness) -> None:
    harness.create("hourly", {"cron": "0 * * * *"}, misfire="coalesce")
    harness.clock.set(at("2026-03-02T14:20:00+01:00"))  # 10:00 to 14:00 were missed
    assert harness.tick()["fired"] == 1
    assert harness.runner.calls[0].scheduled_for == at("2026-03-02T14:00:00+01:00")
    shown = harness.job("hourly")
    assert shown["skipped"]["misfire"] == 4
    assert shown["next_run_at"] == "2026-03-02T15:00:00+01:00"
    assert harness.tick()["fired"] == 0


def test_coalesce_fires_the_on_time_occurrence_and_no_extra_catch_up(harness: Harness) -> None:
    harness.create("hourly", {"cron": "0 * * * *"}, misfire="coalesce")
    harness.clock.set(at("2026-03-02T14:00:20+01:00"))  # 14:00 is on time; 10:00-13:00 were missed
    assert harness.tick()["fired"] == 1
    assert [c.scheduled_for for c in harness.runner.calls] == [at("2026-03-02T14:00:00+01:00")]


def test_skip_still_fires_an_occurrence_within_its_grace(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:59+01:00"))
    assert harness.tick()["fired"] == 1
    harness.clock.set(at("2026-03-03T10:01:01+01:00"))
    assert harness.tick()["fired"] == 0


def test_misfire_policy_applies_at_boot(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"}, misfire="coalesce")
    harness.clock.set(at("2026-03-04T11:00:00+01:00"))
    restarted = harness.restart()  # boot runs the first pass
    assert [c.scheduled_for for c in restarted.runner.calls] == [at("2026-03-04T10:00:00+01:00")]
    restarted.node.wait_for_runs()


def test_misfire_policy_applies_at_resume(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.ok("pause", name="daily")
    harness.clock.set(at("2026-03-04T11:00:00+01:00"))
    assert harness.tick()["fired"] == 0
    harness.ok("resume", name="daily")
    reply = harness.tick()
    assert reply["fired"] == 0
    assert harness.job("daily")["next_run_at"] == "2026-03-05T10:00:00+01:00"


def test_one_shot_always_fires_its_late_run_within_its_lifetime(harness: Harness) -> None:
    harness.ok(
        "create_job",
        job={"name": "once", "target": "reports", "action": "daily", "run_at": "2026-03-02T10:00:00+01:00"},
    )
    harness.clock.set(at("2026-03-05T10:00:00+01:00"))
    assert harness.tick()["fired"] == 1
    assert harness.job("once")["state"] == "done"


def test_overlapping_firing_is_skipped_and_counted(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"every": "1m"})
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.node.run_pass()  # starts the first run, which blocks
    assert harness.runner.started.wait(10)
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    report = harness.node.run_pass()
    assert report.fired == []
    assert report.skipped == 1
    gate.set()
    harness.node.wait_for_runs()
    shown = harness.job("slow")
    assert shown["skipped"]["overlap"] == 1
    assert shown["next_run_at"] == "2026-03-02T09:03:00+01:00"
    assert len(harness.runner.calls) == 1
    assert harness.events.kinds().count(EventKind.JOB_SKIPPED) == 1


def test_overlap_is_keyed_by_row_not_by_target_or_name(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["a"] = gate
    harness.create("a", {"every": "1m"})
    harness.create("b", {"every": "1m"})  # same target and action
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.node.run_pass()
    assert sorted(c.job_id for c in harness.runner.calls) == [1, 2]
    # A namesake re-added while the old row's run goes on is not blocked by it.
    harness.ok("delete", name="a")
    harness.create("a", {"every": "1m"})
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    harness.node.run_pass()
    gate.set()
    harness.node.wait_for_runs()
    harness.clock.set(at("2026-03-02T09:03:00+01:00"))
    fired = harness.node.run_pass().fired
    harness.node.wait_for_runs()
    assert any(fid.startswith("3-") for fid in fired)


def test_firings_beyond_max_concurrency_wait_for_a_slot(clock: ManualClock) -> None:
    harness = make_harness(MemoryStore(), clock, max_concurrency=1)
    gate = threading.Event()
    harness.runner.hold["first"] = gate
    harness.create("first", {"cron": "0 10 * * *"})
    harness.create("second", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))
    assert len(harness.node.run_pass().fired) == 1
    assert harness.job("second")["state"] == "active"  # waiting for a slot, unclaimed
    clock.set(at("2026-03-02T10:00:30+01:00"))
    gate.set()
    harness.node.wait_for_runs()
    # A slot is free again within the grace: the waiting firing starts, on time.
    assert len(harness.node.run_pass().fired) == 1
    harness.node.wait_for_runs()
    assert [c.job_id for c in harness.runner.calls] == [1, 2]
    assert harness.runner.calls[1].scheduled_for == at("2026-03-02T10:00:00+01:00")


def test_a_firing_still_waiting_for_a_slot_when_its_grace_ends_was_missed(clock: ManualClock) -> None:
    harness = make_harness(MemoryStore(), clock, max_concurrency=1)
    gate = threading.Event()
    harness.runner.hold["first"] = gate
    harness.create("first", {"cron": "0 10 * * *"})
    harness.create("second", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    clock.set(at("2026-03-02T10:05:00+01:00"))
    gate.set()
    harness.node.wait_for_runs()
    report = harness.node.run_pass()
    assert report.fired == []
    assert report.skipped == 1
    second = harness.job("second")
    assert second["skipped"]["misfire"] == 1
    assert second["next_run_at"] == "2026-03-03T10:00:00+01:00"
    assert [c.job_id for c in harness.runner.calls] == [1]


def test_tick_fires_every_due_job_as_slots_free_up(clock: ManualClock) -> None:
    harness = make_harness(MemoryStore(), clock, max_concurrency=2)
    for index in range(7):
        harness.create(f"job-{index}", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))
    assert harness.tick()["fired"] == 7
    assert sorted(c.job_id for c in harness.runner.calls) == list(range(1, 8))


def test_a_pass_reads_only_as_many_of_a_flood_as_it_has_free_slots(clock: ManualClock) -> None:
    store = CountingStore()
    harness = make_harness(store, clock, max_concurrency=4)
    for index in range(200):
        harness.create(f"shot-{index}", run_at="2026-03-02T10:00:00+01:00")
    clock.set(at("2026-03-02T10:00:00+01:00"))
    store.rows_read = 0

    assert len(harness.node.run_pass().fired) == 4

    assert store.rows_read == 4  # not the 200 waiting, nor a chunk beyond the slots
    harness.node.wait_for_runs()


def test_a_pass_settles_overdue_jobs_and_still_fills_its_slots(clock: ManualClock) -> None:
    store = CountingStore()
    harness = make_harness(store, clock, max_concurrency=2)
    overdue = DUE_CHUNK + 10  # more than one chunk: the pass reads on until it has settled them all
    clock.set(at("2026-03-02T07:00:00+01:00"))
    for index in range(overdue):
        harness.create(f"early-{index:03d}", {"cron": "0 8 * * *"})
    for index in range(3):
        harness.create(f"now-{index}", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))

    report = harness.node.run_pass()

    # The 08:00 jobs come first in wake order and are all skipped (misfire); then two 10:00 jobs fire.
    assert (len(report.fired), report.skipped) == (2, overdue)
    assert harness.job("early-000")["next_run_at"] == "2026-03-03T08:00:00+01:00"
    assert harness.job(f"early-{overdue - 1:03d}")["skipped"]["misfire"] == 1
    harness.node.wait_for_runs()


def test_a_full_node_settles_overdue_jobs_while_every_slot_is_busy(clock: ManualClock) -> None:
    harness = make_harness(CountingStore(), clock, max_concurrency=1)
    gate = threading.Event()
    harness.runner.hold["busy"] = gate
    harness.create("busy", run_at="2026-03-02T09:30:00+01:00")
    clock.set(at("2026-03-02T09:30:00+01:00"))
    assert len(harness.node.run_pass().fired) == 1  # the only slot is now busy
    for index in range(DUE_CHUNK + 10):
        harness.create(f"daily-{index:03d}", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:05:00+01:00"))  # past their grace

    report = harness.node.run_pass()

    assert (report.fired, report.skipped) == ([], DUE_CHUNK + 10)
    assert harness.job("daily-000")["next_run_at"] == "2026-03-03T10:00:00+01:00"
    gate.set()
    harness.node.wait_for_runs()


def test_a_tick_reads_past_the_rows_of_runs_that_just_finished(clock: ManualClock) -> None:
    """The finished run's row is still due until the pass records it, and comes first in wake order: a
    read of only the free slots' worth would find nothing else, and the tick would end with a slot free."""
    harness = make_harness(MemoryStore(), clock, max_concurrency=1)
    gate = threading.Event()
    harness.runner.hold["every"] = gate
    harness.create("every", {"every": "5m"})
    harness.create("shot", run_at="2026-03-02T09:11:30+01:00")
    clock.set(at("2026-03-02T09:05:00+01:00"))
    assert harness.node.run_pass().fired == ["1-1"]
    clock.set(at("2026-03-02T09:12:00+01:00"))
    gate.set()
    for future in harness.node.runs.futures():
        future.result(10)  # the run is over; no pass has recorded it yet

    assert drive.tick(harness.node).fired == ["2-1"]
    assert harness.job("shot")["state"] == "done"


def test_a_node_with_every_slot_busy_waits_for_a_run_to_end_not_for_the_waiting_jobs(
    clock: ManualClock,
) -> None:
    harness = make_harness(MemoryStore(), clock, max_concurrency=1)
    gate = threading.Event()
    harness.runner.hold["first"] = gate
    harness.create("first", {"every": "5m"})
    harness.create("second", {"every": "5m"})
    clock.set(at("2026-03-02T09:05:00+01:00"))
    assert len(harness.node.run_pass().fired) == 1  # "second" is due, and waits for the slot

    # Not 0 (a pass right away would find it still waiting, over and over): the lease beat, unless the
    # run ends first and wakes the node.
    assert drive.seconds_until_next_pass(harness.node) == 10.0
    gate.set()
    harness.node.wait_for_runs()
