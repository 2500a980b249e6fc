"""DESIGN semantic 28, in process: a short-lived process hands its run_now to a serving node.

Two nodes on one SQLite store and one manual clock: a serving node (its id ends in `:serve`) and a
short-lived one (the CLI's, a stdio MCP server's). The black-box proof, with real processes and the MCP
SDK's stdio client, is tests/cli/test_run_now_handoff.py.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import ALLOWED, BERLIN, Harness, ScriptedRunner, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.events import MemorySink
from cronwright.core.sources import operator
from cronwright.node import handoff
from cronwright.node.node_ids import new_node_id
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.protocol import RequestHandler
from cronwright.service.operations import Limits, Service
from cronwright.store.sqlite import SqliteStore


class ShortLived:
    """A CLI process's node and protocol on the harness's store (it runs no scheduling loop)."""

    def __init__(self, harness: Harness, path: Path) -> None:
        self.runner = ScriptedRunner()
        self.node = Node(
            SqliteStore(path), self.runner, harness.clock, MemorySink(), NodeSettings(), short_lived=True
        )
        self.protocol = RequestHandler(Service(self.node, ALLOWED, Limits(BERLIN)))

    def call(self, action: str, **fields: object) -> dict[str, Any]:  # a protocol reply, as Harness.call
        return self.protocol.dispatch({"action": action, **fields}, operator())


@pytest.fixture
def serving(clock: ManualClock, tmp_path: Path) -> Harness:
    return make_harness(SqliteStore(tmp_path / "cronwright.db"), clock, node_id=new_node_id(serving=True))


def test_a_short_lived_run_now_is_run_by_the_serving_node_under_one_fire_id(
    serving: Harness, tmp_path: Path
) -> None:
    serving.create("daily", {"cron": "0 10 * * *"})
    cli = ShortLived(serving, tmp_path / "cronwright.db")

    reply = cli.call("run_now", name="daily")

    assert reply["ok"] is True and reply["handed_to"] == serving.node.id, reply
    job = cli.node.store.find("daily")
    assert job is not None and job.in_flight is not None
    assert (job.state.value, job.in_flight.attempt, job.in_flight.node) == ("running", 0, None)
    assert cli.runner.calls == [], "the short-lived process runs nothing itself"
    fire_id = job.in_flight.fire_id

    serving.node.run_pass()  # the serving node's next pass takes it
    serving.node.wait_for_runs()
    assert [(c.fire_id, c.attempt, c.manual) for c in serving.runner.calls] == [(fire_id, 1, True)]
    handoff.wait_for_hand_off(cli.node, job.id, fire_id)  # returns at once: the occurrence is over
    (run,) = serving.raw_store.runs(job.id)
    assert (run.fire_id, run.outcome.value, run.node) == (fire_id, "ok", serving.node.id)
    assert serving.job("daily")["state"] == "active"


def test_a_handed_off_run_outlives_its_requester_and_a_later_pass_runs_it(
    serving: Harness, tmp_path: Path
) -> None:
    serving.create("daily", {"cron": "0 10 * * *"})
    cli = ShortLived(serving, tmp_path / "cronwright.db")
    assert cli.call("run_now", name="daily")["ok"] is True
    del cli  # the requester went away; nothing of the request lived in it

    serving.clock.advance(timedelta(minutes=30))
    later = serving.restart()  # its boot pass: the store kept the request, so it takes it
    later.tick()
    assert [(c.attempt, c.manual) for c in later.runner.calls] == [(1, True)]
    assert later.job("daily")["last_run"]["outcome"] == "ok"


def test_while_handed_off_the_job_is_running_so_no_second_run_starts(
    serving: Harness, tmp_path: Path
) -> None:
    serving.create("daily", {"cron": "0 10 * * *"})
    cli = ShortLived(serving, tmp_path / "cronwright.db")
    assert cli.call("run_now", name="daily")["ok"] is True
    again = cli.call("run_now", name="daily")
    assert (again["error"], again["state"]) == ("job_running", "running")
    assert serving.call("run_now", name="daily")["error"] == "job_running"


def test_a_hand_off_no_node_takes_is_taken_back_and_run_by_its_requester(
    serving: Harness, tmp_path: Path
) -> None:
    serving.create("daily", {"cron": "0 10 * * *"})
    cli = ShortLived(serving, tmp_path / "cronwright.db")
    job_id = int(cli.call("run_now", name="daily")["job"]["id"])
    job = cli.node.store.get(job_id)
    assert job is not None and job.in_flight is not None
    # The serving node died after its last beat: nobody takes the run, so the requester does.
    assert handoff.take(cli.node, job_id) is not None
    handoff.wait_for_hand_off(cli.node, job_id, job.in_flight.fire_id)
    assert [(c.fire_id, c.attempt) for c in cli.runner.calls] == [(job.in_flight.fire_id, 1)]
    serving.node.run_pass()
    assert serving.runner.calls == [], "taken once, run once"


def test_without_a_serving_node_the_short_lived_process_runs_it_itself(
    clock: ManualClock, tmp_path: Path
) -> None:
    harness = make_harness(SqliteStore(tmp_path / "cronwright.db"), clock)  # a tick's node, not serving
    harness.create("daily", {"cron": "0 10 * * *"})
    cli = ShortLived(harness, tmp_path / "cronwright.db")
    reply = cli.call("run_now", name="daily")
    assert reply["ok"] is True and reply.get("handed_to") is None
    cli.node.wait_for_runs()
    assert len(cli.runner.calls) == 1


def test_a_stale_serving_beat_gets_no_hand_off(serving: Harness, tmp_path: Path) -> None:
    serving.create("daily", {"cron": "0 10 * * *"})
    serving.clock.advance(timedelta(minutes=2))  # past the lease and the safety wake-up: that serve is gone
    cli = ShortLived(serving, tmp_path / "cronwright.db")
    reply = cli.call("run_now", name="daily")
    assert reply["ok"] is True and reply.get("handed_to") is None
    cli.node.wait_for_runs()
    assert len(cli.runner.calls) == 1


def test_a_taken_hand_off_whose_claim_is_released_waits_again_rather_than_vanish(
    serving: Harness, tmp_path: Path
) -> None:
    from cronwright.core import engine

    serving.create("daily", {"cron": "0 10 * * *"})
    cli = ShortLived(serving, tmp_path / "cronwright.db")
    job_id = int(cli.call("run_now", name="daily")["job"]["id"])
    queued = cli.node.store.get(job_id)
    assert queued is not None
    decision = engine.take(queued, serving.clock.now(), serving.node.rules)
    assert decision is not None and decision.job.in_flight is not None
    released = engine.release(decision.job)  # its claim landed unbeknown to its node (semantic 29)
    assert released.in_flight is not None
    assert (released.in_flight.attempt, released.in_flight.node) == (0, None)
    assert released.in_flight.waiting_for_a_node


def test_a_hand_off_nobody_took_before_the_end_expires_and_records_nothing(
    serving: Harness, tmp_path: Path
) -> None:
    serving.create("daily", {"cron": "0 10 * * *"}, lifetime="1h")
    cli = ShortLived(serving, tmp_path / "cronwright.db")
    assert cli.call("run_now", name="daily")["ok"] is True
    serving.clock.set(at("2026-03-02T11:00:00+01:00"))
    serving.node.run_pass()
    assert serving.job("daily")["state"] == "expired"
    assert serving.runner.calls == [] and serving.raw_store.runs() == []
