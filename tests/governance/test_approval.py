"""Approval (semantic 37): a source with `approval = "operator"` leaves its new and re-timed schedules
`pending`; they never fire until an operator approves them, which arms them from that moment."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import anyio
import pytest
from mcp import Client

import pg
from conftest import Harness, ScriptedRunner, make_harness
from cronwright.clock import ManualClock
from cronwright.config.settings import parse
from cronwright.core.sources import Source, operator
from cronwright.fronts.mcp import build_server, summary
from protocol.support import agent, create

CAREFUL = agent(max_schedules=2, needs_approval=True)


def send(harness: Harness, request: dict[str, Any], source: Source = CAREFUL) -> dict[str, Any]:
    reply = harness.protocol.dispatch(request, source)
    assert reply["ok"], reply
    return reply


def hourly(name: str = "report") -> dict[str, Any]:
    return create(name, schedule={"every": "1h"})


def test_a_create_by_a_source_that_needs_approval_is_pending_and_says_so(harness: Harness) -> None:
    reply = send(harness, hourly())

    assert reply["awaiting_approval"] is True
    assert reply["job"]["state"] == "pending" and reply["job"]["next_run_at"] is None
    assert [row["name"] for row in harness.ok("list", state="pending")["jobs"]] == ["report"]
    text = summary("create_job", reply)
    assert "awaits an operator's approval" in text and "approves it" in text and "rejects it" in text


def test_a_pending_job_never_fires_across_passes_and_a_restart(harness: Harness) -> None:
    send(harness, hourly())
    for _ in range(3):
        harness.clock.advance(timedelta(hours=1, minutes=1))
        assert harness.tick()["fired"] == 0

    restarted = harness.restart()
    restarted.clock.advance(timedelta(hours=2))
    assert restarted.tick()["fired"] == 0 and restarted.runner.calls == [] and harness.runner.calls == []
    assert restarted.job("report")["state"] == "pending"


def test_a_pending_job_counts_against_the_quota(harness: Harness) -> None:
    send(harness, hourly("one"))
    send(harness, hourly("two"))

    assert harness.protocol.dispatch(hourly("three"), CAREFUL)["error"] == "quota_exceeded"


def test_approve_arms_from_the_moment_of_approval(harness: Harness) -> None:
    send(harness, hourly())  # at 09:00
    harness.clock.advance(timedelta(hours=2, minutes=20))

    approved = harness.ok("approve", name="report", note="checked the target")

    assert "awaiting_approval" not in approved
    assert approved["job"]["state"] == "active"
    assert approved["job"]["next_run_at"] == "2026-03-02T12:20:00+01:00"  # an hour after 11:20
    harness.clock.advance(timedelta(hours=1))
    assert harness.tick()["fired"] == 1
    # A pass's firing is no mutation by a source: the newest entry is the approval.
    newest, first = harness.ok("audit", name="report")["entries"]
    assert (newest["action"], newest["source"], newest["note"]) == ("approve", "cli", "checked the target")
    assert newest["changes"]["state"] == ["pending", "active"] and first["action"] == "create"


def test_reject_deletes_and_audits(harness: Harness) -> None:
    made = send(harness, hourly())["job"]

    rejected = harness.ok("reject", name="report", note="too often")

    assert rejected["job"]["id"] == made["id"]
    assert harness.call("get", name="report")["error"] == "not_found"
    newest = harness.ok("audit")["entries"][0]
    assert (newest["action"], newest["note"], newest["job_id"]) == ("reject", "too often", made["id"])
    # The source reads the decision about its own schedule.
    seen = send(harness, {"action": "audit"})["entries"]
    assert [e["action"] for e in seen] == ["reject", "create"]


def test_only_the_operator_decides_and_only_pending_jobs(harness: Harness) -> None:
    send(harness, hourly())
    harness.create("active", {"every": "1h"})

    for verb in ("approve", "reject"):
        assert harness.protocol.dispatch({"action": verb, "name": "report"}, CAREFUL)["error"] == "invalid"
        refused = harness.call(verb, name="active")
        assert (refused["error"], refused["state"]) == ("job_not_pending", "active")
    assert harness.job("report")["state"] == "pending"


def test_a_pending_job_cannot_run_now_pause_or_resume(harness: Harness) -> None:
    send(harness, hourly())

    for verb in ("run_now", "pause"):
        refused = harness.protocol.dispatch({"action": verb, "name": "report"}, CAREFUL)
        assert (refused["error"], refused["state"]) == ("job_not_active", "pending"), refused
        assert "approval" in refused["message"]
    resumed = harness.protocol.dispatch({"action": "resume", "name": "report"}, CAREFUL)
    assert resumed["error"] == "job_not_paused"


def test_a_change_of_timing_or_args_waits_again_and_other_changes_do_not(harness: Harness) -> None:
    send(harness, hourly())
    harness.ok("approve", name="report")

    misfire = send(harness, {"action": "update", "name": "report", "changes": {"misfire": "coalesce"}})
    assert misfire["job"]["state"] == "active" and "awaiting_approval" not in misfire
    retimed = send(harness, {"action": "update", "name": "report", "changes": {"schedule": {"every": "2h"}}})
    assert retimed["job"]["state"] == "pending" and retimed["awaiting_approval"] is True
    harness.ok("approve", name="report")
    new_args = send(harness, {"action": "update", "name": "report", "changes": {"args": {"team": "ops"}}})
    assert new_args["job"]["state"] == "pending"


def test_a_dry_run_says_it_would_wait_and_shows_the_firings_once_approved(harness: Harness) -> None:
    reply = send(harness, {**hourly(), "dry_run": True})

    assert reply["dry_run"] and reply["awaiting_approval"] and reply["job"]["state"] == "pending"
    assert reply["firings"][0] == "2026-03-02T10:00:00+01:00"
    assert harness.ok("audit")["entries"] == []


def test_an_operator_session_over_mcp_has_schedules_approve_and_a_source_has_not(harness: Harness) -> None:
    send(harness, hourly())

    async def tools(source: Source, is_operator: bool) -> set[str]:
        server = build_server(harness.protocol, lambda request: source, operator=is_operator)
        async with Client(server) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            if is_operator:
                result = await client.call_tool("schedules_approve", {"name": "report", "note": "ok"})
                assert not result.is_error, result
            return names

    assert "schedules_approve" not in anyio.run(tools, CAREFUL, False)
    assert {"schedules_approve", "schedules_reject"} <= anyio.run(tools, operator(), True)
    assert harness.job("report")["state"] == "active"


def test_approval_is_read_from_the_config() -> None:
    config = parse({"sources": {"agent": {"targets": ["reports.*"], "approval": "operator"}, "free": {}}})

    assert config.source("agent").needs_approval and not config.source("free").needs_approval


@pytest.fixture
def two_nodes(clock: ManualClock) -> Iterator[tuple[Harness, Harness]]:
    from cronwright.store.postgres import PostgresStore

    with pg.scratch_url() as url:
        first = make_harness(PostgresStore(url), clock, ScriptedRunner())
        second = make_harness(PostgresStore(url), clock, ScriptedRunner())
        yield first, second
        for node in (first, second):
            node.runner.close()
            node.node.store.close()


def test_a_pending_job_never_fires_on_a_second_node(two_nodes: tuple[Harness, Harness]) -> None:
    first, second = two_nodes
    send(first, hourly())
    for _ in range(3):
        first.clock.advance(timedelta(hours=1, minutes=1))
        assert first.tick()["fired"] == 0 and second.tick()["fired"] == 0
    assert first.runner.calls == [] == second.runner.calls

    second.ok("approve", name="report")
    first.clock.advance(timedelta(hours=1))
    fired = first.tick()["fired"] + second.tick()["fired"]
    assert fired == 1
