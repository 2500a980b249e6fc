"""Celery beat against cronwright as the scheduler of one Celery worker fleet (issue 36), in one run.

    python bench/bench_brokers.py [--quick] [--seconds S] [--burst N]

- duplicates: two `celery beat` processes against two `cronwright serve` nodes on one PostgreSQL schema, the
  same 20 schedules every 5 s, for S seconds (300; --quick 60). The worker counts what it received: tasks per
  scheduled occurrence (1.0 is each once), and, for cronwright, repeats of one fire_id (exact).
- burst: N tasks (500) due at one instant, sent by one `celery beat` (N `crontab()` entries, due at the next
  minute) and by one `cronwright serve` (N one-shots): the due-to-task-start lag at the worker (p50, p99),
  and the tasks started per second at the worker.

Every side is a real process: the brokers of the machine (RabbitMQ; Redis holds the worker's records), a real
Celery worker (`--pool=threads`, 8 threads, tests/brokers/celery_tasks.py), real beats and serves. Not run in
CI. Results go to bench/results/brokers-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import redis
from psycopg import sql

BENCH = Path(__file__).resolve().parent
TASKS = BENCH.parent / "tests" / "brokers"
BIN = Path(sys.executable).parent
RABBITMQ = "amqp://guest:guest@127.0.0.1:5672//"
RECORDS = "redis://127.0.0.1:6379/15"
SERVER = os.environ.get("CRONWRIGHT_TEST_POSTGRES") or "postgresql://postgres@127.0.0.1:5432/test"
PERIOD = 5  # seconds between two occurrences of each schedule (duplicates)
SCHEDULES = 20

BEAT_APP = """
import json, os
from celery.schedules import crontab
from celery_tasks import app
entries = json.loads(os.environ["CW_BENCH_BEAT"])
app.conf.beat_schedule = {
    name: {"task": "cw.record", "args": [name],
           "schedule": crontab() if every == "minute" else float(every),
           "options": {"queue": os.environ["CW_TEST_RECORD"]}}
    for name, every in entries.items()
}
"""


def log(text: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {text}", file=sys.stderr, flush=True)


def wait_until(what: str, check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"after {seconds:.0f}s, still waiting for {what}")
        time.sleep(0.2)


class World:
    """A queue of its own, the worker consuming it, and the processes started for one side."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.queue = f"cw-bench-{name}-{secrets.token_hex(4)}"
        self.records = redis.Redis.from_url(RECORDS)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.env = {
            **os.environ,
            "CW_TEST_BROKER": RABBITMQ,
            "CW_TEST_RECORD": self.queue,
            "CW_TEST_REDIS": RECORDS,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(TASKS), str(folder), os.environ.get("PYTHONPATH")])
            ),
        }

    def start(
        self, argv: list[str], label: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        with (self.folder / f"{label}.log").open("wb") as out:
            process = subprocess.Popen(
                argv, cwd=self.folder, env=env or self.env, stdout=out, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        return process

    def worker(self) -> None:
        argv = [str(BIN / "celery"), "-A", "celery_tasks", "worker", "--pool=threads", "-c", "8"]
        argv += ["-Q", self.queue, "-n", f"{self.queue}@%h", "--without-gossip", "--without-mingle"]
        self.start([*argv, "-l", "warning"], "worker")
        wait_until("the worker", lambda: self.records.get(f"{self.queue}:ready") is not None, 60)

    def beat(self, entries: dict[str, str], index: int) -> None:
        (self.folder / "beatapp.py").write_text(BEAT_APP)
        env = {**self.env, "CW_BENCH_BEAT": json.dumps(entries)}
        schedule = self.folder / f"beat-{index}-schedule"
        self.start([str(BIN / "celery"), "-A", "beatapp", "beat", "-s", str(schedule), "--pidfile=", "-l",
                    "warning"], f"beat-{index}", env)  # fmt: skip

    def cronwright(self, store: str, index: int, **node: str) -> Path:
        secrets_file = self.folder / "secrets.env"
        secrets_file.write_text(f"FLEET_BROKER={RABBITMQ}\n")
        extra = "".join(f'{key} = "{value}"\n' for key, value in node.items())
        config = self.folder / f"node-{index}.toml"
        config.write_text(
            f"""[node]
zone = "UTC"
store = "{store}"
listen = "127.0.0.1:0"
secrets_file = "{secrets_file}"
min_period = "1s"
max_concurrency = 32
{extra}
[targets.fleet]
kind = "celery"
broker_secret = "FLEET_BROKER"

[targets.fleet.actions.record]
task = "cw.record"
queue = "{self.queue}"
positional = ["name"]
args_schema = {{ type = "object", properties = {{ name = {{ type = "string" }} }}, required = ["name"] }}
"""
        )
        return config

    def serve(self, config: Path, index: int) -> None:
        self.start([str(BIN / "cronwright"), "--config", str(config), "serve"], f"serve-{index}")

    def ran(self) -> list[dict[str, Any]]:
        return [json.loads(entry) for entry in self.records.lrange(self.queue, 0, -1)]

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        self.records.delete(self.queue, f"{self.queue}:ready", f"{self.queue}:revoked")


def pg_schema() -> tuple[str, str]:
    name = f"cw_bench_{secrets.token_hex(5)}"
    return f"{SERVER}?schema={name}", name


def drop(name: str) -> None:
    with psycopg.connect(SERVER, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def duplicates(seconds: float) -> dict[str, Any]:
    names = [f"every-{n:02}" for n in range(SCHEDULES)]
    expected = SCHEDULES * seconds / PERIOD
    found: dict[str, Any] = {"schedules": SCHEDULES, "period_s": PERIOD, "seconds": seconds}
    with tempfile.TemporaryDirectory() as beat_dir:
        world = World(Path(beat_dir), "beat")
        try:
            world.worker()
            for index in range(2):
                world.beat(dict.fromkeys(names, str(PERIOD)), index)
            time.sleep(seconds)  # real time: two real beats run for it
            for process in world.processes[1:]:
                process.send_signal(signal.SIGTERM)
            time.sleep(2)
            ran = world.ran()
            found["beat"] = {"received": len(ran), "per_occurrence": round(len(ran) / expected, 2)}
        finally:
            world.close()
    url, schema = pg_schema()
    with tempfile.TemporaryDirectory() as cw_dir:
        world = World(Path(cw_dir), "cw")
        try:
            world.worker()
            configs = [world.cronwright(url, index) for index in range(2)]
            for index, config in enumerate(configs):
                world.serve(config, index)
            for name in names:
                argv = [
                    str(BIN / "cronwright"),
                    "--config",
                    str(configs[0]),
                    "add",
                    name,
                    "--target",
                    "fleet",
                ]
                argv += ["--action", "record", "--args", json.dumps({"name": name}), "--every", f"{PERIOD}s"]
                subprocess.run(argv, check=True, capture_output=True)
            start = time.monotonic()
            time.sleep(seconds)  # real time: two real nodes run for it
            ran = [r for r in world.ran() if r["at"] >= time.time() - (time.monotonic() - start)]
            repeats = sum(n - 1 for n in Counter(r["headers"]["cronwright_fire_id"] for r in ran).values())
            found["cronwright"] = {
                "received": len(ran),
                "per_occurrence": round(len(ran) / expected, 2),
                "repeated_fire_ids": repeats,
            }
        finally:
            world.close()
            drop(schema)
    return found


def lag_figures(lags: list[float], starts: list[float]) -> dict[str, float]:
    lags = sorted(lags)
    span = max(starts) - min(starts)
    return {
        "tasks": len(lags),
        "lag_p50_ms": round(statistics.median(lags) * 1000, 1),
        "lag_p99_ms": round(lags[min(len(lags) - 1, int(len(lags) * 0.99))] * 1000, 1),
        "started_per_s": round(len(lags) / span, 1) if span > 0 else float("inf"),
    }


def burst(count: int) -> dict[str, Any]:
    names = [f"burst-{n:04}" for n in range(count)]
    found: dict[str, Any] = {"tasks": count}
    with tempfile.TemporaryDirectory() as beat_dir:
        world = World(Path(beat_dir), "beatburst")
        try:
            world.worker()
            world.beat(dict.fromkeys(names, "minute"), 0)
            wait_until("beat's burst at the worker", lambda: world.records.llen(world.queue) >= count, 150)
            ran = world.ran()
            starts = [r["at"] for r in ran]
            minute = datetime.fromtimestamp(min(starts), UTC).replace(second=0, microsecond=0).timestamp()
            found["beat"] = lag_figures([at - minute for at in starts], starts)
        finally:
            world.close()
    with tempfile.TemporaryDirectory() as cw_dir:
        world = World(Path(cw_dir), "cwburst")
        try:
            world.worker()
            config = world.cronwright(f"sqlite:///{cw_dir}/cw.db", 0)
            due = (datetime.now(UTC) + timedelta(seconds=max(20, count / 20))).replace(microsecond=0)
            add_all(config, names, due)
            world.serve(config, 0)
            wait_until(
                "cronwright's burst at the worker", lambda: world.records.llen(world.queue) >= count, 150
            )
            ran = world.ran()
            starts = [r["at"] for r in ran]
            lags = [
                r["at"] - datetime.fromisoformat(r["headers"]["cronwright_scheduled_for"]).timestamp()
                for r in ran
            ]
            found["cronwright"] = lag_figures(lags, starts)
        finally:
            world.close()
    return found


def add_all(config: Path, names: list[str], due: datetime) -> None:
    """The one-shots, through the store (N creates through the CLI would measure process start-up)."""
    from cronwright.config.settings import load
    from cronwright.core.model import AtSchedule, Job
    from cronwright.store import open_store

    store = open_store(load(str(config)).store_url)
    now = datetime.now(UTC)
    for name in names:
        job = Job(
            0, name, "fleet", "record", {"name": name}, AtSchedule(due), due + timedelta(hours=1), now, now
        )
        store.insert(job.evolve(next_run_at=due))
    store.close()
    if datetime.now(UTC) >= due:
        raise RuntimeError("inserting the one-shots took longer than the lead before they came due")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--burst", type=int, default=500)
    args = parser.parse_args()
    seconds = args.seconds or (60.0 if args.quick else 300.0)
    results = {
        "machine": {"cores": os.cpu_count(), "load": os.getloadavg()},
        "started": datetime.now(UTC).isoformat(),
    }
    log(f"duplicates: two beats against two cronwright nodes, {seconds:.0f}s each")
    results["duplicates"] = duplicates(seconds)
    log(f"burst: {args.burst} tasks due at once")
    results["burst"] = burst(args.burst)
    out = BENCH / "results" / f"brokers-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
