"""Three `serve` nodes on one PostgreSQL store hand 300 one-shots and 10 every-second jobs to one Celery
worker, and one node is SIGKILLed mid-burst: each occurrence reaches the worker at most once (counted by task
id at the worker), and none is lost but those recorded `interrupted`.

Jobs are inserted straight into the store (300 creates through the CLI would only measure process start-up).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import pg
from brokers.conftest import REDIS_BACKEND, Worker, wait_until
from cronwright.core import engine
from cronwright.core.model import AtSchedule, CronSchedule, Job, Outcome, State
from cronwright.store.postgres import PostgresStore
from cronwright.timing.cron_set import CronSet

CRONWRIGHT = Path(sys.executable).parent / "cronwright"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _config(folder: Path, url: str, index: int, worker: Worker) -> Path:
    secrets = folder / "secrets.env"
    secrets.write_text(f"FLEET_BROKER={worker.broker}\nFLEET_BACKEND={REDIS_BACKEND}\n")
    path = folder / f"node-{index}.toml"
    # Short leases, so that the killed node's runs are found in seconds.
    path.write_text(
        f"""
[node]
zone = "UTC"
store = "{url}"
listen = "127.0.0.1:{_port()}"
secrets_file = "{secrets}"
max_concurrency = 160  # room for the recurring jobs beside a node's share of the waiting burst
lease_beat = "1s"
lease_ttl = "5s"
shutdown_grace = "5s"

[targets.fleet]
kind = "celery"
broker_secret = "FLEET_BROKER"
backend_secret = "FLEET_BACKEND"

[targets.fleet.actions.record]
task = "cw.record"
queue = {json.dumps(worker.queue)}

# Waits for the task's result: a run is in flight until the worker ran it, so the kill finds some.
[targets.fleet.actions.recorded]
task = "cw.record"
queue = {json.dumps(worker.queue)}
result = "wait"
timeout = "1m"
"""
    )
    return path


def _job(name: str, action: str, schedule: AtSchedule | CronSchedule, now: datetime, ends: datetime) -> Job:
    return Job(
        id=0,
        name=name,
        target="fleet",
        action=action,
        args={"account": name},
        schedule=schedule,
        ends_at=ends,
        created_at=now,
        updated_at=now,
    )


@pytest.fixture
def store_url() -> Iterator[str]:
    with pg.scratch_url() as url:
        yield url


def test_three_nodes_one_killed_mid_burst_hand_each_occurrence_to_the_worker_at_most_once(
    tmp_path: Path, rabbit_worker: Worker, store_url: str
) -> None:
    worker = rabbit_worker.start(tmp_path)
    store = PostgresStore(store_url)
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        for index in range(3):
            with (tmp_path / f"node-{index}.err").open("wb") as stderr:
                argv = [
                    str(CRONWRIGHT),
                    "--config",
                    str(_config(tmp_path, store_url, index, worker)),
                    "serve",
                ]
                nodes.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr))
        wait_until("three nodes to beat", lambda: len(store.beats()) >= 3)
        now = datetime.now(UTC)
        due = now.replace(microsecond=0) + timedelta(seconds=10)
        shots = [
            store.insert(
                _job(f"shot-{n:03}", "recorded", AtSchedule(due), now, due + timedelta(hours=1)).evolve(
                    next_run_at=due
                )
            )
            for n in range(300)
        ]
        every_second = CronSchedule(CronSet.parse("* * * * * *"), "UTC")
        ticking = [
            store.insert(
                engine.arm(_job(f"tick-{n}", "record", every_second, due, due + timedelta(seconds=8)), due)
            )
            for n in range(10)
        ]
        assert datetime.now(UTC) < due, "inserting the jobs took longer than the lead before they came due"
        wait_until("the burst to reach the worker", lambda: len(worker.ran()) >= 40)
        # The victim is the node holding the most occurrences in flight (sent, waiting on their task).
        holders = Counter(
            job.in_flight.node for job in store.jobs(state=State.RUNNING) if job.in_flight is not None
        )
        assert holders, "the burst ended before the kill: nothing was in flight"
        victim_id = holders.most_common(1)[0][0]
        assert victim_id is not None
        victim = next(node for node in nodes if f":{node.pid}:" in victim_id)
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        wait_until(
            "every one-shot to end",
            lambda: store.counts().get("done", 0) + store.counts().get("failed", 0) == 300,
            seconds=90,
        )
        wait_until("the recurring jobs to expire", lambda: store.counts().get("expired", 0) == 10, seconds=60)
        survivors = [node for node in nodes if node is not victim]
        for node in survivors:
            node.send_signal(signal.SIGTERM)
        for node in survivors:
            assert node.wait(30) == 0
        runs = store.runs(None, 100_000)
        ok = {run.fire_id for run in runs if run.outcome is Outcome.OK}
        # Each occurrence the store says went out reaches the worker (a confirmed send may still be queued).
        wait_until(
            "every occurrence sent ok at the worker",
            lambda: ok <= {r["headers"]["cronwright_fire_id"] for r in worker.ran()},
            60,
        )
        ran = worker.ran()
        ids = Counter(record["id"] for record in ran)
        assert max(ids.values()) == 1, [task for task, seen in ids.items() if seen > 1][:5]
        fire_ids = Counter(record["headers"]["cronwright_fire_id"] for record in ran)
        assert max(fire_ids.values()) == 1  # at most once per occurrence
        for shot in shots:
            [run] = store.runs(shot.id)  # none lost: one run each, and never run again
            assert run.outcome in (Outcome.OK, Outcome.INTERRUPTED), run
        interrupted = [run for run in runs if run.outcome is Outcome.INTERRUPTED]
        assert interrupted and {run.node for run in interrupted} == {victim_id}
        assert {run.outcome for run in runs} <= {Outcome.OK, Outcome.INTERRUPTED}
        for job in ticking:
            fired = [run.fire_id for run in store.runs(job.id)]
            assert len(fired) == len(set(fired)) >= 5, job.name  # every second, each once, from due + 1 s
    finally:
        for node in nodes:
            if node.poll() is None:
                node.kill()
                node.wait(10)
        store.close()
