"""The node, its service and protocol over a real store, with the real registry and TargetRunner.

The clock is manual, as everywhere; only the runs are real processes.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronwright.clock import ManualClock
from cronwright.core.events import FanOut, MemorySink
from cronwright.core.sources import operator
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.protocol import RequestHandler
from cronwright.service.operations import Limits, Service
from cronwright.store.sqlite import SqliteStore
from cronwright.targets.executor import TargetRunner
from cronwright.targets.registry import build_registry
from cronwright.targets.secrets import Secrets
from cronwright.telemetry.sinks import LogSink

from .conftest import PYTHON, config, write_module

BERLIN = ZoneInfo("Europe/Berlin")
PASSWORD = "pw-91c0ffee-secret"

# Appends what each attempt saw (its environment and its stdin) to a file, then fails: a real failing command.
FAILING = """
import json, os, sys
envelope = json.load(sys.stdin)
with open(os.environ["LOG_TO"], "a") as file:
    seen = {"fire_id": os.environ["CRONWRIGHT_FIRE_ID"], "attempt": os.environ["CRONWRIGHT_ATTEMPT"]}
    file.write(json.dumps({**seen, "cron": envelope["cron"]}) + "\\n")
print("backup target unreachable", file=sys.stderr)
sys.exit(1)
"""

ACTIONS = """
    import time
    import cronwright

    @cronwright.action(timeout="1s")
    def hang() -> None:
        time.sleep(60)

    @cronwright.action
    def ok() -> str:
        return "fine"

    @cronwright.action(secrets=["SMTP_PASSWORD"])
    def chatty(ctx: cronwright.Context) -> str:
        print("using", ctx.secret("SMTP_PASSWORD"))
        raise RuntimeError("auth failed with " + ctx.secret("SMTP_PASSWORD"))
"""


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


@dataclass
class Live:
    clock: ManualClock
    node: Node
    protocol: RequestHandler
    runner: TargetRunner

    def ok(self, action: str, **fields: Any) -> dict[str, Any]:
        reply = self.protocol.dispatch({"action": action, **fields}, operator())
        assert reply["ok"], reply
        return reply

    def create(self, name: str, target: str, action: str, **job: Any) -> dict[str, Any]:
        spec = {"name": name, "target": target, "action": action, **job}
        created: dict[str, Any] = self.ok("create_job", job=spec)["job"]
        return created

    def tick_at(self, instant: str) -> dict[str, Any]:
        self.clock.set(at(instant))
        return self.ok("tick")


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Live]:
    write_module(tmp_path / "scripts", "acts", ACTIONS)
    monkeypatch.setenv("LOG_TO", str(tmp_path / "attempts.jsonl"))
    targets = {
        "acts": {"kind": "python", "module": "acts", "path": ["scripts"]},
        "backup": {
            "kind": "command",
            "env": ["LOG_TO"],
            "actions": {"nightly": {"argv": [PYTHON, "-c", FAILING]}},
        },
    }
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    runner = TargetRunner(registry, Secrets(environ={"SMTP_PASSWORD": PASSWORD}), zone=BERLIN)
    clock = ManualClock(at("2026-03-02T09:00:00+01:00"))
    store = SqliteStore(tmp_path / "cronwright.db")
    events = FanOut([LogSink(), MemorySink()])
    node = Node(store, runner, clock, events, NodeSettings(shutdown_grace=timedelta(seconds=5)))
    service = Service(node, registry, Limits(BERLIN))
    node.boot()
    yield Live(clock, node, RequestHandler(service), runner)
    node.stop()
    node.store.close()


def test_retries_keep_the_fire_id_and_count_the_attempt_through_a_real_failing_command(
    live: Live, tmp_path: Path
) -> None:
    live.create("nightly-backup", "backup", "nightly", schedule={"cron": "0 3 * * *"}, max_attempts=3,
                retry_backoff_ms=1000)  # fmt: skip
    live.tick_at("2026-03-03T03:00:00+01:00")
    live.tick_at("2026-03-03T03:00:01+01:00")  # backoff 1 s
    live.tick_at("2026-03-03T03:00:03+01:00")  # backoff 2 s
    seen = [json.loads(line) for line in (tmp_path / "attempts.jsonl").read_text().splitlines()]
    assert [(s["fire_id"], s["attempt"]) for s in seen] == [(seen[0]["fire_id"], str(n)) for n in (1, 2, 3)]
    assert [s["cron"]["attempt"] for s in seen] == [1, 2, 3]
    assert {s["cron"]["scheduled_for"] for s in seen} == {"2026-03-03T03:00:00+01:00"}
    assert len({s["cron"]["fire_id"] for s in seen}) == 1
    runs = live.ok("history", name="nightly-backup")["runs"]
    assert [(r["fire_id"], r["attempt"], r["outcome"]) for r in runs] == [
        (seen[0]["fire_id"], n, "error") for n in (3, 2, 1)
    ]
    assert runs[0]["message"] == "exited with code 1: backup target unreachable"
    assert runs[0]["output"] == "[stderr]\nbackup target unreachable\n"
    shown = live.ok("get", name="nightly-backup")["job"]
    assert (shown["state"], shown["consecutive_failures"], shown["last_run"]["attempt"]) == ("active", 1, 3)


def test_a_hanging_job_times_out_while_the_node_keeps_firing_the_others(live: Live) -> None:
    live.create("stuck", "acts", "hang", schedule={"cron": "0 10 * * *"})
    live.create("healthy", "acts", "ok", schedule={"cron": "0 10 * * *"})
    assert live.tick_at("2026-03-02T10:00:00+01:00")["fired"] == 2
    outcomes = {r["schedule"]: (r["outcome"], r["message"]) for r in live.ok("history")["runs"]}
    assert outcomes == {
        "stuck": ("timeout", "ran past its deadline of 1s; the worker was killed"),
        "healthy": ("ok", "fine"),
    }
    assert live.tick_at("2026-03-03T10:00:00+01:00")["fired"] == 2  # and the pool still serves both


def test_a_secret_never_appears_in_list_show_history_or_logs(
    live: Live, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    live.create("mailer", "acts", "chatty", schedule={"cron": "0 10 * * *"})
    live.tick_at("2026-03-02T10:00:00+01:00")
    replies = [
        live.ok("list"),
        live.ok("get", name="mailer"),
        live.ok("history", name="mailer"),
        live.ok("targets"),
    ]
    [run] = replies[2]["runs"]
    assert (run["outcome"], run["message"]) == ("error", "RuntimeError: auth failed with ***")
    assert "using ***" in run["output"]
    assert PASSWORD not in json.dumps(replies)
    assert "job_run_failed" in caplog.text
    assert PASSWORD not in caplog.text


def test_a_target_removed_from_config_since_create_is_refused_at_run_time(live: Live, tmp_path: Path) -> None:
    live.create("soon-gone", "acts", "ok", schedule={"cron": "0 10 * * *"})
    module = tmp_path / "scripts" / "acts.py"
    module.write_text(module.read_text().replace("def ok()", "def renamed()"))
    os.utime(module, ns=(7, 7))
    live.tick_at("2026-03-02T10:00:00+01:00")
    [run] = live.ok("history", name="soon-gone")["runs"]
    assert run["outcome"] == "refused"
    assert "acts.ok is not allowed" in run["message"]
