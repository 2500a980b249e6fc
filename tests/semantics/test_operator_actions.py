"""DESIGN semantics 11-14: pause and resume, run_now, update and delete."""

from __future__ import annotations

import threading

from conftest import Harness, at, make_harness
from cronwright.store.memory import MemoryStore


def test_resume_on_an_active_job_is_refused_and_starts_nothing(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    before = harness.job("daily")
    reply = harness.call("resume", name="daily")
    assert reply["error"] == "job_not_paused"
    assert reply["state"] == "active"
    assert harness.job("daily") == before
    harness.node.wait_for_runs()
    assert harness.runner.calls == []


def test_resume_on_a_running_job_cannot_start_a_second_run(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    reply = harness.call("resume", name="slow")
    assert (reply["error"], reply["state"]) == ("job_not_paused", "running")
    gate.set()
    harness.node.wait_for_runs()
    assert len(harness.runner.calls) == 1


def test_pause_stops_firing(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    paused = harness.ok("pause", name="daily")
    assert paused["job"]["paused_by"] == "operator"
    assert paused["persistence"] == "persisted"
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    assert harness.tick()["fired"] == 0


def test_run_now_refusals(harness: Harness) -> None:
    assert harness.call("run_now", name="ghost")["error"] == "not_found"
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.ok("pause", name="daily")
    reply = harness.call("run_now", name="daily")
    assert (reply["error"], reply["state"]) == ("job_not_active", "paused")
    harness.create("short", {"cron": "0 10 * * *"}, lifetime="1h")
    harness.clock.set(at("2026-03-02T10:30:00+01:00"))
    harness.tick()
    reply = harness.call("run_now", name="short")
    assert (reply["error"], reply["state"]) == ("job_terminal", "expired")


def test_run_now_while_in_flight_is_refused(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.ok("run_now", name="slow")
    assert harness.call("run_now", name="slow")["error"] == "job_running"
    gate.set()
    harness.node.wait_for_runs()


def test_run_now_at_capacity_is_refused(clock: object) -> None:
    from cronwright.clock import ManualClock

    assert isinstance(clock, ManualClock)
    harness = make_harness(MemoryStore(), clock, max_concurrency=1)
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.create("other", {"cron": "0 10 * * *"})
    harness.ok("run_now", name="slow")
    assert harness.call("run_now", name="other")["error"] == "at_max_concurrency"
    gate.set()
    harness.node.wait_for_runs()


def test_run_now_keeps_a_cron_job_on_its_grid(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T09:30:00+01:00"))
    harness.ok("run_now", name="daily")
    harness.node.wait_for_runs()
    shown = harness.job("daily")
    assert shown["next_run_at"] == "2026-03-02T10:00:00+01:00"
    assert harness.runner.calls[0].scheduled_for == at("2026-03-02T09:30:00+01:00")
    assert shown["last_run"]["outcome"] == "ok"


def test_run_now_re_phases_an_every_job(harness: Harness) -> None:
    harness.create("poll", {"every": "10m"})
    harness.clock.set(at("2026-03-02T09:04:00+01:00"))
    harness.ok("run_now", name="poll")
    harness.node.wait_for_runs()
    assert harness.job("poll")["next_run_at"] == "2026-03-02T09:14:00+01:00"


def test_update_refuses_immutable_fields(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    for field in ("target", "action", "dedupe_key", "origin", "created_by"):
        reply = harness.call("update", name="daily", changes={field: "x"})
        assert (reply["error"], reply["field"]) == ("immutable_field", field)


def test_update_is_refused_while_the_job_runs(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.ok("run_now", name="slow")
    reply = harness.call("update", name="slow", changes={"args": {"a": 1}})
    assert (reply["error"], reply["state"]) == ("job_running", "running")
    gate.set()
    harness.node.wait_for_runs()


def test_update_is_validated_like_create_and_keeps_the_last_run(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.ok("run_now", name="daily")
    harness.node.wait_for_runs()
    last = harness.job("daily")["last_run"]
    assert (
        harness.call("update", name="daily", changes={"schedule": {"cron": "0 0 30 2 *"}})["error"]
        == "invalid"
    )
    assert harness.call("update", name="daily", changes={"args": {"cron": {}}})["error"] == "invalid"
    updated = harness.ok("update", name="daily", changes={"schedule": {"cron": "15 9 * * *"}})["job"]
    assert updated["last_run"] == last
    # A changed schedule re-arms from the moment of the update (09:00): 09:15 today.
    assert updated["next_run_at"] == "2026-03-02T09:15:00+01:00"


def test_delete_answers_with_the_row_and_a_run_in_flight_never_brings_it_back(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    gone = harness.ok("delete", name="slow")
    assert gone["job"]["name"] == "slow"
    assert gone["persistence"] == "persisted"
    gate.set()
    harness.node.wait_for_runs()
    assert harness.call("get", name="slow")["error"] == "not_found"
    assert harness.ok("list")["jobs"] == []
    runs = harness.ok("history")["runs"]
    assert [(r["fire_id"], r["outcome"]) for r in runs] == [("1-1", "ok")]
