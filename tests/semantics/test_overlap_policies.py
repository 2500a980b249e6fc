"""Semantic 34: overlap policies. buffer_one keeps at most one occurrence waiting while the previous one
runs, and starts it when that one ends; replace stops the running one (it ends cancelled) and starts the
new one once it has ended (allow: test_overlap_allow.py and test_allow_engine.py)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import BERLIN, Harness, ScriptedRunner, at
from cronwright.core import engine
from cronwright.core.events import Event, EventKind, MemorySink
from cronwright.core.model import Outcome, State
from cronwright.node import drive
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.store.sqlite import SqliteStore


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
    report = drive.tick(harness.node)
    assert len(report.fired) == 1  # the buffered one, started by the same tick
    assert len(harness.runner.calls) == 2


def test_skip_stays_the_default(harness: Harness) -> None:
    assert harness.create("plain", {"every": "1m"})["overlap"] == "skip"


def test_an_unknown_policy_is_refused_naming_the_four(harness: Harness) -> None:
    spec = {
        "name": "odd",
        "target": "reports",
        "action": "daily",
        "schedule": {"every": "1m"},
        "overlap": "queue",
    }
    reply = harness.call("create_job", job=spec)
    assert (reply["ok"], reply["error"], reply["field"]) == (False, "invalid", "overlap")
    assert all(name in reply["message"] for name in ("skip", "buffer_one", "allow", "replace"))
    assert harness.ok("list")["jobs"] == []


def test_replace_is_accepted_at_create_and_update(harness: Harness) -> None:
    assert harness.create("swap", {"every": "1m"}, overlap="replace")["overlap"] == "replace"
    changed = harness.ok("update", name="swap", changes={"overlap": "skip"})["job"]
    assert changed["overlap"] == "skip"


def _running_long(harness: Harness, **job: object) -> int:
    """A job `every 1m` whose 09:01 occurrence runs (held) on the harness's node; its id."""
    harness.runner.hold["long"] = threading.Event()
    created = harness.create("long", {"every": "1m"}, **job)
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    assert harness.node.run_pass().fired == [f"{created['id']}-1"]
    assert harness.runner.started.wait(10)
    return int(created["id"])


def test_replace_stops_the_running_occurrence_and_starts_the_new_one_after_it(harness: Harness) -> None:
    job_id = _running_long(harness, overlap="replace")
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    assert harness.node.run_pass().fired == []  # 09:02 waits until 09:01 has ended: never side by side
    assert harness.runner.cancelled == [f"{job_id}-1"]  # this node holds it: it is stopped at once
    assert len(harness.runner.calls) == 1
    waiting = harness.job("long")
    assert (waiting["state"], waiting["buffered_for"]) == ("running", "2026-03-02T09:02:00+01:00")

    harness.node.wait_for_runs()  # the stopped run ends, and is recorded
    assert harness.node.run_pass().fired == [f"{job_id}-2"]  # the waiting one starts
    harness.runner.hold["long"].set()
    harness.node.wait_for_runs()
    runs = harness.ok("history", name="long")["runs"]
    assert [(run["fire_id"], run["outcome"]) for run in runs] == [
        (f"{job_id}-2", "ok"),
        (f"{job_id}-1", "cancelled"),
    ]
    assert [call.scheduled_for for call in harness.runner.calls] == [
        at("2026-03-02T09:01:00+01:00"),
        at("2026-03-02T09:02:00+01:00"),
    ]
    shown = harness.job("long")
    assert (shown["cancelled"], shown["buffered"], shown["buffered_for"]) == (1, 0, None)
    assert (shown["state"], shown["skipped"]["overlap"]) == ("active", 0)
    kinds = harness.events.kinds()
    assert kinds.count(EventKind.JOB_CANCELLED) == 1
    assert EventKind.JOB_RUN_FAILED not in kinds  # a cancelled run is the policy, not a failure


def test_a_cancelled_run_leaves_the_failure_count_and_the_breaker_alone(harness: Harness) -> None:
    harness.runner.outcomes["long"] = [Outcome.ERROR]
    harness.create("long", {"every": "1m"}, overlap="replace", breaker_threshold=2)
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.tick()  # 09:01 fails: one failure in a row
    assert harness.job("long")["consecutive_failures"] == 1
    harness.runner.hold["long"] = threading.Event()
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    harness.node.run_pass()  # 09:02 runs, held
    assert harness.runner.started.wait(10)
    harness.clock.set(at("2026-03-02T09:03:00+01:00"))
    harness.node.run_pass()  # 09:03 replaces it
    harness.node.wait_for_runs()
    shown = harness.job("long")
    # Counted as a failure, it would make two in a row and the breaker would pause the job.
    assert (shown["state"], shown["consecutive_failures"], shown["cancelled"]) == ("active", 1, 1)
    assert shown["last_run"]["outcome"] == "cancelled"
    assert harness.events.kinds().count(EventKind.JOB_RUN_FAILED) == 1  # 09:01's only
    assert harness.events.kinds().count(EventKind.JOB_BREAKER_PAUSED) == 0


def test_a_cancelled_run_is_not_retried(harness: Harness) -> None:
    job_id = _running_long(harness, overlap="replace", max_attempts=3)
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    harness.node.run_pass()
    harness.node.wait_for_runs()
    harness.runner.hold["long"].set()
    drive.tick(harness.node)
    assert [(call.fire_id, call.attempt) for call in harness.runner.calls] == [
        (f"{job_id}-1", 1),
        (f"{job_id}-2", 1),
    ]


def test_replace_drops_a_retry_waiting_for_its_backoff_and_fires_the_new_one(harness: Harness) -> None:
    harness.runner.outcomes["flaky"] = [Outcome.ERROR]
    harness.create("flaky", {"every": "1m"}, overlap="replace", max_attempts=3, retry_backoff_ms=600_000)
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.tick()  # 09:01 fails; its retry waits ten minutes
    assert harness.job("flaky")["state"] == "running"
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    report = harness.node.run_pass()  # nothing runs, so nothing is stopped: 09:02 fires at once
    assert len(report.fired) == 1
    harness.node.wait_for_runs()
    assert [(call.scheduled_for, call.attempt) for call in harness.runner.calls] == [
        (at("2026-03-02T09:01:00+01:00"), 1),
        (at("2026-03-02T09:02:00+01:00"), 1),
    ]
    shown = harness.job("flaky")
    assert (shown["cancelled"], shown["state"], shown["last_run"]["outcome"]) == (1, "active", "ok")
    assert harness.runner.cancelled == []


def test_replace_in_the_engine_marks_the_flight_and_keeps_only_the_newest_waiting(harness: Harness) -> None:
    job_id = _running_long(harness, overlap="replace")
    running = harness.node.store.get(job_id)
    assert running is not None and running.in_flight is not None
    rules = harness.node.rules

    marked = engine.tend(running, at("2026-03-02T09:02:00+01:00"), rules)
    assert marked.fire is None and marked.job.state is State.RUNNING
    assert marked.job.in_flight is not None and marked.job.in_flight.cancel
    assert marked.job.in_flight.fire_id == running.in_flight.fire_id
    assert marked.job.buffered_for == at("2026-03-02T09:02:00+01:00")
    assert [e.kind for e in marked.events] == [EventKind.JOB_CANCELLED]

    # The stop has not landed by 09:03:30: 09:03 waits in 09:02's place, which is dropped, counted.
    later = engine.tend(marked.job, at("2026-03-02T09:03:30+01:00"), rules)
    assert later.job.buffered_for == at("2026-03-02T09:03:00+01:00")
    assert later.job.skipped_overlap == 1 and later.job.buffered == 0
    assert [e.kind for e in later.events] == [EventKind.JOB_SKIPPED]  # asked to stop once only
    assert later.job.next_run_at == at("2026-03-02T09:04:00+01:00")


@pytest.mark.parametrize("policy", ["skip", "buffer_one"])
def test_skip_and_buffer_one_never_stop_the_running_occurrence(harness: Harness, policy: str) -> None:
    _running_long(harness, overlap=policy)
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    harness.node.run_pass()
    assert harness.runner.cancelled == []
    flight = harness.node.store.get(int(harness.job("long")["id"]))
    assert flight is not None and flight.in_flight is not None and not flight.in_flight.cancel
    harness.runner.hold["long"].set()
    drive.tick(harness.node)
    runs = harness.ok("history", name="long")["runs"]
    assert [run["outcome"] for run in runs] == (["ok"] if policy == "skip" else ["ok", "ok"])
    assert harness.job("long")["cancelled"] == 0


def test_a_replace_logs_at_info_as_normal_operation(caplog: pytest.LogCaptureFixture) -> None:
    from cronwright.telemetry.sinks import LogSink

    with caplog.at_level(logging.INFO, logger="cronwright.events"):
        LogSink().emit(Event(EventKind.JOB_CANCELLED, 1, "long", {"fire_id": "1-1"}))
    assert [record.levelno for record in caplog.records] == [logging.INFO]


def test_a_process_that_only_waits_for_its_run_stops_it_when_another_node_replaces_it(
    harness: Harness, tmp_path: Path
) -> None:
    # A `run-now` without a serving node runs the occurrence itself and only waits for it (no passes):
    # its beats still read its rows, so a replace decided by another node stops the run there.
    runner = ScriptedRunner(hold={"long": threading.Event()})
    settings = NodeSettings(lease_beat=timedelta(milliseconds=50), lease_ttl=timedelta(hours=1), zone=BERLIN)
    cli = Node(SqliteStore(tmp_path / "cronwright.db"), runner, harness.clock, MemorySink(), settings, "cli")
    # A cron job stays on its grid at a run_now, so 09:01 comes due well within the CLI's lease.
    job_id = int(harness.create("long", {"cron": "* * * * *"}, overlap="replace")["id"])
    harness.clock.set(at("2026-03-02T09:00:50+01:00"))
    cli.run_now(job_id)
    assert runner.started.wait(10)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(cli.wait_for_runs, 20)
        harness.clock.set(at("2026-03-02T09:01:00+01:00"))
        assert harness.node.run_pass().fired == []  # the serving node marks the run the CLI holds
        marked = harness.node.store.get(job_id)
        assert marked is not None and marked.in_flight is not None and marked.in_flight.cancel
        waiting.result(timeout=20)  # the held run lasts 30 s: only the stop ends the wait this soon
    assert runner.cancelled == [f"{job_id}-1"]
    assert harness.node.run_pass().fired == [f"{job_id}-2"]  # the waiting occurrence, once it was recorded
    harness.node.wait_for_runs()
    runs = harness.ok("history", name="long")["runs"]
    assert [(run["fire_id"], run["outcome"], run["node"]) for run in runs] == [
        (f"{job_id}-2", "ok", harness.node.id),
        (f"{job_id}-1", "cancelled", "cli"),
    ]
    cli.stop()
