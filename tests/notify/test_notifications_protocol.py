"""The protocol's `notifications` (semantic 38): the outbox, newest first, a page at a time, with each
notification's state, attempts and next try; a source sees only those about its own schedules."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from conftest import at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.model import Outcome
from cronwright.core.sources import Source
from cronwright.declare.replies import NotificationsReply
from cronwright.notify.plan import after_failure
from cronwright.store.sqlite import SqliteStore

from .test_transitions import EVERYTHING


def test_notifications_show_state_attempts_and_next_try_newest_first_a_page_at_a_time(
    tmp_path: Path, clock: ManualClock
) -> None:
    harness = make_harness(SqliteStore(tmp_path / "cw.db"), clock, alerting=EVERYTHING)
    harness.runner.outcomes = {name: [Outcome.ERROR] for name in ("a", "b", "c")}
    for name in ("a", "b", "c"):
        harness.create(name, {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    store = harness.node.store
    [held, *_] = store.claim("node-x", clock.now(), timedelta(minutes=5), 1)
    store.settle("node-x", [after_failure(held, clock.now(), "POST http://127.0.0.1:9/ answered HTTP 503")])

    first = harness.ok("notifications", limit=2)
    NotificationsReply.model_validate(first)
    rest = harness.ok("notifications", before=first["next_before"])

    rows = first["deliveries"] + rest["deliveries"]
    assert "next_before" not in rest and len(rows) == 3
    assert {row["job"]["name"] for row in rows} == {"a", "b", "c"}
    [retried] = [row for row in rows if row["id"] == held.id]
    assert retried["state"] == "pending" and retried["attempts"] == 1
    assert retried["next_attempt_at"] == "2026-03-02T10:00:15+01:00"
    assert retried["last_error"].endswith("HTTP 503") and retried["created_at"] == "2026-03-02T10:00:00+01:00"
    assert {row["transition"] for row in rows} == {"failed"}


def test_a_source_sees_only_the_notifications_about_its_own_schedules(
    tmp_path: Path, clock: ManualClock
) -> None:
    harness = make_harness(SqliteStore(tmp_path / "cw.db"), clock, alerting=EVERYTHING)
    agent = Source("agent", targets=("reports.*",), max_schedules=5)
    harness.runner.outcomes = {"mine": [Outcome.ERROR], "theirs": [Outcome.ERROR]}
    spec = {"target": "reports", "action": "daily", "schedule": {"cron": "0 10 * * *"}}
    assert harness.protocol.dispatch({"action": "create_job", "job": {"name": "mine", **spec}}, agent)["ok"]
    harness.create("theirs", {"cron": "0 10 * * *"})
    clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()

    own = harness.protocol.dispatch({"action": "notifications"}, agent)
    every = harness.ok("notifications")

    assert [row["job"]["name"] for row in own["deliveries"]] == ["mine"]
    assert sorted(row["job"]["name"] for row in every["deliveries"]) == ["mine", "theirs"]
