"""DESIGN semantics 20, 21 and 25: events, run history, and changes that land live."""

from __future__ import annotations

import json
import logging
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from conftest import Harness, ScriptedRunner, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.events import Event, EventKind, FanOut
from cronwright.core.model import Outcome
from cronwright.node import drive
from cronwright.store.sqlite import SqliteStore
from cronwright.telemetry.sinks import LogSink, MetricsSink


def test_events_for_runs_failures_breaker_skips_and_expiry(harness: Harness) -> None:
    harness.runner.outcomes["bad"] = [Outcome.ERROR]
    harness.create("bad", {"every": "1m"}, breaker_threshold=1, lifetime="10m")
    harness.create("good", {"every": "1m"}, lifetime="3m")
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.tick()
    harness.clock.set(at("2026-03-02T09:02:30+01:00"))  # good's 09:02 is within grace: runs
    harness.tick()
    harness.clock.set(at("2026-03-02T09:04:00+01:00"))
    harness.tick()
    kinds = harness.events.kinds()
    assert kinds.count(EventKind.JOB_RUN) == 3
    assert kinds.count(EventKind.JOB_RUN_FAILED) == 1
    assert kinds.count(EventKind.JOB_BREAKER_PAUSED) == 1
    assert kinds.count(EventKind.JOB_EXPIRED) == 1
    failed = next(e for e in harness.events.events if e.kind is EventKind.JOB_RUN_FAILED)
    assert (failed.job_name, failed.fields["outcome"], failed.fields["fire_id"]) == ("bad", "error", "1-1")


def test_skip_events_carry_their_reason(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-03T12:00:00+01:00"))
    harness.tick()
    skipped = [e for e in harness.events.events if e.kind is EventKind.JOB_SKIPPED]
    assert [(e.fields["reason"], e.fields["count"]) for e in skipped] == [("misfire", 2)]


def test_events_reach_structured_logs_and_prometheus(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    sink = FanOut([LogSink(), MetricsSink(registry)])
    with caplog.at_level(logging.INFO, logger="cronwright.events"):
        sink.emit(Event(EventKind.JOB_RUN, 7, "nightly", {"outcome": "ok", "fire_id": "7-1"}))
        sink.emit(Event(EventKind.JOB_SKIPPED, 7, "nightly", {"reason": "overlap", "count": 2}))
    logged = [json.loads(record.getMessage()) for record in caplog.records]
    assert logged[0] == {"event": "job_run", "job_id": 7, "job": "nightly", "outcome": "ok", "fire_id": "7-1"}
    assert registry.get_sample_value("cronwright_runs_total", {"outcome": "ok"}) == 1
    assert registry.get_sample_value("cronwright_skips_total", {"reason": "overlap"}) == 2


def test_a_failing_sink_never_silences_the_others() -> None:
    class Broken:
        def emit(self, event: Event) -> None:
            raise RuntimeError("sink down")

    seen: list[Event] = []

    class Keeper:
        def emit(self, event: Event) -> None:
            seen.append(event)

    FanOut([Broken(), Keeper()]).emit(Event(EventKind.JOB_EXPIRED, 1, "a"))
    assert len(seen) == 1


def test_every_attempt_becomes_a_run_row(harness: Harness) -> None:
    harness.runner.outcomes["flaky"] = [Outcome.ERROR]
    harness.create("flaky", {"cron": "0 10 * * *"}, max_attempts=2, retry_backoff_ms=1000)
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    harness.clock.set(at("2026-03-02T10:00:01+01:00"))
    harness.tick()
    runs = harness.ok("history", name="flaky")["runs"]
    assert [(r["fire_id"], r["attempt"], r["outcome"]) for r in runs] == [
        ("1-1", 2, "ok"),
        ("1-1", 1, "error"),
    ]
    newest = runs[0]
    assert newest["scheduled_for"] == "2026-03-02T10:00:00+01:00"
    assert newest["started_at"] == "2026-03-02T10:00:01+01:00"
    assert newest["finished_at"] == "2026-03-02T10:00:01+01:00"
    assert newest["node"] == harness.node.id
    assert set(newest) >= {"message", "took_ms"}


def test_history_keeps_the_newest_run_history_per_job(clock: ManualClock, tmp_path: Path) -> None:
    harness = make_harness(SqliteStore(tmp_path / "db.sqlite", run_history=3), clock)
    harness.create("often", {"every": "1m"})
    harness.create("other", {"every": "1m"})
    for minute in range(1, 6):
        clock.set(at(f"2026-03-02T09:0{minute}:00+01:00"))
        harness.tick()
    fire_ids = [r["fire_id"] for r in harness.ok("history", name="often", limit=100)["runs"]]
    assert fire_ids == ["1-5", "1-4", "1-3"]
    assert len(harness.ok("history", name="other", limit=100)["runs"]) == 3


def test_a_change_wakes_a_sleeping_node_without_a_restart(clock: ManualClock, tmp_path: Path) -> None:
    runner = ScriptedRunner()
    harness = make_harness(SqliteStore(tmp_path / "db.sqlite"), clock, runner, boot=False)
    harness.create("later", {"cron": "0 12 * * *"})
    serving = threading.Thread(target=drive.serve_forever, args=(harness.node,), daemon=True)
    serving.start()
    try:
        # The node sleeps towards 12:00 (at most its safety interval); a one-shot due now must not wait.
        harness.ok("create_job", job={"name": "now", "target": "reports", "action": "daily",
                                      "run_at": "2026-03-02T09:00:00+01:00"})  # fmt: skip
        assert runner.started.wait(10), "the node did not wake for a change"
        assert [c.job_id for c in runner.calls] == [2]
    finally:
        harness.node.stop()
        serving.join(10)


def test_an_idle_node_sleeps_until_its_next_due_instant(harness: Harness) -> None:
    harness.create("soon", {"every": "1m"})
    harness.clock.set(at("2026-03-02T09:00:50+01:00"))
    assert drive.seconds_until_next_pass(harness.node) == 10.0
    harness.ok("delete", name="soon")
    harness.create("later", {"cron": "0 12 * * *"})
    # Nothing due for three hours: it wakes only at its safety interval, to notice other processes.
    assert (
        drive.seconds_until_next_pass(harness.node) == harness.node.settings.safety_interval.total_seconds()
    )
    assert harness.node.settings.safety_interval >= timedelta(seconds=60)


def test_list_pages_by_name_and_says_where_the_next_page_starts(harness: Harness) -> None:
    names = [f"job-{index:02d}" for index in range(7)]
    for name in reversed(names):
        harness.create(name, {"every": "1h"})

    pages, after = [], None
    while True:
        reply = harness.ok("list", limit=3, **({"after_name": after} if after else {}))
        pages.append([row["name"] for row in reply["jobs"]])
        after = reply.get("next_after_name")
        if after is None:
            break

    assert pages == [names[0:3], names[3:6], names[6:7]]
    assert "next_after_name" not in harness.ok("list")  # without a limit: every row, as before
    assert len(harness.ok("list")["jobs"]) == 7
    assert harness.ok("list", limit=7).keys() == {"ok", "jobs"}  # exactly a page: nothing follows
    for limit in (0, 1001, "3"):
        refused = harness.call("list", limit=limit)
        assert (refused["error"], refused["field"]) == ("invalid", "limit"), limit
