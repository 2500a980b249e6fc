"""`cronwright tick` imports only what a tick uses: a host's crontab starts it every minute, and each import
it does not need is paid at every start. Read from the real process, as Python reports its own imports."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime

import pytest

from .blackbox import TIMEOUT, Cronwright

# What the other verbs use: serve's HTTP stack, MCP and the dashboard; /metrics; rich tables on a terminal;
# http targets' and webhooks' client; email channels; none of them is configured here.
NOT_FOR_TICK = (
    "uvicorn",
    "starlette",
    "sse_starlette",
    "mcp",
    "jinja2",
    "prometheus_client",
    "rich",
    "httpx",
    "httpcore",
    "smtplib",
    "ssl",
    # The args schemas here are plain (a no-arg action's, a command's default): checked without jsonschema
    # (plainschema.py), and the protocol's request models are for requests, which a tick makes none of.
    "jsonschema",
    "referencing",
    "cronwright.protocol",
    "cronwright.declare",
    # Broker targets' libraries, and the engines over them: none is configured (semantic 43).
    "celery",
    "kombu",
    "amqp",
    "billiard",
    "redis",
    "nats",
    "cronwright.targets.brokers.celery_engine",
    "cronwright.targets.brokers.nats_engine",
)
ACTIONS = """
import cronwright

@cronwright.action
def noop() -> None:
    pass
"""


def test_a_tick_that_runs_python_and_command_actions_imports_no_http_stack_metrics_or_tables(
    cw: Cronwright,
) -> None:
    cw.add_python_target(ACTIONS)
    now = datetime.now(UTC).isoformat()
    cw.json("add", "python-now", "--target", "py", "--action", "noop", "--at", now)
    cw.json("add", "command-now", "--target", "sh", "--action", "log", "--at", now)

    argv, env = cw.command("tick", "--json")
    env["PYTHONPROFILEIMPORTTIME"] = "1"  # each import, as a line on stderr: "import time: ... | name"
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=cw.folder, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["fired"] == 2
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "cronwright.node.scheduler" in imported  # the probe reads this process's imports
    unwanted = sorted(name for name in imported if any(_within(name, top) for top in NOT_FOR_TICK))
    assert not unwanted, f"tick imported {unwanted}"
    assert os.path.exists(cw.log) and len(cw.fires()) == 1  # the command really ran
    runs = cw.json("history", "--limit", "10")["runs"]
    assert sorted(run["outcome"] for run in runs) == ["ok", "ok"]


def _imports(cw: Cronwright, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    argv, env = cw.command(*args)
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=cw.folder, timeout=TIMEOUT, check=False
    )
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done, imported


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("tick", "--help")])
def test_the_version_and_the_help_of_the_verbs_read_no_config_and_build_no_model(
    cw: Cronwright, args: tuple[str, ...]
) -> None:
    # The request models, the config's and jsonschema are most of a CLI call's start: none of them is needed
    # to say the version or list the verbs (a verb's declared options are made when that verb is read).
    done, imported = _imports(cw, *args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cronwright" in done.stdout
    assert "cronwright.fronts.cli" in imported  # the probe reads this process's imports
    heavy = ("pydantic", "jsonschema", "cronwright.config.settings", "cronwright.app", "cronwright.declare")
    unwanted = sorted(name for name in imported if any(_within(name, top) for top in heavy))
    assert not unwanted, f"{' '.join(args)} imported {unwanted}"


def test_a_verb_with_declared_options_still_makes_them_for_its_help(cw: Cronwright) -> None:
    done, imported = _imports(cw, "list", "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        "--state" in done.stdout
        and "pending|active" in done.stdout
        and "cronwright.declare.requests" in imported
    )


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_no_process_but_serves_fronts_counts_events_for_metrics(cw: Cronwright) -> None:
    # serve's fronts' process keeps the counters its /metrics reads, of the events the node's process sends
    # it (front_process.py); the node's process, a tick and every other verb's process keep none.
    from cronwright.fronts.cli.runtime import Runtime

    serving, ticking = Runtime(str(cw.config)), Runtime(str(cw.config))
    try:
        assert serving.app(boot=True, serving=True).metrics is None
        assert ticking.app(boot=True).metrics is None
    finally:
        serving.close()
        ticking.close()
