"""`cronwright tick` imports only what a tick uses: a host's crontab starts it every minute, and each import
it does not need is paid at every start. Read from the real process, as Python reports its own imports."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime

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
    assert "cronwright.node" in imported  # the probe reads this process's imports
    unwanted = sorted(name for name in imported if name.split(".")[0] in NOT_FOR_TICK)
    assert not unwanted, f"tick imported {unwanted}"
    assert os.path.exists(cw.log) and len(cw.fires()) == 1  # the command really ran
    runs = cw.json("history", "--limit", "10")["runs"]
    assert sorted(run["outcome"] for run in runs) == ["ok", "ok"]


def test_only_serve_counts_events_for_metrics(cw: Cronwright) -> None:
    # serve's /metrics reads the counters its app keeps; every other verb's process has none to keep.
    from cronwright.fronts.cli import Runtime

    serving, ticking = Runtime(str(cw.config)), Runtime(str(cw.config))
    try:
        counted = serving.app(boot=True, serving=True).metrics
        assert counted is not None
        assert "cronwright_runs_total" in {metric.name + "_total" for metric in counted.collect()}
        assert ticking.app(boot=True).metrics is None
    finally:
        serving.close()
        ticking.close()
