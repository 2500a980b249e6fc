"""An agent's whole session through the MCP SDK (issue 15): it tries a schedule with a dry run, creates it
(pending: its source needs approval), the operator approves it with the CLI, a `tick` fires it, and the
agent reads the audit. Black-box: `cronwright mcp --source agent` over stdio and the real CLI, one SQLite
file. The transcript goes to $CRONWRIGHT_TRANSCRIPT when set (the issue's closing note quotes it)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_blocks import text_of

from .blackbox import CRONWRIGHT, Cronwright, needs_faketime

pytestmark = needs_faketime
BERLIN = ZoneInfo("Europe/Berlin")  # the node zone of the black-box config


class Transcript:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, who: str, text: str) -> None:
        self.lines.append(f"[{who}] {text}")

    def write(self, path: Path) -> None:
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")


def test_an_agent_dry_runs_creates_waits_for_approval_and_reads_the_audit(
    cw: Cronwright, tmp_path: Path
) -> None:
    with cw.config.open("a", encoding="utf-8") as config:
        config.write('\n[sources.agent]\ntargets = ["sh.*"]\nmax_schedules = 3\napproval = "operator"\n')
    # A one-shot an hour from now: the tick that fires it runs under faketime at that instant.
    run_at = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    job = {"name": "nightly-export", "target": "sh", "action": "log", "run_at": run_at.isoformat()}
    said = Transcript()
    params = StdioServerParameters(
        command=str(CRONWRIGHT),
        args=["--config", str(cw.config), "mcp", "--source", "agent"],
        cwd=cw.folder,
        env={key: value for key, value in os.environ.items() if not key.startswith("FAKETIME")},
    )

    async def tool(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        said.say("agent", f"{name} {json.dumps(arguments)}")
        result = await client.call_tool(name, arguments)
        text = text_of(result)
        said.say("cronwright", ("ERROR " if result.is_error else "") + text)
        assert not result.is_error, text
        return result.structured_content or {}

    def operator(*args: str, at: str | None = None) -> str:
        shown = " ".join(args) + (f"   (at {at})" if at else "")
        said.say("operator", f"$ cronwright {shown}")
        out = cw.ok(*args, at=at).stdout.strip()
        said.say("operator", out)
        return out

    async def session() -> None:
        async with Client(params) as client:
            await tool(client, "schedules_targets", {})
            tried = await tool(client, "schedules_create", {**job, "dry_run": True})
            assert tried["dry_run"] and tried["awaiting_approval"]
            assert tried["firings"] == [run_at.astimezone(BERLIN).isoformat()]
            made = await tool(client, "schedules_create", job)
            assert made["job"]["state"] == "pending" and made["awaiting_approval"] is True
            await anyio.to_thread.run_sync(lambda: operator("list", "--state", "pending"))
            approve = ("approve", "nightly-export", "--note", "export ok")
            await anyio.to_thread.run_sync(lambda: operator(*approve))
            fire_at = (run_at + timedelta(seconds=5)).isoformat()
            await anyio.to_thread.run_sync(lambda: operator("tick", at=fire_at))
            shown = await tool(client, "schedules_get", {"name": "nightly-export"})
            assert shown["job"]["state"] == "done" and shown["runs"][0]["outcome"] == "ok"
            audit = await tool(client, "schedules_audit", {"name": "nightly-export"})
            assert [(e["action"], e["source"]) for e in audit["entries"]] == [
                ("approve", "cli"),
                ("create", "agent"),
            ]
            assert audit["entries"][0]["note"] == "export ok"

    anyio.run(session)
    assert len(cw.fires()) == 1
    said.write(tmp_path / "transcript.txt")
    if os.environ.get("CRONWRIGHT_TRANSCRIPT"):
        said.write(Path(os.environ["CRONWRIGHT_TRANSCRIPT"]))
