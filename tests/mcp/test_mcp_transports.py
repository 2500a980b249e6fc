"""MCP over the wire, with the SDK's client: streamable HTTP at /mcp in the served app (the bearer token
picks the source), and stdio against a spawned `cronwright mcp --source NAME`."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx2
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from cronwright.fronts.cli import cli
from mcp_blocks import text_of
from serving import Live, bearer

CRONWRIGHT = str(Path(sys.executable).with_name("cronwright"))
Session = Callable[[Client], Awaitable[None]]


def over_http(live: Live, source: str, session: Session) -> None:
    async def main() -> None:
        async with (
            httpx2.AsyncClient(headers=bearer(source), timeout=30) as http,
            Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
        ):
            await session(client)

    anyio.run(main)


async def create_list_pause_delete(client: Client, target: str, action: str) -> None:
    tools = (await client.list_tools()).tools
    assert len(tools) == 14
    created = await client.call_tool(
        "schedules_create",
        {"name": "nightly", "target": target, "action": action, "schedule": {"every": "1h"}},
    )
    assert not created.is_error, created.content
    listed = await client.call_tool("schedules_list", {})
    assert [job["name"] for job in (listed.structured_content or {})["jobs"]] == ["nightly"]
    # Over the wire too, the reply's JSON is in `content`, after the summary (the MCP specification).
    assert json.loads(text_of(listed, 1)) == listed.structured_content
    paused = await client.call_tool("schedules_pause", {"name": "nightly"})
    assert (paused.structured_content or {})["job"]["state"] == "paused"
    deleted = await client.call_tool("schedules_delete", {"name": "nightly"})
    assert not deleted.is_error
    refused = await client.call_tool("schedules_create", {"name": "x", "target": "nope", "action": "no"})
    assert refused.is_error
    assert "may not schedule nope.no; schedules_targets lists what it may [target_not_allowed]" in (
        text_of(refused)
    )


def test_mcp_over_http_acts_as_the_tokens_source(live: Live) -> None:
    async def session(client: Client) -> None:
        await create_list_pause_delete(client, "reports", "daily")
        kept = await client.call_tool(
            "schedules_create",
            {"name": "kept", "target": "reports", "action": "daily", "schedule": {"every": "1h"}},
        )
        assert (kept.structured_content or {})["job"]["created_by"] == "agent"

    async def stranger(client: Client) -> None:
        got = await client.call_tool("schedules_get", {"name": "kept"})
        assert got.is_error and "[not_found]" in text_of(got)

    over_http(live, "agent", session)
    over_http(live, "other", stranger)


def test_mcp_over_http_without_a_token_gets_401(live: Live) -> None:
    reply = live.http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )

    assert reply.status_code == 401
    assert reply.content == b""


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "cronwright.toml"
    path.write_text(
        f"""
[node]
zone = "Europe/Berlin"
store = "sqlite:///{tmp_path / "cw.db"}"

[targets.echo]
kind = "command"
[targets.echo.actions.hello]
argv = ["/bin/true"]

[sources.agent]
targets = ["echo.*"]
max_schedules = 5
""",
        encoding="utf-8",
    )
    return path


def test_mcp_over_stdio_acts_as_the_configured_source(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    # The SDK starts the server with a few variables only: PYTHONPATH goes too, so that the server is the
    # code under test (a checkout ahead of the installed package) and not the installed one.
    kept = {key: os.environ[key] for key in ("PYTHONPATH",) if key in os.environ}
    params = StdioServerParameters(
        command=CRONWRIGHT, args=["--config", str(config), "mcp", "--source", "agent"], cwd=tmp_path, env=kept
    )

    async def main() -> None:
        async with Client(params) as client:
            await create_list_pause_delete(client, "echo", "hello")
            too_late = await client.call_tool(
                "schedules_create",
                {"name": "late", "target": "echo", "action": "hello", "run_at": "2099-01-01T00:00:00Z"},
            )
            assert too_late.is_error
            assert "give a longer lifetime [invalid, field run_at]" in text_of(too_late)
            shown = await client.call_tool("schedules_preview", {"expression": "@daily", "count": 1})
            assert (shown.structured_content or {})["expression"] == "0 0 * * *"

    anyio.run(main)
    listed = CliRunner().invoke(cli, ["--config", str(config), "list", "--json"])
    assert listed.exit_code == 0
    assert '"jobs": []' in listed.output


def test_mcp_with_an_unknown_source_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--config", str(write_config(tmp_path)), "mcp", "--source", "stranger"])

    assert result.exit_code == 2
    assert "no source named 'stranger' in [sources]; configured: agent" in result.output
