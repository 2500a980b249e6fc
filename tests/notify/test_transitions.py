"""Semantic 38, where each transition is detected: the engine's decisions (failed, recovered, breaker_paused,
missed, expired), a pass that finds every slot busy past the grace (late), a peer recovering a dead node's
runs (node_down), and the store seam (persistence_degraded, persistence_recovered). Each becomes one
notification per matching channel, in the outbox, written with the decision."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from conftest import BERLIN, Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.model import Job, Outcome
from cronwright.core.notifications import Notification, Transition
from cronwright.errors import StoreError
from cronwright.notify.alerting import Alerting
from cronwright.notify.rules import Rule
from cronwright.store.base import Backend, Saved, WriteSet
from cronwright.store.memory import MemoryStore
from cronwright.store.sqlite import SqliteStore

EVERYTHING = Alerting((Rule(on=frozenset(Transition), notify=("ops",)),), BERLIN)


def sent(harness: Harness) -> list[tuple[str, str | None]]:
    """(transition, job name) of each notification in the outbox, oldest first."""
    rows = reversed(harness.node.store.page(1000))
    return [(row.transition, (row.payload.get("job") or {}).get("name")) for row in rows]


def alerting_harness(tmp_path: Path, clock: ManualClock, **settings: Any) -> Harness:
    store = SqliteStore(tmp_path / "cronwright.db")
    return make_harness(store, clock, alerting=EVERYTHING, **settings)


def test_a_job_failing_twice_alerts_failed_once_then_recovered_once(
    tmp_path: Path, clock: ManualClock
) -> None:
    harness = alerting_harness(tmp_path, clock)
    harness.runner.outcomes["backup"] = [Outcome.ERROR, Outcome.ERROR, Outcome.OK, Outcome.OK]
    harness.create("backup", {"cron": "0 * * * *"}, breaker_threshold=0)
    for hour in (10, 11, 12, 13):
        clock.set(at(f"2026-03-02T{hour}:00:00+01:00"))
        harness.tick()

    assert sent(harness) == [("failed", "backup"), ("recovered", "backup")]
    failed, recovered = reversed(harness.node.store.page(10))
    assert (
        failed.payload["fire_id"] == "1-1" and failed.payload["scheduled_for"] == "2026-03-02T10:00:00+01:00"
    )
    assert failed.payload["message"].startswith("error")
    assert recovered.payload["fire_id"] == "1-3" and recovered.job_id == failed.job_id
    assert failed.payload["job"] == {"id": 1, "name": "backup", "target": "reports", "action": "daily",
                                     "source": "cli"}  # fmt: skip


def test_a_failure_alerts_once_its_retries_are_done(tmp_path: Path, clock: ManualClock) -> None:
    harness = alerting_harness(tmp_path, clock)
    harness.runner.outcomes["flaky"] = [Outcome.ERROR, Outcome.ERROR]
    harness.create("flaky", {"cron": "0 10 * * *"}, max_attempts=2, retry_backoff_ms=10_000)
    clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    assert sent(harness) == []  # the first attempt failed, and its retry waits
    clock.set(at("2026-03-02T10:00:10+01:00"))
    harness.tick()

    [failed] = harness.node.store.page(10)
    assert failed.transition == "failed" and "after 2 attempts" in failed.payload["message"]


def test_the_breaker_alerts_when_it_pauses_the_job(tmp_path: Path, clock: ManualClock) -> None:
    harness = alerting_harness(tmp_path, clock)
    harness.runner.outcomes["bad"] = [Outcome.ERROR] * 3
    harness.create("bad", {"cron": "0 * * * *"}, breaker_threshold=3)
    for hour in (10, 11, 12):
        clock.set(at(f"2026-03-02T{hour}:00:00+01:00"))
        harness.tick()

    assert sent(harness) == [("failed", "bad"), ("breaker_paused", "bad")]


def test_a_node_down_across_an_occurrence_alerts_missed_at_boot(tmp_path: Path, clock: ManualClock) -> None:
    harness = alerting_harness(tmp_path, clock)
    harness.create("daily", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-04T10:30:00+01:00"))  # down over two days' 10:00

    again = make_harness(harness.raw_store, clock, alerting=EVERYTHING)

    [missed] = again.node.store.page(10)
    assert missed.transition == "missed" and missed.payload["scheduled_for"] == "2026-03-02T10:00:00+01:00"
    assert missed.payload["message"].startswith("3 occurrences did not start")


def test_a_resume_that_skips_what_it_missed_alerts_missed(tmp_path: Path, clock: ManualClock) -> None:
    harness = alerting_harness(tmp_path, clock)
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.ok("pause", name="daily")
    clock.set(at("2026-03-03T11:00:00+01:00"))
    harness.ok("resume", name="daily")

    assert sent(harness) == [("missed", "daily")]


def test_a_lifetime_that_ends_alerts_expired_once(tmp_path: Path, clock: ManualClock) -> None:
    harness = alerting_harness(tmp_path, clock)
    harness.create("short", {"cron": "0 10 * * *"}, lifetime="1d")
    clock.set(at("2026-03-03T09:30:00+01:00"))
    harness.tick()
    clock.set(at("2026-03-03T10:30:00+01:00"))
    harness.tick()

    assert sent(harness) == [("expired", "short")]


def test_every_slot_busy_past_the_grace_alerts_late_not_missed(tmp_path: Path, clock: ManualClock) -> None:
    harness = alerting_harness(tmp_path, clock, max_concurrency=1)
    gate = harness.runner.hold["long"] = threading.Event()
    harness.create("long", {"cron": "0 10 * * *"})
    harness.create("waits", {"cron": "1 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()  # `long` starts, and holds the only slot
    harness.runner.started.wait(10)
    clock.set(at("2026-03-02T10:01:00+01:00"))
    assert harness.node.run_pass().fired == []  # `waits` is due, and finds no slot
    clock.set(at("2026-03-02T10:02:01+01:00"))
    harness.node.run_pass()  # its grace is over: skipped
    gate.set()
    harness.node.wait_for_runs(10)

    assert sent(harness) == [("late", "waits")]
    [late] = harness.node.store.page(10)
    assert late.payload["scheduled_for"] == "2026-03-02T10:01:00+01:00"


def test_a_peer_recovering_a_dead_nodes_runs_alerts_node_down_once(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = SqliteStore(tmp_path / "cronwright.db")
    dead = make_harness(store, clock, alerting=EVERYTHING, node_id="node-dead")
    dead.runner.hold["one"] = threading.Event()
    dead.runner.hold["two"] = threading.Event()
    dead.create("one", {"cron": "0 10 * * *"})
    dead.create("two", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))
    dead.node.run_pass()  # both start on node-dead, which then stops beating (it died)
    peer = make_harness(SqliteStore(tmp_path / "cronwright.db"), clock, alerting=EVERYTHING, node_id="peer")
    clock.set(at("2026-03-02T10:01:00+01:00"))

    peer.node.run_pass()

    rows = sent(peer)
    assert rows.count(("node_down", None)) == 1
    assert sorted(rows) == [("failed", "one"), ("failed", "two"), ("node_down", None)]
    down = next(row for row in peer.node.store.page(10) if row.transition == "node_down")
    assert "node-dead" in down.payload["message"] and down.payload["job"] is None
    dead.runner.close()


class Breaking(MemoryStore):
    broken = False

    def save(self, writes: WriteSet) -> Saved[bool]:
        if self.broken:
            raise StoreError("the disk is full")
        return super().save(writes)

    def get_many(self, job_ids: Sequence[int]) -> dict[int, Job]:
        if self.broken:
            raise StoreError("the disk is full")
        return super().get_many(job_ids)


def test_a_failing_store_alerts_degraded_then_recovered_once_it_takes_writes(clock: ManualClock) -> None:
    store = Breaking()
    harness = make_harness(store, clock, alerting=EVERYTHING, node_id="node-a")
    harness.create("often", {"every": "1m"})
    store.broken = True
    clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.node.record_finished()
    harness.ok("pause", name="often")  # kept in memory: degraded
    harness.ok("resume", name="often")
    assert store.page(10) == []  # nothing can be written yet
    store.broken = False
    clock.set(at("2026-03-02T09:02:00+01:00"))

    harness.node.store.flush()

    assert [row.transition for row in reversed(store.page(10))] == [
        "persistence_degraded",
        "persistence_recovered",
    ]
    degraded = store.page(10)[-1]
    assert degraded.payload["at"] == "2026-03-02T09:01:00+01:00" and "node-a" in degraded.payload["message"]


def test_only_the_channels_of_matching_rules_get_a_notification(tmp_path: Path, clock: ManualClock) -> None:
    rules = (
        Rule(on=frozenset({Transition.FAILED}), notify=("backup-team",), target="backup.*"),
        Rule(on=frozenset({Transition.FAILED, Transition.RECOVERED}), notify=("ops",), name="daily-*"),
    )
    store: Backend = SqliteStore(tmp_path / "cronwright.db")
    harness = make_harness(store, clock, alerting=Alerting(rules, BERLIN))
    harness.runner.outcomes = {"daily-report": [Outcome.ERROR], "weekly": [Outcome.ERROR]}
    harness.create("daily-report", {"cron": "0 10 * * *"})
    harness.create("weekly", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()

    rows: list[Notification] = harness.node.store.page(10)
    assert [(row.channel, row.payload["job"]["name"]) for row in rows] == [("ops", "daily-report")]
    assert timedelta(0) == rows[0].next_attempt_at - rows[0].created_at
