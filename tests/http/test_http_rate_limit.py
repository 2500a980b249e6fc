"""max_mutations_per_minute over real HTTP and through the MCP tools (issue 15)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import anyio
from mcp import Client

from cronwright.clock import ManualClock
from cronwright.core.sources import operator
from cronwright.fronts.mcp import build_server
from mcp_blocks import text_of
from serving import SOURCES, live_server, make_app

LIMITED = {**SOURCES, "agent": {**SOURCES["agent"], "max_schedules": 10, "max_mutations_per_minute": 2}}


def test_a_source_past_its_rate_gets_429_with_retry_after(tmp_path: Path) -> None:
    with live_server(tmp_path, LIMITED) as served:
        assert served.create("agent", "one").status_code == 200
        assert served.call("agent", {"action": "pause", "name": "one"}).status_code == 200

        reply = served.create("agent", "two")

        assert reply.status_code == 429
        assert reply.headers["retry-after"] == "30"
        body = reply.json()
        assert (body["error"], body["retry_after"], body["max_mutations_per_minute"]) == (
            "rate_limited",
            30,
            2,
        )
        # Nothing was written, reads still answer, and another source has its own bucket.
        listed = served.http.get("/v1/jobs", headers={"Authorization": "Bearer agent-secret-token"})
        assert [job["name"] for job in listed.json()["jobs"]] == ["one"]
        assert served.create("other", "theirs").status_code == 200

        clock = served.app.node.clock
        assert isinstance(clock, ManualClock)
        clock.advance(timedelta(seconds=30))
        assert served.create("agent", "two").status_code == 200
        assert served.create("agent", "three").status_code == 429


def test_a_rate_limited_mcp_tool_call_is_a_tool_error_naming_it(tmp_path: Path) -> None:
    app = make_app(tmp_path, LIMITED)
    source = app.config.source("agent")

    async def main() -> None:
        async with Client(build_server(app.protocol, lambda request: source)) as client:
            job = {"target": "reports", "action": "daily", "schedule": {"cron": "0 7 * * *"}}
            for name in ("one", "two"):
                made = await client.call_tool("schedules_create", {"name": name, **job})
                assert not made.is_error, made
            refused = await client.call_tool("schedules_create", {"name": "three", **job})
            assert refused.is_error
            text = text_of(refused)
            assert "[rate_limited]" in text and "retry after 30 s" in text, text

    try:
        anyio.run(main)
        listed = app.protocol.dispatch({"action": "list"}, operator())["jobs"]
        assert [job["name"] for job in listed] == ["one", "two"]
    finally:
        app.close()
