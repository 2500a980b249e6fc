"""DESIGN semantic 28, black-box: no run belongs to a short-lived process.

Real processes on one SQLite store: `cronwright serve`, `cronwright run-now`, and `cronwright mcp` driven
by the MCP SDK's own stdio client, which closes the server's stdin when its session ends and sends SIGTERM
two seconds later. The `slow` action runs until the test creates its release file, so a run is in flight
exactly as long as the test wants, without sleeping. In-process: tests/semantics/test_run_now_handoff.py.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .blackbox import CRONWRIGHT, Cronwright, serving, wait_for

# Short leases, so that a hand-off to a node that died is taken back within seconds.
LEASES = {"lease_beat": "1s", "lease_ttl": "3s"}


@pytest.fixture
def cw(tmp_path: Path) -> Cronwright:
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    return Cronwright(tmp_path, **LEASES)


def runs(cw: Cronwright, name: str) -> list[dict[str, Any]]:
    history = cw.json("history", name)["runs"]
    assert isinstance(history, list)
    return history


def started(cw: Cronwright) -> list[str]:
    return cw.started.read_text(encoding="utf-8").split() if cw.started.exists() else []


def mcp_run_now(cw: Cronwright, name: str) -> dict[str, Any]:
    """One MCP session over stdio, as an agent's client runs it: run_now, then the session ends."""
    params = StdioServerParameters(
        command=str(CRONWRIGHT), args=["--config", str(cw.config), "mcp"], cwd=cw.folder
    )
    replies: list[dict[str, Any]] = []

    async def session() -> None:
        async with Client(params) as client:
            result = await client.call_tool("schedules_run_now", {"name": name})
            assert not result.is_error, result
            replies.append(result.structured_content or {})

    anyio.run(session)  # returns once the SDK has closed stdin, waited, and stopped the process
    return replies[0]


def test_the_cli_hands_its_run_now_to_serve_and_the_run_outlives_the_cli(cw: Cronwright) -> None:
    cw.ok("add", "slow", "--target", "sh", "--action", "slow", "--cron", "0 10 * * *")
    with serving(cw) as serve:
        cli = cw.popen("run-now", "slow")
        wait_for("the slow run to start", lambda: len(started(cw)) == 1)
        cli.kill()  # the requester dies mid-run: the run is not its own, so nothing is lost
        cli.wait(timeout=10)
        cli.stdout and cli.stdout.close()
        cli.stderr and cli.stderr.close()
        cw.release.touch()
        wait_for("serve to record the run", lambda: bool(runs(cw, "slow")))
        (run,) = runs(cw, "slow")
        assert (run["fire_id"], run["attempt"], run["outcome"]) == (started(cw)[0], 1, "ok"), run
        assert run["node"].endswith(":serve"), "the serving node ran it"
        assert serve.poll() is None

        # Waited for, it prints the outcome, and exits 0, as a local run-now does.
        waited = cw.run("run-now", "slow")
        assert waited.rc == 0, waited
        assert waited.stdout.startswith("ran slow (") and ": ok in " in waited.stdout
        assert all(r["node"].endswith(":serve") for r in runs(cw, "slow"))


def test_a_stdio_mcp_run_now_is_run_by_serve_after_the_agent_has_gone(cw: Cronwright) -> None:
    cw.ok("add", "slow", "--target", "sh", "--action", "slow", "--cron", "0 10 * * *")
    with serving(cw):
        reply = mcp_run_now(cw, "slow")
        assert reply["handed_to"].endswith(":serve"), reply
        wait_for("the slow run to start", lambda: len(started(cw)) == 1)
        # The agent's session is over and its `cronwright mcp` process gone; the run goes on.
        cw.release.touch()
        wait_for("serve to record the run", lambda: bool(runs(cw, "slow")))
        (run,) = runs(cw, "slow")
        assert (run["outcome"], run["node"].endswith(":serve")) == ("ok", True), run
        assert cw.fires() == [f"{started(cw)[0]} 1"], "it ran once, to its end"


def test_without_serve_a_stdio_mcp_run_cut_off_by_its_client_is_recorded_interrupted_at_once(
    cw: Cronwright,
) -> None:
    cw.ok("add", "slow", "--target", "sh", "--action", "slow", "--cron", "0 10 * * *")
    reply = mcp_run_now(cw, "slow")  # no serving node: the mcp process runs it, and is stopped
    assert reply.get("handed_to") is None, reply
    # Recorded by the stopped process itself, not found later through its lease's expiry: no pass has
    # run since, and the job is active again at once.
    (run,) = runs(cw, "slow")
    assert run["outcome"] == "interrupted", run
    assert not run["node"].endswith(":serve")
    assert cw.json("show", "slow")["job"]["state"] == "active"
    assert cw.fires() == [], "the action was stopped before its end"


def test_without_serve_run_now_stopped_by_sigterm_records_its_run_interrupted_and_exits_3(
    cw: Cronwright,
) -> None:
    cw.ok("add", "slow", "--target", "sh", "--action", "slow", "--cron", "0 10 * * *")
    cli = cw.popen("run-now", "slow")
    wait_for("the slow run to start", lambda: len(started(cw)) == 1)
    cli.send_signal(signal.SIGTERM)
    out, err = cli.communicate(timeout=20)
    assert cli.returncode == 3, (out, err)
    assert ": interrupted in " in out, out
    (run,) = runs(cw, "slow")
    assert run["outcome"] == "interrupted" and run["fire_id"] == started(cw)[0]
    assert cw.json("show", "slow")["job"]["state"] == "active"


def test_a_hand_off_to_a_serve_that_died_is_taken_back_and_run_by_the_cli(cw: Cronwright) -> None:
    cw.ok("add", "quick", "--target", "sh", "--action", "log", "--cron", "0 10 * * *")
    with serving(cw) as serve:
        serve.kill()  # its last beat is fresh: the CLI hands the run to a node that is gone
        serve.wait(timeout=10)
    done = cw.run("run-now", "quick", "--json")
    assert done.rc == 0, done
    reply = json.loads(done.stdout)
    assert reply["handed_to"].endswith(":serve"), reply
    (run,) = runs(cw, "quick")
    assert run["outcome"] == "ok" and not run["node"].endswith(":serve"), run
    assert len(cw.fires()) == 1, "run once, by the CLI, once the dead node had not taken it"
    assert "no serving node took" in done.stderr, done.stderr
