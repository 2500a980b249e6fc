"""The MCP tools, through the SDK's own client connected in process: what an agent sees and gets."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from cronwright.app import App
from cronwright.core.sources import Source
from cronwright.fronts.mcp import MCP_LIST_PAGE, build_server
from mcp_blocks import text_of
from serving import make_app

TOOLS = {
    "schedules_create", "schedules_list", "schedules_get", "schedules_update", "schedules_delete",
    "schedules_pause", "schedules_resume", "schedules_run_now", "schedules_history", "schedules_preview",
    "schedules_targets", "schedules_audit", "schedules_notifications", "schedules_backfill",
}  # fmt: skip


@pytest.fixture
def app(tmp_path: Path) -> Any:
    made = make_app(tmp_path)
    yield made
    made.close()


def as_source(app: App, name: str, session: Callable[[Client], Awaitable[None]]) -> None:
    source: Source = app.config.source(name)

    async def main() -> None:
        async with Client(build_server(app.protocol, lambda request: source)) as client:
            await session(client)

    anyio.run(main)


def test_every_tool_and_every_argument_is_described(app: App) -> None:
    async def session(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 40, tool.name
            for argument, schema in tool.input_schema.get("properties", {}).items():
                assert schema.get("description"), f"{tool.name}.{argument} is not described"
        create = tools["schedules_create"].input_schema
        assert set(create["required"]) == {"name", "target", "action"}
        assert {"schedule", "run_at", "args", "lifetime", "misfire", "max_attempts", "retry_backoff_ms",
                "breaker_threshold", "dedupe_key", "once"} <= set(create["properties"])  # fmt: skip

    as_source(app, "agent", session)


def test_the_tools_carry_the_right_annotations(app: App) -> None:
    async def session(client: Client) -> None:
        hints = {tool.name: tool.annotations for tool in (await client.list_tools()).tools}

        for name in ("schedules_list", "schedules_get", "schedules_history", "schedules_preview",
                     "schedules_targets"):  # fmt: skip
            hint = hints[name]
            assert hint is not None and hint.read_only_hint is True, name
        delete = hints["schedules_delete"]
        assert delete is not None and (delete.destructive_hint, delete.idempotent_hint) == (True, True)
        update = hints["schedules_update"]
        assert update is not None and update.destructive_hint is True
        create = hints["schedules_create"]
        assert create is not None and (create.read_only_hint, create.destructive_hint) == (False, False)
        run_now = hints["schedules_run_now"]
        assert run_now is not None and (run_now.idempotent_hint, run_now.open_world_hint) == (False, True)

    as_source(app, "agent", session)


def test_an_agent_creates_lists_pauses_and_deletes_a_schedule(app: App) -> None:
    async def session(client: Client) -> None:
        created = await client.call_tool(
            "schedules_create",
            {"name": "standup", "target": "reports", "action": "daily",
             "schedule": {"cron": "0 9 * * MON-FRI"}, "args": {"team": "ops"}, "lifetime": "7d"},
        )  # fmt: skip
        assert not created.is_error, created.content
        assert created.structured_content is not None
        job = created.structured_content["job"]
        assert (job["created_by"], job["next_run_at"], job["ends_at"]) == (
            "agent", "2026-03-03T09:00:00+01:00", "2026-03-09T09:00:00+01:00",
        )  # fmt: skip

        listed = await client.call_tool("schedules_list", {})
        assert [j["name"] for j in (listed.structured_content or {})["jobs"]] == ["standup"]

        paused = await client.call_tool("schedules_pause", {"name": "standup"})
        assert (paused.structured_content or {})["job"]["state"] == "paused"

        deleted = await client.call_tool("schedules_delete", {"name": "standup"})
        assert (deleted.structured_content or {})["job"]["name"] == "standup"
        assert (await client.call_tool("schedules_list", {})).structured_content == {"ok": True, "jobs": []}

    as_source(app, "agent", session)


def unlimited_agent(app: App, jobs: int) -> Source:
    """The agent without its quota, holding `jobs` schedules named job-000, job-001, ..."""
    agent = app.config.source("agent")
    agent = Source(agent.name, targets=agent.targets)
    for index in range(jobs):
        job = {
            "name": f"job-{index:03d}",
            "target": "reports",
            "action": "daily",
            "schedule": {"every": "1h"},
        }
        assert app.protocol.dispatch({"action": "create_job", "job": job}, agent)["ok"]
    return agent


def list_pages(app: App, agent: Source, *calls: dict[str, Any]) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []

    async def main() -> None:
        async with Client(build_server(app.protocol, lambda request: agent)) as client:
            for arguments in calls:
                pages.append((await client.call_tool("schedules_list", arguments)).structured_content or {})

    anyio.run(main)
    return pages


def test_an_agent_lists_its_schedules_a_page_at_a_time(app: App) -> None:
    agent = unlimited_agent(app, 3)

    first, rest = list_pages(app, agent, {"limit": 2}, {"limit": 2, "after_name": "job-001"})

    assert [job["name"] for job in first["jobs"]] == ["job-000", "job-001"]
    assert first["next_after_name"] == "job-001"
    assert [job["name"] for job in rest["jobs"]] == ["job-002"]
    assert "next_after_name" not in rest


def test_an_agents_list_is_one_bounded_page_by_default(app: App) -> None:
    agent = unlimited_agent(app, MCP_LIST_PAGE + 1)

    (page,) = list_pages(app, agent, {})

    assert len(page["jobs"]) == MCP_LIST_PAGE
    assert page["next_after_name"] == f"job-{MCP_LIST_PAGE - 1:03d}"


def test_a_refusal_is_a_tool_error_that_says_what_to_fix(app: App) -> None:
    async def session(client: Client) -> None:
        refused = await client.call_tool(
            "schedules_create",
            {"name": "never", "target": "reports", "action": "daily", "schedule": {"cron": "0 0 30 2 *"}},
        )

        assert refused.is_error
        text = text_of(refused)
        assert "cron expression '0 0 30 2 *' can never fire: February has no 30th" in text
        assert "[invalid, field schedule.cron]" in text

    as_source(app, "agent", session)


def test_a_typo_in_a_schedule_is_named_to_the_agent(app: App) -> None:
    async def session(client: Client) -> None:
        refused = await client.call_tool(
            "schedules_create",
            {"name": "typo", "target": "reports", "action": "daily", "schedule": {"corn": "0 7 * * *"}},
        )

        assert refused.is_error
        text = text_of(refused)
        assert "unknown key 'corn' (did you mean 'cron'?)" in text, text

    as_source(app, "agent", session)


def test_each_limit_is_a_tool_error_naming_it(app: App) -> None:
    async def session(client: Client) -> None:
        async def create(**job: Any) -> str:
            spec = {"target": "reports", "action": "daily", "schedule": {"every": "10m"}, **job}
            reply = await client.call_tool("schedules_create", spec)
            return "" if not reply.is_error else text_of(reply)

        assert "[period_too_short]" in await create(name="fast", schedule={"every": "1m"})
        assert "source 'agent's max_lifetime" in await create(name="long", lifetime="31d")
        assert await create(name="one") == ""
        assert await create(name="two") == ""
        assert "max_schedules = 2" in await create(name="three")
        assert "may not schedule backup.nightly" in await create(name="b", target="backup", action="nightly")

    as_source(app, "agent", session)


def test_a_wrongly_typed_argument_is_refused_not_coerced(app: App) -> None:
    async def session(client: Client) -> None:
        refused = await client.call_tool(
            "schedules_create",
            {"name": 7, "target": "reports", "action": "daily", "schedule": {"every": "1h"}},
        )

        assert refused.is_error
        assert "name" in text_of(refused)

    as_source(app, "agent", session)


def test_preview_checks_an_expression_before_it_is_used(app: App) -> None:
    async def session(client: Client) -> None:
        shown = await client.call_tool(
            "schedules_preview", {"expression": "30 2 * * *", "tz": "Europe/Berlin", "count": 3}
        )
        refused = await client.call_tool("schedules_preview", {"expression": "0 0 30 2 *"})

        assert shown.structured_content == {
            "ok": True,
            "expression": "30 2 * * *",
            "explanation": "At 02:30 every day",
            "tz": "Europe/Berlin",
            "firings": [
                "2026-03-03T02:30:00+01:00",
                "2026-03-04T02:30:00+01:00",
                "2026-03-05T02:30:00+01:00",
            ],
        }
        assert refused.is_error
        assert "February has no 30th" in text_of(refused)

    as_source(app, "agent", session)


def test_an_agent_sees_only_its_own_schedules_and_targets(app: App) -> None:
    async def theirs(client: Client) -> None:
        reply = await client.call_tool(
            "schedules_create", {"name": "theirs", "target": "reports", "action": "daily",
                                 "schedule": {"every": "1h"}},
        )  # fmt: skip
        assert not reply.is_error

    async def mine(client: Client) -> None:
        assert (await client.call_tool("schedules_list", {})).structured_content == {"ok": True, "jobs": []}
        got = await client.call_tool("schedules_get", {"name": "theirs"})
        assert got.is_error and "[not_found]" in text_of(got)
        targets = await client.call_tool("schedules_targets", {})
        assert targets.structured_content == {"ok": True, "targets": []}

    as_source(app, "other", theirs)
    as_source(app, "nobody", mine)


def test_update_history_and_run_now_mirror_the_protocol(app: App) -> None:
    async def session(client: Client) -> None:
        await client.call_tool(
            "schedules_create",
            {"name": "r", "target": "reports", "action": "daily", "schedule": {"every": "1h"}},
        )
        updated = await client.call_tool(
            "schedules_update",
            {"name": "r", "new_name": "renamed", "schedule": {"every": "2h"}, "max_attempts": 2},
        )
        job = (updated.structured_content or {})["job"]
        assert (job["name"], job["schedule"]["every"], job["max_attempts"]) == ("renamed", "2h", 2)
        immutable = await client.call_tool("schedules_update", {"name": "renamed"})
        assert immutable.is_error and "'changes'" in text_of(immutable)

        ran = await client.call_tool("schedules_run_now", {"name": "renamed"})
        assert not ran.is_error
        await anyio.to_thread.run_sync(app.node.wait_for_runs, 30.0)
        history = await client.call_tool("schedules_history", {"name": "renamed"})
        assert [run["outcome"] for run in (history.structured_content or {})["runs"]] == ["ok"]

    as_source(app, "agent", session)


# --- generated from the protocol's models -----------------------------------------------------------------


def test_every_tool_refuses_arguments_it_does_not_know(app: App) -> None:
    async def session(client: Client) -> None:
        tools = (await client.list_tools()).tools

        for tool in tools:
            assert tool.input_schema.get("additionalProperties") is False, tool.name
            assert tool.output_schema is not None and tool.output_schema.get("properties"), tool.name
            assert tool.description and not tool.description.startswith(" ") and "\n " not in tool.description

    as_source(app, "agent", session)


def test_an_unknown_argument_is_a_tool_error_naming_it_and_the_one_meant(app: App) -> None:
    async def session(client: Client) -> None:
        typo = await client.call_tool(
            "schedules_create",
            {
                "name": "r",
                "target": "reports",
                "action": "daily",
                "schedule": {"every": "1h"},
                "lifetme": "1h",
            },
        )
        listed = await client.call_tool("schedules_list", {"stat": "paused"})

        assert typo.is_error
        text = text_of(typo)
        assert "schedules_create has no argument 'lifetme'; did you mean 'lifetime'?" in text
        assert "[invalid, field lifetme]" in text
        assert listed.is_error and "did you mean 'state'?" in text_of(listed)
        assert (await client.call_tool("schedules_list", {})).structured_content == {"ok": True, "jobs": []}

    as_source(app, "agent", session)


def test_refusals_speak_of_tools_not_cli_verbs(app: App) -> None:
    async def session(client: Client) -> None:
        unknown = await client.call_tool(
            "schedules_create", {"name": "r", "target": "nope", "action": "x", "schedule": {"every": "1h"}}
        )
        unnamed = await client.call_tool("schedules_get", {})
        missing = await client.call_tool("schedules_get", {"name": "ghost"})

        assert "schedules_targets" in text_of(unknown)
        assert "cronwright" not in text_of(unknown)
        assert "'name' or its 'job_id'" in text_of(unnamed)
        assert "schedules_list shows" in text_of(missing)

    as_source(app, "agent", session)


def test_a_reply_is_structured_content_with_a_one_line_summary(app: App) -> None:
    async def session(client: Client) -> None:
        created = await client.call_tool(
            "schedules_create",
            {"name": "standup", "target": "reports", "action": "daily", "schedule": {"every": "1h"}},
        )
        short = await client.call_tool("schedules_list", {})
        whole = await client.call_tool("schedules_list", {"verbose": True})

        text = text_of(created)
        assert text.startswith("'standup' (reports.daily): active, next run 2026-03-02T10:00:00+01:00")
        assert "\n" not in text and "{" not in text
        row = (short.structured_content or {})["jobs"][0]
        assert set(row) == {"id", "name", "target", "action", "schedule", "state", "next_run_at", "ends_at",
                            "last_outcome"}  # fmt: skip
        assert text_of(short) == "1 schedule: standup"
        assert (whole.structured_content or {})["jobs"][0]["retry_backoff_ms"] == 1000

    as_source(app, "agent", session)


def test_a_reply_carries_its_json_in_a_text_block_too_for_clients_that_read_only_content(app: App) -> None:
    """The MCP specification: a tool that returns structured content also returns it serialized as JSON
    in a TextContent block. An agent whose client reads only `content` learns each action's args schema
    from schedules_targets, and every field of a job, not only the summary line."""

    async def session(client: Client) -> None:
        created = await client.call_tool(
            "schedules_create",
            {"name": "standup", "target": "reports", "action": "daily", "schedule": {"every": "1h"}},
        )
        replies = [
            created,
            await client.call_tool("schedules_targets", {}),
            await client.call_tool("schedules_get", {"name": "standup"}),
            await client.call_tool("schedules_list", {}),
            await client.call_tool("schedules_history", {}),
            await client.call_tool("schedules_preview", {"expression": "0 7 * * *"}),
        ]

        for reply in replies:
            assert not reply.is_error, reply.content
            assert [block.type for block in reply.content] == ["text", "text"]
            summary, whole = (text_of(reply, index) for index in range(len(reply.content)))
            assert "\n" not in summary and not summary.startswith("{")
            assert json.loads(whole) == reply.structured_content
        targets = json.loads(text_of(replies[1], 1))["targets"]
        daily = next(
            a for t in targets if t["target"] == "reports" for a in t["actions"] if a["action"] == "daily"
        )
        assert "args_schema" in daily
        # One of a thing is said in the singular (issue 35, defect 8: "1 targets", "1 runs").
        assert text_of(replies[1]).startswith("1 target: reports (")
        assert text_of(replies[2]).endswith("; 0 recent runs")
        assert json.loads(text_of(replies[2], 1))["job"]["args"] == {}

    as_source(app, "agent", session)


def test_an_agent_backfills_what_its_schedule_missed_and_pauses_with_a_note(app: App) -> None:
    async def session(client: Client) -> None:
        created = await client.call_tool(
            "schedules_create",
            {"name": "hourly", "target": "reports", "action": "daily", "schedule": {"cron": "0 * * * *"}},
        )
        assert not created.is_error, created.content
        span = {"name": "hourly", "from": "2026-03-02T06:30:00+01:00", "to": "2026-03-02T09:00:00+01:00"}
        dry = await client.call_tool("schedules_backfill", {**span, "dry_run": True})
        assert not dry.is_error, dry.content
        assert (dry.structured_content or {})["occurrences"] == [
            "2026-03-02T07:00:00+01:00",
            "2026-03-02T08:00:00+01:00",
        ]
        assert "dry run, nothing written" in str(dry.content[0])
        queued = await client.call_tool("schedules_backfill", span)
        assert (queued.structured_content or {})["queued"] == 2
        assert "queued 2 occurrences of 'hourly'" in str(queued.content[0])
        again = await client.call_tool("schedules_backfill", span)
        assert (again.structured_content or {})["queued"] == 0
        unknown = await client.call_tool("schedules_backfill", {**span, "since": "yesterday"})
        assert unknown.is_error

        note = {"name": "hourly", "note": "waiting on the vendor"}
        paused = await client.call_tool("schedules_pause", note)
        assert (paused.structured_content or {})["job"]["pause_note"] == "waiting on the vendor"
        assert "paused since 2026-03-02T09:00:00+01:00: waiting on the vendor" in str(paused.content[0])

    as_source(app, "agent", session)
