"""NATS JetStream targets against the real server: a real `tick` publishes, a JetStream consumer counts what
the stream holds by `Nats-Msg-Id`."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from brokers.conftest import NATS, Stream
from cli.blackbox import Cronwright
from cronwright.config.settings import parse
from cronwright.core.model import Occurrence
from cronwright.targets.executor import TargetRunner
from cronwright.targets.registry import build_registry
from cronwright.targets.secrets import Secrets
from targets.conftest import job


def nats_node(folder: Path, stream: Stream) -> Cronwright:
    secrets = folder / "secrets.env"
    secrets.write_text(f"EVENTS_URL={NATS}\n", encoding="utf-8")
    cw = Cronwright(folder, secrets_file=str(secrets))
    cw.config.write_text(
        cw.config.read_text(encoding="utf-8")
        + f"""
[targets.events]
kind = "nats"
broker_secret = "EVENTS_URL"

[targets.events.actions.rollup]
subject = "{stream.prefix}.rollup"
stream = "{stream.name}"
timeout = "10s"
""",
        encoding="utf-8",
    )
    return cw


def test_a_tick_publishes_each_occurrence_once_with_its_msg_id_and_headers(
    tmp_path: Path, stream: Stream
) -> None:
    cw = nats_node(tmp_path, stream)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    for n in range(4):
        cw.json("add", f"rollup-{n}", "--target", "events", "--action", "rollup", "--args",
                json.dumps({"n": n}), "--at", now)  # fmt: skip
    assert cw.json("tick")["fired"] == 4
    held = stream.messages()
    counted = Counter(headers["Nats-Msg-Id"] for headers, _ in held)
    assert len(counted) == 4 and set(counted.values()) == {1}
    runs = cw.json("history", "--limit", "10")["runs"]
    assert sorted(run["outcome"] for run in runs) == ["ok"] * 4
    assert all(f"stream {stream.name}" in run["message"] for run in runs)
    assert {headers["Cronwright-Fire-Id"] for headers, _ in held} == {run["fire_id"] for run in runs}
    headers, envelope = held[0]
    assert envelope["cron"]["fire_id"] == headers["Cronwright-Fire-Id"]
    assert headers["Cronwright-Attempt"] == "1"
    expires = datetime.fromisoformat(headers["Cronwright-Expires"])
    due = datetime.fromisoformat(headers["Cronwright-Scheduled-For"])
    assert expires - due == timedelta(seconds=60)  # misfire_grace
    assert sorted(envelope["args"]["n"] for _, envelope in held) == [0, 1, 2, 3]


def test_a_second_publish_of_one_attempt_is_reported_as_a_duplicate_and_kept_once(stream: Stream) -> None:
    config = parse(
        {
            "targets": {
                "events": {
                    "kind": "nats",
                    "broker_secret": "EVENTS_URL",
                    "actions": {"rollup": {"subject": f"{stream.prefix}.rollup"}},
                }
            }
        }
    )
    runner = TargetRunner(build_registry(config), Secrets(environ={"EVENTS_URL": NATS}))
    rollup = job("events", "rollup", name="rollup")
    now = datetime.now(UTC)
    try:
        first = runner.run(rollup, Occurrence(7, "7-1", now, 1, now))
        again = runner.run(rollup, Occurrence(7, "7-1", now, 1, now))
        retry = runner.run(rollup, Occurrence(7, "7-1", now, 2, now))
    finally:
        runner.close()
    assert (first.outcome.value, again.outcome.value, retry.outcome.value) == ("ok", "ok", "ok")
    assert "duplicate" not in first.message and "duplicate" in again.message
    assert "duplicate" not in retry.message  # a new attempt is a new message
    assert len(stream.messages()) == 2


def test_check_names_a_subject_no_stream_takes(tmp_path: Path, stream: Stream) -> None:
    cw = nats_node(tmp_path, stream)
    assert cw.run("check").rc == 0
    cw.config.write_text(cw.config.read_text().replace(f"{stream.prefix}.rollup", "nobody.listens.here"))
    done = cw.run("check")
    assert done.rc != 0
    assert "no JetStream stream takes subject nobody.listens.here" in done.stderr


def test_a_server_that_cannot_be_reached_is_an_error_not_a_timeout() -> None:
    config = parse(
        {
            "targets": {
                "events": {
                    "kind": "nats",
                    "broker_secret": "EVENTS_URL",
                    "actions": {"rollup": {"subject": "cw.nowhere", "timeout": "2s"}},
                }
            }
        }
    )
    secret = "Unre4chable-pw"
    runner = TargetRunner(
        build_registry(config), Secrets(environ={"EVENTS_URL": f"nats://cw:{secret}@127.0.0.1:4299"})
    )
    now = datetime.now(UTC)
    try:
        result = runner.run(job("events", "rollup"), Occurrence(7, "7-1", now, 1, now))
    finally:
        runner.close()
    assert result.outcome.value == "error"
    assert "could not connect to the NATS server within 2s" in result.message
    assert secret not in result.message
