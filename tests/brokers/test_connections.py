"""A broker target opens its connection once and keeps it: ten firings are one connection, not ten, and
closing the runner closes it. Counted from this process's own sockets (/proc), in-process, real brokers."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from brokers.conftest import NATS, RABBITMQ, Stream, Worker
from cronwright.config.settings import parse
from cronwright.core.model import Occurrence
from cronwright.targets.executor import TargetRunner
from cronwright.targets.registry import build_registry
from cronwright.targets.secrets import Secrets
from targets.conftest import job


def connections_to(port: int) -> int:
    """This process's established TCP connections to 127.0.0.1:port."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            mine.add(link[8:-1])
    count = 0
    for line in Path("/proc/self/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state, inode = fields[2], fields[3], fields[9]
        if state == "01" and inode in mine and int(remote.split(":")[1], 16) == port:
            count += 1
    return count


def _fire_ten(targets: dict[str, Any], secrets: dict[str, str], target: str, action: str, port: int) -> None:
    runner = TargetRunner(build_registry(parse({"targets": targets})), Secrets(environ=secrets))
    before = connections_to(port)
    try:
        for n in range(10):
            now = datetime.now(UTC)
            result = runner.run(job(target, action, name="ten"), Occurrence(7, f"7-{n}", now, 1, now))
            assert result.outcome.value == "ok", result.message
        assert connections_to(port) - before == 1
    finally:
        runner.close()
    assert connections_to(port) == before


def test_ten_celery_firings_share_one_amqp_connection(rabbit_worker: Worker) -> None:
    action = {"task": "cw.record", "queue": rabbit_worker.queue}
    targets = {"fleet": {"kind": "celery", "broker_secret": "B", "actions": {"record": action}}}
    _fire_ten(targets, {"B": RABBITMQ}, "fleet", "record", 5672)


def test_ten_nats_firings_share_one_connection(stream: Stream) -> None:
    action = {"subject": f"{stream.prefix}.ten"}
    targets = {"events": {"kind": "nats", "broker_secret": "N", "actions": {"publish": action}}}
    _fire_ten(targets, {"N": NATS}, "events", "publish", 4222)
