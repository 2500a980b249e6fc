"""The broker tests' world: the machine's real RabbitMQ, Redis and NATS JetStream, and a real Celery worker
process (celery_tasks.py) consuming a queue of the test's own, recording what it ran in Redis.

`.ci/run` starts the brokers when they are down, so a broker that cannot be reached fails these tests
(loudly, with its address), never skips them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import pytest
import redis

from cli.blackbox import Cronwright

RABBITMQ = "amqp://guest:guest@127.0.0.1:5672//"
REDIS_BROKER = "redis://127.0.0.1:6379/13"
REDIS_BACKEND = "redis://127.0.0.1:6379/14"
RECORDS = "redis://127.0.0.1:6379/15"
NATS = "nats://127.0.0.1:4222"
CELERY = Path(sys.executable).with_name("celery")
HERE = Path(__file__).resolve().parent


def reachable(port: int) -> None:
    """Fails the test, naming the broker, when nothing listens on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            return
    except OSError as error:
        pytest.fail(f"no broker listens on 127.0.0.1:{port} ({error}); .ci/run starts it", pytrace=False)


def wait_until(what: str, condition: Any, seconds: float = 30.0) -> None:
    """Polls a real process's effect (a record in Redis, a run in the history), up to `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"after {seconds:.0f}s, still waiting for {what}", pytrace=False)
        time.sleep(0.1)


@dataclass
class Worker:
    """A real `celery worker` on one queue of the test's own, and what it recorded."""

    broker: str
    queue: str = field(default_factory=lambda: f"cw-test-{uuid.uuid4().hex[:10]}")
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def __post_init__(self) -> None:
        self.records = redis.Redis.from_url(RECORDS)

    def start(self, folder: Path) -> Worker:
        self.log = folder / f"worker-{self.queue}.log"
        env = {
            **os.environ,
            "CW_TEST_BROKER": self.broker,
            "CW_TEST_BACKEND": REDIS_BACKEND,
            "CW_TEST_RECORD": self.queue,
            "CW_TEST_REDIS": RECORDS,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        }
        self.records.delete(f"{self.queue}:ready")
        argv = [str(CELERY), "-A", "celery_tasks", "worker", "--pool=solo", "-Q", self.queue]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [*argv, "-n", f"{self.queue}@%h", "-l", "info", "--without-gossip", "--without-mingle"],
                cwd=HERE,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_until("the celery worker to be ready", lambda: self.records.get(f"{self.queue}:ready"))
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            # A cold shutdown: a task still running (cw.hang) is not waited for.
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def ran(self) -> list[dict[str, Any]]:
        """Each task the worker ran (cw.record), in order: {id, args, kwargs, headers}."""
        return self._list(self.queue)

    def revoked(self) -> list[dict[str, Any]]:
        """Each message the worker revoked instead of running: {id, expired}."""
        return self._list(f"{self.queue}:revoked")

    def _list(self, key: str) -> list[dict[str, Any]]:
        # The ignore below is kept: redis-py types lrange as an Awaitable or a list (sync and async clients).
        entries: list[bytes] = self.records.lrange(key, 0, -1)  # type: ignore[assignment]
        return [json.loads(entry) for entry in entries]

    def cleanup(self) -> None:
        self.stop()
        self.records.delete(self.queue, f"{self.queue}:revoked", f"{self.queue}:ready")
        with contextlib.suppress(Exception):  # a queue left behind is harmless, only untidy
            from kombu.connection import Connection

            # The ignore below is kept: kombu ships no type hints.
            with Connection(self.broker, connect_timeout=3) as connection:  # type: ignore[no-untyped-call]
                connection.default_channel.queue_delete(self.queue)


@pytest.fixture
def rabbit_worker(tmp_path: Path) -> Iterator[Worker]:
    """A worker on RabbitMQ, not yet started (`start(tmp_path)`): a test may send before it runs."""
    reachable(5672)
    reachable(6379)
    worker = Worker(RABBITMQ)
    try:
        yield worker
    finally:
        worker.cleanup()


@pytest.fixture
def redis_worker(tmp_path: Path) -> Iterator[Worker]:
    reachable(6379)
    worker = Worker(REDIS_BROKER)
    try:
        yield worker
    finally:
        worker.cleanup()


def celery_node(folder: Path, worker: Worker, **node: Any) -> Cronwright:
    """A node's world (cli/blackbox.py) with a celery target `fleet` sending to `worker`'s queue; the broker
    and backend URLs are in its secrets file, as an operator would keep them."""
    secrets = folder / "secrets.env"
    secrets.write_text(f"FLEET_BROKER={worker.broker}\nFLEET_BACKEND={REDIS_BACKEND}\n", encoding="utf-8")
    secrets.chmod(0o600)
    cw = Cronwright(folder, secrets_file=str(secrets), **node)
    queue = json.dumps(worker.queue)
    cw.config.write_text(
        cw.config.read_text(encoding="utf-8")
        + f"""
[targets.fleet]
kind = "celery"
broker_secret = "FLEET_BROKER"
backend_secret = "FLEET_BACKEND"

[targets.fleet.actions.record]
task = "cw.record"
queue = {queue}
positional = ["account"]
timeout = "20s"
[targets.fleet.actions.record.args_schema]
type = "object"
properties = {{ account = {{ type = "string" }}, n = {{ type = "integer" }} }}
required = ["account"]

[targets.fleet.actions.recorded]
task = "cw.record"
queue = {queue}
result = "wait"
timeout = "20s"

[targets.fleet.actions.fail]
task = "cw.fail"
queue = {queue}
result = "wait"
timeout = "20s"

[targets.fleet.actions.hang]
task = "cw.hang"
queue = {queue}
result = "wait"
timeout = "2s"
""",
        encoding="utf-8",
    )
    return cw


class Stream:
    """A JetStream stream of the test's own, on subjects `<prefix>.>`."""

    def __init__(self) -> None:
        self.name = f"CWTEST_{uuid.uuid4().hex[:10].upper()}"
        self.prefix = self.name.lower()

    async def _create(self) -> None:
        client = await nats.connect(NATS)
        await client.jetstream().add_stream(name=self.name, subjects=[f"{self.prefix}.>"])
        await client.close()

    async def _delete(self) -> None:
        client = await nats.connect(NATS)
        await client.jetstream().delete_stream(self.name)
        await client.close()

    async def _messages(self) -> list[tuple[dict[str, str], dict[str, Any]]]:
        client = await nats.connect(NATS)
        js = client.jetstream()
        consumer = await js.pull_subscribe(f"{self.prefix}.>", durable=None, stream=self.name)
        found: list[tuple[dict[str, str], dict[str, Any]]] = []
        try:
            while True:
                batch = await consumer.fetch(100, timeout=1)
                for message in batch:
                    found.append((dict(message.headers or {}), json.loads(message.data)))
                    await message.ack()
        except (TimeoutError, nats.errors.TimeoutError):
            pass  # the stream has no more
        finally:
            await client.close()
        return found

    def messages(self) -> list[tuple[dict[str, str], dict[str, Any]]]:
        """Every message the stream holds: its headers and its body (the envelope)."""
        return asyncio.run(self._messages())


@pytest.fixture
def stream() -> Iterator[Stream]:
    reachable(4222)
    made = Stream()
    asyncio.run(made._create())
    try:
        yield made
    finally:
        asyncio.run(made._delete())
