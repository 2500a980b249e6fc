"""Every error code of the contract, through the protocol: the code, a message, the details the contract
names (`field`, `state`, JSON paths), the echoed request_id, and a store left exactly as it was."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.sources import operator
from cronwright.store.sqlite import SqliteStore

from .support import REQUEST_ID, agent, create, refused, snapshot


def test_unknown_action(harness: Harness) -> None:
    reply = refused(harness, {"action": "schedule_everything"}, "unknown_action")
    assert "create_job" in reply["message"], "the message lists the actions there are"
    refused(harness, {"action": "LIST"}, "unknown_action")
    refused(harness, {"name": "daily"}, "unknown_action")
    refused(harness, {"action": None}, "unknown_action")
    # A request's action that is not a string is never coerced into one.
    refused(harness, {"action": ["list"]}, "unknown_action")
    refused(harness, {"action": {"list": True}}, "unknown_action")


def test_invalid_json(harness: Harness) -> None:
    for message in ("{not json", '{"action": "list"', "", "null", "[1, 2]", '"list"', b"\xff\xfe{}"):
        reply = harness.protocol.handle(message, operator())
        assert reply is not None
        assert reply["ok"] is False and reply["error"] == "invalid_json", (message, reply)
        assert reply["message"]
    not_objects: list[object] = [None, [], "list", 7]
    for request in not_objects:
        reply = harness.protocol.dispatch(request, operator())
        assert reply["error"] == "invalid_json", reply


def test_message_too_large(harness: Harness) -> None:
    before = snapshot(harness)
    reply = harness.protocol.handle(" " * 65_537, operator())
    assert reply is not None
    assert (reply["ok"], reply["error"]) == (False, "message_too_large")
    assert "65536" in reply["message"]
    assert snapshot(harness) == before


def test_invalid_names_the_field(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    cases: list[tuple[dict[str, Any], str]] = [
        ({"action": "create_job"}, "job"),
        ({"action": "create_job", "job": {"target": "reports", "action": "daily"}}, "name"),
        ({"action": "create_job", "job": {"name": "x", "action": "daily"}}, "target"),
        ({"action": "create_job", "job": {"name": "x", "target": "reports"}}, "action"),
        (create("x", schedule=None), "schedule"),
        (create("has space"), "name"),
        (create("x", colour="blue"), "colour"),
        (create("x", schedule={"cron": "0 99 * * *"}), "schedule.cron"),
        (create("x", schedule={"cron": "0 0 30 2 *"}), "schedule.cron"),
        (create("x", schedule={"cron": "0 10 * * *", "tz": "Mars/Base"}), "schedule.tz"),
        (create("x", schedule={"every": "soon"}), "schedule.every"),
        (create("x", schedule={"every": "5m", "cron": "* * * * *"}), "schedule"),
        (create("x", run_at="2026-03-01T09:00:00+01:00"), "run_at"),
        (create("x", lifetime="forever"), "lifetime"),
        (create("x", lifetime="2026-01-01T00:00:00+01:00"), "lifetime"),
        (create("x", misfire="sometimes"), "misfire"),
        (create("x", max_attempts=0), "max_attempts"),
        (create("x", breaker_threshold=-1), "breaker_threshold"),
        (create("x", once=True), "once"),
        (create("x", args={"cron": {"fire_id": "forged"}}), "args"),
        (create("x", origin={"nested": {"no": 1}}), "origin"),
        ({"action": "update", "name": "daily"}, "changes"),
        ({"action": "update", "name": "daily", "changes": {}}, "changes"),
        ({"action": "update", "name": "daily", "changes": {"colour": "blue"}}, "colour"),
        ({"action": "get"}, "name"),
        ({"action": "get", "job_id": "1"}, "job_id"),
        ({"action": "list", "state": "sleeping"}, "state"),
        ({"action": "history", "limit": 0}, "limit"),
        ({"action": "preview", "expression": "not cron"}, "expression"),
        ({"action": "preview", "expression": "0 7 * * *", "count": 0}, "count"),
        ({"action": "list", "request_id": 17}, "request_id"),
    ]
    for request, field in cases:
        reply = harness.protocol.dispatch(request, operator())
        assert (reply["ok"], reply["error"], reply.get("field")) == (False, "invalid", field), (
            request,
            reply,
        )
        assert reply["message"]
    # With a request_id that is itself fine, the refusal echoes it and changes nothing.
    refused(harness, create("x", misfire="sometimes"), "invalid", field="misfire")


def test_not_found(harness: Harness) -> None:
    for action in ("get", "update", "pause", "resume", "run_now", "delete", "history"):
        request: dict[str, Any] = {"action": action, "name": "ghost"}
        if action == "update":
            request["changes"] = {"misfire": "coalesce"}
        refused(harness, request, "not_found")
        refused(harness, {**request, "name": None, "job_id": 999}, "not_found")


def test_not_found_for_a_job_of_another_source(harness: Harness) -> None:
    harness.create("operators-own", {"cron": "0 10 * * *"})
    for action in ("get", "pause", "delete"):
        refused(harness, {"action": action, "name": "operators-own"}, "not_found", source=agent())


def test_name_taken(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.create("weekly", {"cron": "0 10 * * MON"})
    refused(harness, create("daily", schedule={"every": "1h"}), "name_taken")
    refused(harness, {"action": "update", "name": "weekly", "changes": {"name": "daily"}}, "name_taken")


def test_target_not_allowed(harness: Harness) -> None:
    refused(harness, create("x", target="nope"), "target_not_allowed")
    refused(harness, create("x", action="hourly"), "target_not_allowed")
    # A source may schedule only what its patterns allow; its list starts empty.
    backup = create("x", target="backup", action="nightly", args={"dest": "/mnt"})
    refused(harness, backup, "target_not_allowed", source=agent())
    refused(harness, create("x"), "target_not_allowed", source=agent(targets=()))


def test_args_invalid_names_json_paths(harness: Harness) -> None:
    reply = refused(harness, create("x", target="backup", action="nightly", args={}), "args_invalid")
    assert [problem["path"] for problem in reply["problems"]] == ["$"]
    assert "dest" in reply["problems"][0]["problem"]
    reply = refused(harness, create("x", target="backup", action="nightly", args={"dest": 5}), "args_invalid")
    assert [problem["path"] for problem in reply["problems"]] == ["$.dest"]
    assert "$.dest" in reply["message"]
    harness.create("nightly", {"cron": "0 3 * * *"}, target="backup", action="nightly", args={"dest": "/m"})
    update = {"action": "update", "name": "nightly", "changes": {"args": {"dest": ["/a", "/b"]}}}
    reply = refused(harness, update, "args_invalid")
    assert reply["problems"][0]["path"] == "$.dest"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("target", "backup"),
        ("action", "weekly"),
        ("dedupe_key", "other"),
        ("origin", {"source": "someone"}),
        ("created_by", "agent"),
        ("once", True),
        ("id", 99),
    ],
)
def test_immutable_field(harness: Harness, field: str, value: object) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    request = {"action": "update", "name": "daily", "changes": {"misfire": "coalesce", field: value}}
    refused(harness, request, "immutable_field", field=field)


@pytest.fixture
def held(harness: Harness) -> Iterator[threading.Event]:
    """A job `slow` whose run_now stays in flight until the test sets the event."""
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.ok("run_now", name="slow")
    assert harness.runner.started.wait(10)
    yield gate
    gate.set()
    harness.node.wait_for_runs()


def test_job_running(harness: Harness, held: threading.Event) -> None:
    update = {"action": "update", "name": "slow", "changes": {"misfire": "coalesce"}}
    refused(harness, update, "job_running", state="running")
    refused(harness, {"action": "run_now", "name": "slow"}, "job_running", state="running")
    refused(harness, {"action": "pause", "name": "slow"}, "job_running", state="running")


def test_job_not_paused_names_the_state(harness: Harness, held: threading.Event) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    refused(harness, {"action": "resume", "name": "daily"}, "job_not_paused", state="active")
    refused(harness, {"action": "resume", "name": "slow"}, "job_not_paused", state="running")
    assert len(harness.runner.calls) == 1, "a refused resume started nothing"


def test_job_not_active(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.ok("pause", name="daily")
    refused(harness, {"action": "run_now", "name": "daily"}, "job_not_active", state="paused")
    refused(harness, {"action": "pause", "name": "daily"}, "job_not_active", state="paused")


def test_job_terminal(harness: Harness) -> None:
    harness.create("once", run_at="2026-03-02T09:30:00+01:00")
    harness.create("short", {"cron": "0 12 * * *"}, lifetime="1h")
    harness.clock.set(at("2026-03-02T10:30:00+01:00"))
    harness.tick()
    assert harness.job("once")["state"] == "done"
    assert harness.job("short")["state"] == "expired"
    for name, state in (("once", "done"), ("short", "expired")):
        refused(harness, {"action": "run_now", "name": name}, "job_terminal", state=state)
        refused(harness, {"action": "pause", "name": name}, "job_terminal", state=state)
        refused(harness, {"action": "resume", "name": name}, "job_not_paused", state=state)
    change = {"misfire": "coalesce"}
    refused(harness, {"action": "update", "name": "once", "changes": change}, "job_terminal", state="done")


def test_at_max_concurrency(tmp_path: Path) -> None:
    clock = ManualClock(at("2026-03-02T09:00:00+01:00"))
    harness = make_harness(SqliteStore(tmp_path / "cronwright.db"), clock, max_concurrency=1)
    gate = threading.Event()
    harness.runner.hold["first"] = gate
    try:
        harness.create("first", {"cron": "0 10 * * *"})
        harness.create("second", {"cron": "0 10 * * *"})
        harness.ok("run_now", name="first")
        refused(harness, {"action": "run_now", "name": "second"}, "at_max_concurrency")
    finally:
        gate.set()
        harness.node.wait_for_runs()
    assert harness.ok("run_now", name="second")["job"]["state"] == "running"
    harness.node.wait_for_runs()


def test_quota_exceeded(harness: Harness) -> None:
    source = agent()
    assert harness.protocol.dispatch(create("mine"), source)["ok"]
    reply = refused(harness, create("another"), "quota_exceeded", source=source)
    assert reply["max_schedules"] == 1
    # The operator has no quota.
    assert harness.call("create_job", job=create("another")["job"])["ok"]


def test_period_too_short(harness: Harness) -> None:
    reply = refused(harness, create("x", schedule={"every": "1m"}), "period_too_short", source=agent())
    assert reply["min_period"] == "5m"
    refused(harness, create("x", schedule={"every_ms": 299_999}), "period_too_short", source=agent())
    assert harness.protocol.dispatch(create("x", schedule={"every": "5m"}), agent())["ok"]
    # The node's floor (60s here) binds the operator too.
    refused(harness, create("y", schedule={"every": "59s"}), "period_too_short")


def test_lifetime_too_long(harness: Harness) -> None:
    refused(harness, create("x", lifetime="31d"), "lifetime_too_long", source=agent())
    refused(harness, create("x", lifetime="2026-04-02T09:00:01+01:00"), "lifetime_too_long", source=agent())
    assert harness.protocol.dispatch(create("x", lifetime="30d"), agent())["ok"]
    refused(harness, create("y", lifetime="91d"), "lifetime_too_long")
    renew = {"action": "update", "name": "x", "changes": {"lifetime": "P31D"}}
    refused(harness, renew, "lifetime_too_long", source=agent())


def test_every_refusal_echoes_the_request_id(harness: Harness) -> None:
    """The echo, over one request per code that needs no setup."""
    for request in (
        {"action": "nope"},
        create("bad name"),
        {"action": "get", "name": "ghost"},
        create("x", target="nope"),
    ):
        reply = harness.protocol.dispatch({**request, "request_id": REQUEST_ID}, operator())
        assert reply["ok"] is False and reply["request_id"] == REQUEST_ID, reply
