"""Semantic 35: backfill runs the occurrences of a range that never started, oldest first, one at a
time, each with its own fire_id; what ran or waits is never queued again; a source's backfill counts
against its quota; a dry run writes nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from conftest import ALLOWED, BERLIN, Harness, at, make_harness
from cronwright.client import Client
from cronwright.clock import ManualClock
from cronwright.core.events import Event, EventKind
from cronwright.core.sources import Source
from cronwright.declare.replies import JobRow
from cronwright.protocol import RequestHandler
from cronwright.service.operations import Limits, Service
from cronwright.store.sqlite import SqliteStore
from cronwright.telemetry.sinks import MetricsSink

HOURLY = {"cron": "0 * * * *"}
LATER = "2026-03-02T13:30:00+01:00"
AGENT = Source("agent", targets=("reports.*",), max_schedules=2)


def _missed_four(harness: Harness) -> None:
    """An hourly job made at 09:00 whose node was down from 10:00 to 13:30: 10, 11, 12 and 13 o'clock
    were skipped by its misfire policy."""
    harness.create("hourly", HOURLY)
    harness.clock.set(at("2026-03-02T13:30:00+01:00"))
    harness.node.run_pass()
    assert harness.job("hourly")["skipped"]["misfire"] == 4


def _backfill(harness: Harness, source: Source | None = None, /, **fields: Any) -> dict[str, Any]:
    request = {
        "action": "backfill",
        "name": "hourly",
        "from": "2026-03-02T09:30:00+01:00",
        "to": "2026-03-02T13:30:00+01:00",
        **fields,
    }
    reply = harness.protocol.dispatch(request, source or Source("cli", operator=True))
    return reply


def test_a_backfill_runs_the_missed_occurrences_oldest_first_each_once(harness: Harness) -> None:
    _missed_four(harness)
    reply = _backfill(harness)
    assert reply["ok"], reply
    assert reply["occurrences"] == [
        "2026-03-02T10:00:00+01:00",
        "2026-03-02T11:00:00+01:00",
        "2026-03-02T12:00:00+01:00",
        "2026-03-02T13:00:00+01:00",
    ]
    assert (reply["queued"], reply["more"], reply["job"]["backfill_queued"]) == (4, False, 4)
    harness.tick()
    scheduled = [call.scheduled_for for call in harness.runner.calls]
    assert scheduled == [at(f"2026-03-02T{hour}:00:00+01:00") for hour in (10, 11, 12, 13)]
    assert len(set(harness.runner.fire_ids())) == 4
    assert harness.events.kinds().count(EventKind.JOB_BACKFILLED) == 4
    for _ in range(2):
        again = _backfill(harness)
        assert (again["ok"], again["occurrences"], again["queued"]) == (True, [], 0)
        harness.tick()
    assert len(harness.runner.calls) == 4
    shown = harness.job("hourly")
    assert (shown["backfilled"], shown["backfill_queued"], shown["state"]) == (4, 0, "active")


def test_what_ran_on_its_own_timetable_is_not_backfilled(harness: Harness) -> None:
    harness.create("hourly", HOURLY)
    harness.clock.set(at("2026-03-02T10:00:10+01:00"))
    harness.tick()  # 10:00 runs on time
    harness.clock.set(at("2026-03-02T13:30:00+01:00"))
    harness.node.run_pass()  # 11, 12 and 13 are missed
    reply = _backfill(harness)
    assert reply["occurrences"] == [
        "2026-03-02T11:00:00+01:00",
        "2026-03-02T12:00:00+01:00",
        "2026-03-02T13:00:00+01:00",
    ]


def test_an_occurrence_queued_and_then_fired_by_its_timetable_runs_once(harness: Harness) -> None:
    harness.create("hourly", HOURLY)
    harness.clock.set(at("2026-03-02T10:00:20+01:00"))  # 10:00 is due, within its grace, not yet fired
    reply = _backfill(harness, to="2026-03-02T10:01:00+01:00")
    assert reply["occurrences"] == ["2026-03-02T10:00:00+01:00"]
    harness.tick()
    harness.tick()
    assert [call.scheduled_for for call in harness.runner.calls] == [at("2026-03-02T10:00:00+01:00")]
    assert harness.job("hourly")["backfill_queued"] == 0


def test_a_dry_run_lists_and_writes_nothing(harness: Harness) -> None:
    _missed_four(harness)
    before = harness.raw_store.get(harness.job("hourly")["id"])
    entries = harness.ok("audit")["entries"]
    reply = _backfill(harness, dry_run=True)
    assert (reply["ok"], reply["dry_run"], reply["queued"], len(reply["occurrences"])) == (True, True, 0, 4)
    assert harness.raw_store.get(before.id) == before if before else False
    assert harness.ok("audit")["entries"] == entries
    harness.tick()
    assert harness.runner.calls == []


def test_a_backfill_is_audited_with_what_it_queued(harness: Harness) -> None:
    _missed_four(harness)
    _backfill(harness, request_id="bf-1")
    entry = harness.ok("audit", name="hourly")["entries"][0]
    assert (entry["action"], entry["request_id"]) == ("backfill", "bf-1")
    assert entry["changes"]["backfill"][1][0] == "2026-03-02T10:00:00+01:00"
    assert entry["changes"]["backfill_queued"] == [0, 4]


def test_two_nodes_backfilling_one_range_queue_each_occurrence_once(harness: Harness) -> None:
    _missed_four(harness)
    other = make_harness(harness.raw_store, harness.clock, node_id="other")
    assert _backfill(other)["queued"] == 4
    assert _backfill(harness)["queued"] == 0
    other.tick()
    harness.tick()
    assert len(other.runner.calls) + len(harness.runner.calls) == 4
    other.runner.close()


def test_a_sources_backfill_counts_against_its_quota_until_its_queue_has_started(harness: Harness) -> None:
    def create(name: str) -> dict[str, Any]:
        spec = {"name": name, "target": "reports", "action": "daily", "schedule": HOURLY}
        reply = harness.protocol.dispatch({"action": "create_job", "job": spec}, AGENT)
        return reply

    assert create("hourly")["ok"]
    harness.clock.set(at("2026-03-02T13:30:00+01:00"))
    harness.node.run_pass()
    dry = _backfill(harness, AGENT, dry_run=True)
    assert dry["quota"] == {"used": 2, "max": 2}
    assert _backfill(harness, AGENT)["queued"] == 4
    refused = create("second")
    assert (refused["ok"], refused["error"]) == (False, "quota_exceeded")
    assert "backfill" in refused["message"]
    harness.tick()  # the queue runs
    assert create("second")["ok"]
    full = _backfill(harness, AGENT, name="second", **{"from": "2026-03-02T12:00:00+01:00"})
    assert (full["ok"], full["error"]) == (False, "quota_exceeded")


def test_a_range_in_the_future_or_backwards_is_refused(harness: Harness) -> None:
    harness.create("hourly", HOURLY)
    late = _backfill(harness, **{"from": "2026-03-03T00:00:00+01:00", "to": "2026-03-04T00:00:00+01:00"})
    assert (late["ok"], late["error"], late["field"]) == (False, "invalid", "from")
    back = _backfill(harness, to="2026-03-01T00:00:00+01:00")
    assert (back["ok"], back["field"]) == (False, "to")


def test_a_paused_job_runs_its_backfill_once_resumed(harness: Harness) -> None:
    _missed_four(harness)
    harness.ok("pause", name="hourly")
    assert _backfill(harness)["queued"] == 4
    harness.tick()
    assert harness.runner.calls == []
    harness.ok("resume", name="hourly")
    harness.tick()
    assert len(harness.runner.calls) == 4


def test_an_occurrence_that_ran_with_another_jitter_is_not_backfilled(harness: Harness) -> None:
    harness.create("hourly", {"cron": "0 * * * *", "jitter": "10m"})
    due = at(harness.job("hourly")["next_run_at"])  # shown to the second: its milliseconds come after
    harness.clock.set(due + timedelta(seconds=1))
    harness.tick()  # 10:00 runs, at its jittered instant
    assert len(harness.runner.calls) == 1
    harness.ok("update", name="hourly", changes={"schedule": {"cron": "0 * * * *", "jitter": "30m"}})
    harness.clock.set(at("2026-03-02T13:50:00+01:00"))
    harness.node.run_pass()
    found = _backfill(harness, dry_run=True)["occurrences"]
    assert "2026-03-02T10:00:00+01:00" not in found
    assert found[:2] == ["2026-03-02T11:00:00+01:00", "2026-03-02T12:00:00+01:00"]


def test_an_every_schedule_backfills_its_own_grid(harness: Harness) -> None:
    harness.create("half-hourly", {"every": "30m"})  # its grid: 09:00, 09:30, ...
    reply = _backfill(
        harness,
        name="half-hourly",
        **{"from": "2026-03-02T07:10:00+01:00", "to": "2026-03-02T09:00:00+01:00"},
    )
    assert reply["occurrences"] == [
        "2026-03-02T07:30:00+01:00",
        "2026-03-02T08:00:00+01:00",
        "2026-03-02T08:30:00+01:00",
    ]


def test_a_range_of_more_than_a_thousand_says_where_to_go_on(harness: Harness) -> None:
    harness.create("minutely", {"every": "1m"})
    span = {"name": "minutely", "from": "2026-03-01T00:00:00+01:00", "to": "2026-03-02T09:00:00+01:00"}
    first = _backfill(harness, **span)
    assert (first["queued"], first["more"], first["next_from"]) == (1000, True, "2026-03-01T16:40:00+01:00")
    assert first["occurrences"][-1] == "2026-03-01T16:39:00+01:00"
    full = _backfill(harness, **{**span, "from": first["next_from"]})
    assert (full["queued"], full["more"]) == (0, True)  # at most 1,000 wait on one schedule
    assert harness.job("minutely")["backfill_queued"] == 1000


def test_once_the_history_is_full_what_it_may_have_pruned_is_left_out(tmp_path: Path) -> None:
    clock = ManualClock(at("2026-03-02T09:00:00+01:00"))
    small = make_harness(SqliteStore(tmp_path / "small.db", run_history=3), clock)
    protocol = RequestHandler(Service(small.node, ALLOWED, Limits(BERLIN, run_history=3)))
    small.create("hourly", HOURLY)
    for hour in (10, 11, 12, 13):
        clock.set(at(f"2026-03-02T{hour}:00:10+01:00"))
        small.tick()  # four runs; the history keeps the newest three
    request = {
        "action": "backfill",
        "name": "hourly",
        "from": "2026-03-02T09:30:00+01:00",
        "to": "2026-03-02T13:30:00+01:00",
    }
    reply = protocol.dispatch(request, Source("cli", operator=True))
    assert (reply["ok"], reply["occurrences"]) == (True, [])  # 10:00 ran, though its run was pruned
    small.runner.close()


def test_the_python_client_backfills_and_pauses_with_a_note(harness: Harness) -> None:
    _missed_four(harness)
    client = Client(lambda request: harness.protocol.dispatch(request, Source("cli", operator=True)))
    dry = client.backfill("hourly", start="2026-03-02T09:30:00+01:00", end=LATER, dry_run=True)
    assert (dry.dry_run, len(dry.occurrences), dry.queued) == (True, 4, 0)
    assert client.backfill("hourly", start="2026-03-02T09:30:00+01:00", end=LATER).queued == 4
    paused = client.pause("hourly", note="vendor outage")
    assert isinstance(paused.job, JobRow) and paused.job.pause_note == "vendor outage"


def test_each_backfilled_start_is_counted_in_the_metrics() -> None:
    registry = CollectorRegistry()
    sink = MetricsSink(registry)
    assert registry.get_sample_value("cronwright_backfilled_total") == 0
    sink.emit(Event(EventKind.JOB_BACKFILLED, 1, "hourly"))
    assert registry.get_sample_value("cronwright_backfilled_total") == 1
