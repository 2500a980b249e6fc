"""Semantic 34: overlap policies. buffer_one keeps at most one occurrence waiting while the previous one
runs, and starts it when that one ends; allow and replace are refused plainly in this release."""

from __future__ import annotations

import threading

from conftest import Harness, at
from cronwright.events import EventKind


def test_buffer_one_runs_one_waiting_occurrence_after_a_long_run(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["long"] = gate
    job = harness.create("long", {"every": "1m"}, overlap="buffer_one")
    assert job["overlap"] == "buffer_one"
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.node.run_pass()  # starts 09:01, which runs long
    assert harness.runner.started.wait(10)
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    assert harness.node.run_pass().fired == []  # 09:02 waits
    shown = harness.job("long")
    assert (shown["buffered"], shown["buffered_for"]) == (1, "2026-03-02T09:02:00+01:00")
    harness.clock.set(at("2026-03-02T09:04:30+01:00"))
    harness.node.run_pass()  # 09:03 and 09:04 come due while 09:02 already waits: dropped
    shown = harness.job("long")
    assert shown["skipped"]["overlap"] == 2 and shown["buffered"] == 1
    assert shown["next_run_at"] == "2026-03-02T09:05:00+01:00"

    gate.set()  # the long run ends; the waiting one starts at the next pass, late as it is
    harness.node.wait_for_runs()
    report = harness.node.run_pass()
    assert len(report.fired) == 1
    harness.node.wait_for_runs()
    harness.node.run_pass()
    assert [call.scheduled_for for call in harness.runner.calls] == [
        at("2026-03-02T09:01:00+01:00"),
        at("2026-03-02T09:02:00+01:00"),
    ]
    shown = harness.job("long")
    assert (shown["state"], shown["buffered_for"], shown["skipped"]["overlap"]) == ("active", None, 2)
    assert harness.events.kinds().count(EventKind.JOB_BUFFERED) == 1
    assert harness.node.run_pass().fired == []  # it ran once: nothing is left waiting


def test_a_tick_starts_the_waiting_occurrence_once_the_running_one_ends(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["long"] = gate
    harness.create("long", {"every": "1m"}, overlap="buffer_one")
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.node.run_pass()
    assert harness.runner.started.wait(10)
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    harness.node.run_pass()
    gate.set()
    report = harness.node.tick()
    assert len(report.fired) == 1  # the buffered one, started by the same tick
    assert len(harness.runner.calls) == 2


def test_skip_stays_the_default(harness: Harness) -> None:
    assert harness.create("plain", {"every": "1m"})["overlap"] == "skip"


def test_allow_and_replace_are_refused_at_create_saying_what_to_use(harness: Harness) -> None:
    for policy in ("allow", "replace"):
        spec = {
            "name": policy,
            "target": "reports",
            "action": "daily",
            "schedule": {"every": "1m"},
            "overlap": policy,
        }
        reply = harness.call("create_job", job=spec)
        assert (reply["ok"], reply["error"], reply["field"]) == (False, "invalid", "overlap")
        assert "buffer_one" in reply["message"]
    assert harness.ok("list")["jobs"] == []
