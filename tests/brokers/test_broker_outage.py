"""RabbitMQ stopped for 20 seconds under a running `serve`: the sends fail, the retries go out with the same
fire_id and a new attempt, the breaker pauses a job that kept failing and its alert is delivered, and once the
broker is back every retried occurrence reaches the worker once.

The only test that stops a shared service: `rabbitmqctl stop_app` (the Erlang node stays up, the broker's
port closes), and `start_app` in a `finally`, so the broker comes back even when the test fails.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from brokers.conftest import Worker, celery_node, reachable, wait_until
from cli.blackbox import Cronwright, serving
from notify.receivers import SECRET, http_receiver

OUTAGE = 20.0  # seconds


@contextmanager
def rabbitmq_stopped() -> Iterator[None]:
    subprocess.run(["rabbitmqctl", "-q", "stop_app"], check=True, capture_output=True, timeout=60)
    try:
        yield
    finally:
        subprocess.run(["rabbitmqctl", "-q", "start_app"], check=True, capture_output=True, timeout=120)
        subprocess.run(["rabbitmqctl", "-q", "await_startup"], check=False, capture_output=True, timeout=60)


def _with_alerts(cw: Cronwright, url: str) -> None:
    secrets = cw.folder / "secrets.env"
    secrets.write_text(secrets.read_text() + f"ALERT_SECRET={SECRET}\n")
    cw.config.write_text(
        cw.config.read_text()
        + f"""
[notify.ops]
kind = "webhook"
url = "{url}"
signing_secret = "ALERT_SECRET"
timeout = "5s"

[[alert]]
on = ["failed", "breaker_paused"]
notify = ["ops"]
"""
    )


def test_a_broker_down_for_20s_fails_sends_that_retry_with_one_fire_id_and_each_reaches_the_worker_once(
    tmp_path: Path, rabbit_worker: Worker
) -> None:
    reachable(5672)
    worker = rabbit_worker.start(tmp_path)
    cw = celery_node(tmp_path, worker, min_period="1s")
    with http_receiver() as receiver:
        _with_alerts(cw, receiver.url)
        with serving(cw):
            with rabbitmq_stopped():
                down = time.monotonic()
                due = (datetime.now(UTC) + timedelta(seconds=2)).isoformat(timespec="seconds")
                # Retries 4 s, 8 s and 16 s after the first attempt: the fourth, 28 s in, finds it back.
                for n in range(3):
                    cw.json("add", f"retried-{n}", "--target", "fleet", "--action", "record", "--args",
                            json.dumps({"account": f"r{n}"}), "--at", due, "--max-attempts", "5",
                            "--retry-backoff", "4s")  # fmt: skip
                cw.json("add", "ticking", "--target", "fleet", "--action", "record", "--args",
                        '{"account": "tick"}', "--every", "2s", "--breaker", "2")  # fmt: skip
                wait_until(
                    "the breaker to pause the recurring job",
                    lambda: cw.json("show", "ticking")["job"]["state"] == "paused",
                )
                # The outage is real time on a real broker, not the node's clock: it has to last.
                time.sleep(max(0.0, OUTAGE - (time.monotonic() - down)))
            wait_until(
                "each retried occurrence at the worker",
                lambda: sum(r["args"][0].startswith("r") for r in worker.ran()) >= 3,
                seconds=60,
            )
            wait_until(
                "the alerts", lambda: {b["transition"] for b in receiver.bodies()} >= {"breaker_paused"}
            )
    ran = worker.ran()
    assert max(Counter(record["id"] for record in ran).values()) == 1
    for n in range(3):
        runs = sorted(cw.json("history", f"retried-{n}")["runs"], key=lambda run: run["attempt"])
        assert len({run["fire_id"] for run in runs}) == 1  # every retry is the same occurrence
        assert [run["outcome"] for run in runs[:-1]] == ["error"] * (len(runs) - 1) and len(runs) > 1
        assert runs[-1]["outcome"] == "ok", runs[-1]
        assert all("the broker did not take task cw.record" in run["message"] for run in runs[:-1])
        received = [r for r in ran if r["headers"]["cronwright_fire_id"] == runs[0]["fire_id"]]
        assert len(received) == 1  # once, by the attempt that succeeded
        assert received[0]["headers"]["cronwright_attempt"] == str(runs[-1]["attempt"])
    ticking = cw.json("show", "ticking")["job"]
    assert ticking["state"] == "paused" and ticking["paused_by"] == "breaker"
    transitions = [(body["transition"], (body.get("job") or {}).get("name")) for body in receiver.bodies()]
    assert ("breaker_paused", "ticking") in transitions
