"""DESIGN semantics 9 and 10: retries belong to one occurrence; a breaker pauses a failing job."""

from __future__ import annotations

from datetime import timedelta

from conftest import Harness, at
from cronwright.core.events import EventKind
from cronwright.core.model import Outcome


def test_retry_keeps_the_fire_id_and_counts_the_attempt_with_backoff(harness: Harness) -> None:
    harness.runner.outcomes["flaky"] = [Outcome.ERROR, Outcome.TIMEOUT, Outcome.OK]
    harness.create("flaky", {"cron": "0 10 * * *"}, max_attempts=3, retry_backoff_ms=10_000)
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    assert harness.job("flaky")["state"] == "running"  # in flight while it waits for its retry
    harness.clock.set(at("2026-03-02T10:00:09+01:00"))
    assert harness.tick()["fired"] == 0  # 10 s backoff not yet over
    harness.clock.set(at("2026-03-02T10:00:10+01:00"))
    harness.tick()
    harness.clock.set(at("2026-03-02T10:00:29+01:00"))
    assert harness.tick()["fired"] == 0  # second backoff is 20 s
    harness.clock.set(at("2026-03-02T10:00:30+01:00"))
    harness.tick()
    calls = harness.runner.calls
    assert [(c.fire_id, c.attempt) for c in calls] == [("1-1", 1), ("1-1", 2), ("1-1", 3)]
    assert {c.scheduled_for for c in calls} == {at("2026-03-02T10:00:00+01:00")}
    shown = harness.job("flaky")
    assert shown["state"] == "active"
    assert shown["consecutive_failures"] == 0
    assert shown["last_run"]["attempt"] == 3


def test_pending_retry_survives_a_restart(harness: Harness) -> None:
    harness.runner.outcomes["flaky"] = [Outcome.ERROR]
    harness.create("flaky", {"cron": "0 10 * * *"}, max_attempts=2, retry_backoff_ms=60_000)
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    harness.clock.set(at("2026-03-02T10:05:00+01:00"))
    restarted = harness.restart()
    restarted.node.wait_for_runs()
    assert [(c.fire_id, c.attempt) for c in restarted.runner.calls] == [("1-1", 2)]


def test_retry_is_in_flight_for_the_overlap_rule(harness: Harness) -> None:
    harness.runner.outcomes["flaky"] = [Outcome.ERROR]
    harness.create("flaky", {"every": "1m"}, max_attempts=2, retry_backoff_ms=120_000)
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.tick()
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    assert harness.tick()["fired"] == 0
    assert harness.job("flaky")["skipped"]["overlap"] == 1


def test_breaker_pauses_after_consecutive_failed_occurrences_and_resume_resets_it(harness: Harness) -> None:
    harness.runner.outcomes["bad"] = [Outcome.ERROR] * 3
    harness.create("bad", {"cron": "0 * * * *"}, breaker_threshold=3)
    for hour in (10, 11, 12):
        harness.clock.set(at(f"2026-03-02T{hour}:00:00+01:00"))
        harness.tick()
    shown = harness.job("bad")
    assert shown["state"] == "paused"
    assert shown["paused_by"] == "breaker"
    assert shown["consecutive_failures"] == 3
    assert harness.events.kinds().count(EventKind.JOB_BREAKER_PAUSED) == 1
    harness.clock.set(at("2026-03-02T13:00:00+01:00"))
    assert harness.tick()["fired"] == 0
    resumed = harness.ok("resume", name="bad")["job"]
    assert resumed["consecutive_failures"] == 0
    assert resumed["paused_by"] is None
    assert harness.tick()["fired"] == 1  # 13:00 is within its grace


def test_a_success_resets_the_failure_count(harness: Harness) -> None:
    harness.runner.outcomes["wobbly"] = [Outcome.ERROR, Outcome.ERROR, Outcome.OK, Outcome.ERROR]
    harness.create("wobbly", {"cron": "0 * * * *"}, breaker_threshold=3)
    for hour in (10, 11, 12, 13):
        harness.clock.set(at(f"2026-03-02T{hour}:00:00+01:00"))
        harness.tick()
    shown = harness.job("wobbly")
    assert shown["state"] == "active"
    assert shown["consecutive_failures"] == 1


def test_breaker_threshold_zero_never_pauses(harness: Harness) -> None:
    harness.runner.outcomes["bad"] = [Outcome.ERROR] * 5
    harness.create("bad", {"cron": "0 * * * *"}, breaker_threshold=0)
    for hour in (10, 11, 12, 13, 14):
        harness.clock.set(at(f"2026-03-02T{hour}:00:00+01:00"))
        harness.tick()
    assert harness.job("bad")["state"] == "active"
    assert harness.job("bad")["consecutive_failures"] == 5


def test_one_shot_that_ends_failed_becomes_failed(harness: Harness) -> None:
    harness.runner.outcomes["once"] = [Outcome.CRASHED, Outcome.REFUSED]
    harness.ok(
        "create_job",
        job={"name": "once", "target": "reports", "action": "daily", "run_at": "2026-03-02T10:00:00+01:00",
             "max_attempts": 2, "retry_backoff_ms": 1000},
    )  # fmt: skip
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    harness.clock.advance(timedelta(seconds=1))
    harness.tick()
    shown = harness.job("once")
    assert shown["state"] == "failed"
    assert shown["last_run"]["outcome"] == "refused"
    assert shown["last_run"]["attempt"] == 2


def test_no_retry_fires_at_or_after_the_end(harness: Harness) -> None:
    harness.runner.outcomes["ending"] = [Outcome.ERROR]
    harness.create("ending", {"every": "1m"}, lifetime="90s", max_attempts=3, retry_backoff_ms=60_000)
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    harness.tick()
    harness.clock.set(at("2026-03-02T09:02:00+01:00"))
    harness.tick()
    assert len(harness.runner.calls) == 1
    assert harness.job("ending")["state"] == "expired"
