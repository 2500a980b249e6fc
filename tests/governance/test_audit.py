"""The audit log (semantic 36): one durable entry per mutation, written in its transaction; none for a
refusal; a source reads its own entries only, by every front."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import Harness
from cronwright.core.sources import Source
from cronwright.declare.requests import Request
from cronwright.service.seeds import upsert_seeds
from cronwright.store.base import WriteSet
from protocol.support import agent, create
from serving import Live, bearer

AGENT = agent(max_schedules=5)


def entries(harness: Harness, **fields: Any) -> list[dict[str, Any]]:
    reply = harness.ok("audit", limit=1000, **fields)
    found: list[dict[str, Any]] = reply["entries"]
    return found


def one_more(harness: Harness, before: int) -> dict[str, Any]:
    """The one entry written since there were `before`: exactly one."""
    found = entries(harness)
    assert len(found) == before + 1, found
    return found[0]


def send(harness: Harness, request: dict[str, Any], source: Source = AGENT) -> dict[str, Any]:
    reply = harness.protocol.dispatch({**request, "request_id": "req-9"}, source)
    assert reply["ok"], reply
    return reply


def test_each_mutation_verb_writes_one_entry_with_its_before_and_after(harness: Harness) -> None:
    made = send(harness, create("report", origin={"via": "test"}))["job"]
    created = one_more(harness, 0)
    assert created["action"] == "create" and created["source"] == "agent" and created["request_id"] == "req-9"
    assert created["job_id"] == made["id"] and created["name"] == "report"
    assert created["origin"] == {"via": "test"}
    assert created["changes"]["state"] == [None, "active"]
    assert created["changes"]["schedule"] == [None, {"cron": "0 10 * * *", "tz": "Europe/Berlin"}]
    assert created["at"] == "2026-03-02T09:00:00+01:00"

    harness.clock.advance(timedelta(minutes=1))
    send(harness, {"action": "update", "name": "report", "changes": {"schedule": {"cron": "30 7 * * *"}}})
    updated = one_more(harness, 1)
    assert updated["action"] == "update" and updated["at"] == "2026-03-02T09:01:00+01:00"
    assert updated["changes"]["schedule"] == [
        {"cron": "0 10 * * *", "tz": "Europe/Berlin"},
        {"cron": "30 7 * * *", "tz": "Europe/Berlin"},
    ]
    assert updated["changes"]["next_run_at"] == ["2026-03-02T10:00:00+01:00", "2026-03-03T07:30:00+01:00"]
    assert "updated_at" not in updated["changes"] and "id" not in updated["changes"]

    send(harness, {"action": "pause", "name": "report"})
    paused = one_more(harness, 2)
    assert paused["action"] == "pause"
    assert paused["changes"] == {
        "state": ["active", "paused"],
        "paused_by": [None, "source"],
        "paused_at": [None, "2026-03-02T09:01:00+01:00"],
    }

    send(harness, {"action": "resume", "name": "report"})
    resumed = one_more(harness, 3)
    assert resumed["changes"] == {
        "state": ["paused", "active"],
        "paused_by": ["source", None],
        "paused_at": ["2026-03-02T09:01:00+01:00", None],
    }

    send(harness, {"action": "run_now", "name": "report"})
    ran = one_more(harness, 4)
    assert ran["action"] == "run_now" and ran["changes"]["state"] == ["active", "running"]
    harness.node.wait_for_runs()
    harness.tick()  # records the run; a pass is no mutation by a source: no entry
    assert len(entries(harness)) == 5

    send(harness, {"action": "delete", "name": "report"})
    deleted = one_more(harness, 5)
    assert deleted["action"] == "delete" and deleted["changes"]["state"] == ["active", None]
    assert deleted["changes"]["name"] == ["report", None]
    verbs = ["delete", "run_now", "resume", "pause", "update", "create"]
    assert [e["action"] for e in entries(harness)] == verbs


def test_a_seeds_upsert_is_audited_once_and_an_unchanged_seed_not_at_all(harness: Harness) -> None:
    seed = {"dedupe_key": "nightly", "name": "nightly", "target": "reports", "action": "daily",
            "schedule": {"cron": "0 3 * * *"}}  # fmt: skip
    upsert_seeds(harness.service, [seed])
    upsert_seeds(harness.service, [seed])  # a second boot: nothing changed, nothing written
    upsert_seeds(harness.service, [{**seed, "args": {"n": 1}}])

    found = entries(harness)
    assert [(e["action"], e["source"]) for e in found] == [("seed", "cli"), ("seed", "cli")]
    assert found[0]["changes"] == {"args": [{}, {"n": 1}]}


def test_a_refused_or_failed_mutation_writes_no_entry(harness: Harness) -> None:
    harness.create("report", {"cron": "0 10 * * *"})
    quota = agent(max_schedules=0)
    refusals = [
        ({"action": "resume", "name": "report"}, "job_not_paused", None),
        ({"action": "update", "name": "report", "changes": {"target": "backup"}}, "immutable_field", None),
        ({"action": "update", "name": "report", "changes": {"schedule": {"every": "1s"}}}, "period_too_short",
         None),
        ({"action": "delete", "name": "missing"}, "not_found", None),
        ({"action": "pause", "name": "report"}, "not_found", AGENT),  # another source's job: not its to see
        (create("report"), "name_taken", None),
        (create("extra"), "quota_exceeded", quota),
        ({**create("dry"), "dry_run": True}, None, None),  # a dry run is no mutation either
    ]  # fmt: skip
    before = entries(harness)
    for request, code, source in refusals:
        reply = harness.protocol.dispatch(request, source or Source("cli", operator=True))
        assert reply.get("error") == code, (request, reply)

    assert entries(harness) == before


def test_a_lost_race_writes_no_entry(harness: Harness) -> None:
    """A change whose compare-and-swap loses to another writer is refused, and audits nothing."""
    harness.create("report", {"cron": "0 10 * * *"})
    job = harness.service.store.find("report")
    assert job is not None
    harness.service.store.save(WriteSet([job.evolve(occurrences=9)]))  # another writer moved the row on
    entry = harness.service.entry("pause", Request(), AGENT, job, job)

    changed = job.evolve(occurrences=1)
    written = harness.service.store.save(WriteSet([changed], audit=[entry]))

    assert written.of(changed).value == "lost"
    assert [e["action"] for e in entries(harness)] == ["create"]


def test_a_source_reads_its_own_entries_and_those_about_its_schedules(harness: Harness) -> None:
    other = Source("other", targets=("reports.*",))
    send(harness, create("mine"))
    send(harness, create("theirs"), other)
    harness.ok("pause", name="mine")  # the operator, on the agent's schedule

    def seen(reader: Source, **fields: Any) -> list[tuple[str, str]]:
        reply = harness.protocol.dispatch({"action": "audit", **fields}, reader)
        return [(e["action"], e["name"]) for e in reply["entries"]]

    assert seen(AGENT) == [("pause", "mine"), ("create", "mine")]
    assert seen(other) == [("create", "theirs")]
    assert seen(AGENT, name="theirs") == [] and seen(AGENT, source="other") == []
    assert seen(AGENT, source="cli") == [("pause", "mine")]
    assert seen(Source("cli", operator=True)) == [("pause", "mine"), ("create", "theirs"), ("create", "mine")]


def test_entries_come_in_pages_and_follow_a_renamed_schedule(harness: Harness) -> None:
    harness.create("report", {"cron": "0 10 * * *"})
    harness.ok("update", name="report", changes={"name": "daily-report"})
    harness.ok("pause", name="daily-report")

    first = harness.ok("audit", name="daily-report", limit=2)
    rest = harness.ok("audit", name="daily-report", limit=2, before=first["next_before"])

    assert [e["action"] for e in first["entries"]] == ["pause", "update"]
    assert [e["action"] for e in rest["entries"]] == ["create"] and "next_before" not in rest


def test_a_pass_drops_entries_past_the_retention(harness: Harness) -> None:
    harness.create("old", {"cron": "0 10 * * *"})
    harness.clock.advance(timedelta(days=91))
    harness.create("new", {"cron": "0 10 * * *"})

    harness.node.run_pass()

    assert [e["name"] for e in entries(harness)] == ["new"]


def test_a_source_cannot_read_anothers_entries_over_http_or_mcp(live: Live) -> None:
    assert live.create("agent", "mine").status_code == 200
    assert live.create("other", "theirs").status_code == 200

    def over_http(source: str, query: str = "") -> list[str]:
        reply = live.http.get(f"/v1/audit{query}", headers=bearer(source))
        assert reply.status_code == 200, reply.text
        return [e["name"] for e in reply.json()["entries"]]

    assert over_http("agent") == ["mine"] and over_http("other") == ["theirs"]
    assert over_http("agent", "?name=theirs") == [] and over_http("agent", "?source=other") == []

    async def over_mcp(source: str, arguments: dict[str, Any]) -> list[str]:
        async with (
            httpx2.AsyncClient(headers=bearer(source), timeout=30) as http,
            Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
        ):
            result = await client.call_tool("schedules_audit", arguments)
            assert not result.is_error, result
            assert result.structured_content is not None
            return [e["name"] for e in result.structured_content["entries"]]

    assert anyio.run(over_mcp, "agent", {}) == ["mine"]
    assert anyio.run(over_mcp, "agent", {"name": "theirs"}) == []
    assert anyio.run(over_mcp, "other", {"source": "agent"}) == []
