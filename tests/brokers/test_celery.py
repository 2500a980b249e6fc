"""Celery targets against the real brokers: a real `serve` or `tick` sends, a real Celery worker consumes
(conftest.py). What the worker recorded is what the target really received, whatever the store says."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from brokers.conftest import REDIS_BACKEND, Worker, celery_node, reachable, wait_until
from cli.blackbox import Cronwright, serving
from cronwright.targets.brokers.message import message_id


def _now(seconds: float = 0) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="seconds")


def _utc(instant: str) -> str:
    return datetime.fromisoformat(instant).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _add(cw: Cronwright, name: str, action: str, *options: str, at: str | None = None) -> dict[str, Any]:
    reply = cw.json("add", name, "--target", "fleet", "--action", action, *options, at=at)
    job: dict[str, Any] = reply["job"]
    return job


def _runs(cw: Cronwright, name: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = cw.json("history", name, "--limit", "100")["runs"]
    return runs


def test_serve_hands_one_shots_and_a_recurring_schedule_to_the_worker_each_once_with_its_headers(
    tmp_path: Path, rabbit_worker: Worker
) -> None:
    worker = rabbit_worker.start(tmp_path)
    cw = celery_node(tmp_path, worker, min_period="1s")
    with serving(cw):
        at = _now(1)
        shots = [
            _add(cw, f"shot-{n}", "record", "--args", json.dumps({"account": f"a{n}", "n": n}), "--at", at)
            for n in range(5)
        ]
        _add(cw, "every-second", "record", "--args", '{"account": "beat"}', "--every", "1s")
        wait_until(
            "5 one-shots and 3 recurring occurrences at the worker",
            lambda: len(worker.ran()) >= 8 and sum(r["args"] == ["beat"] for r in worker.ran()) >= 3,
        )
        cw.json("pause", "every-second")
    ran = worker.ran()
    ids = Counter(record["id"] for record in ran)
    assert [task for task, seen in ids.items() if seen > 1] == []  # each task id once at the worker
    created = {job["name"]: _utc(job["created_at"]) for job in cw.json("list")["jobs"]}
    for record in ran:
        headers = record["headers"]
        # The task id is the message id derived from the job, its fire_id and attempt, nothing random.
        name = headers["cronwright_schedule"]
        expected = message_id(headers["cronwright_job_id"], name, created[name],
                              headers["cronwright_fire_id"], headers["cronwright_attempt"])  # fmt: skip
        assert record["id"] == expected
        assert headers["cronwright_attempt"] == "1"
        assert datetime.fromisoformat(headers["cronwright_scheduled_for"]).tzinfo is not None
        assert headers["cronwright_nominal"] == headers["cronwright_scheduled_for"]  # no jitter here
    by_schedule = Counter(record["headers"]["cronwright_schedule"] for record in ran)
    assert all(by_schedule[f"shot-{n}"] == 1 for n in range(5)), by_schedule
    shot = next(r for r in ran if r["headers"]["cronwright_schedule"] == "shot-3")
    assert shot["args"] == ["a3"] and shot["kwargs"] == {"n": 3}  # `positional` takes account out of kwargs
    # Each fire_id the worker saw is a run the store recorded ok, and the other way round.
    recorded = {
        (run["fire_id"], str(run["attempt"]))
        for name in [*(job["name"] for job in shots), "every-second"]
        for run in _runs(cw, name)
        if run["outcome"] == "ok"
    }
    seen = {(r["headers"]["cronwright_fire_id"], r["headers"]["cronwright_attempt"]) for r in ran}
    assert seen == recorded
    assert "the broker confirmed it" in _runs(cw, "shot-0")[0]["message"]


def test_wait_records_the_tasks_own_outcome_a_failure_as_error_and_a_hang_as_timeout(
    tmp_path: Path, rabbit_worker: Worker
) -> None:
    worker = rabbit_worker.start(tmp_path)
    cw = celery_node(tmp_path, worker)
    now = _now()
    _add(cw, "fails", "fail", "--at", now, "--max-attempts", "1")
    _add(cw, "succeeds", "recorded", "--at", now)
    assert cw.json("tick")["fired"] == 2  # a tick waits for its runs: here, for the tasks' outcomes
    failed, = _runs(cw, "fails")  # fmt: skip
    assert failed["outcome"] == "error"
    assert "ValueError: the ledger is locked" in failed["message"]
    succeeded, = _runs(cw, "succeeds")  # fmt: skip
    assert succeeded["outcome"] == "ok" and "'recorded'" in succeeded["message"]
    _add(cw, "hangs", "hang", "--at", _now(), "--max-attempts", "1")
    assert cw.json("tick")["fired"] == 1
    hung, = _runs(cw, "hangs")  # fmt: skip
    assert hung["outcome"] == "timeout", hung["message"]
    assert 2000 <= hung["took_ms"] < 6000  # its action's timeout is 2s; the task itself sleeps 30


def test_a_message_that_waited_past_its_grace_for_a_worker_is_revoked_not_run(
    tmp_path: Path, rabbit_worker: Worker
) -> None:
    # The node fires two minutes in the past (faketime): the message it sends expired a minute ago
    # (misfire_grace 60s), as one that waited that long for a worker that was down would have.
    cw = celery_node(tmp_path, rabbit_worker)
    then = (datetime.now(UTC) - timedelta(minutes=2)).isoformat(timespec="seconds")
    _add(cw, "stale", "record", "--args", '{"account": "late"}', "--at", then, at=then)
    assert cw.json("tick", at=then)["fired"] == 1
    sent, = cw.json("history", "stale", at=then)["runs"]  # fmt: skip
    assert sent["outcome"] == "ok"  # the broker took it: the send itself was on time
    worker = rabbit_worker.start(tmp_path)
    wait_until("the worker to revoke the stale message", lambda: len(worker.revoked()) == 1)
    (revoked,) = worker.revoked()
    assert revoked["expired"] is True
    assert worker.ran() == []


def test_the_redis_broker_takes_the_same_messages(tmp_path: Path, redis_worker: Worker) -> None:
    worker = redis_worker.start(tmp_path)
    cw = celery_node(tmp_path, worker)
    now = _now()
    for n in range(3):
        _add(cw, f"via-redis-{n}", "record", "--args", json.dumps({"account": f"r{n}"}), "--at", now)
    assert cw.json("tick")["fired"] == 3
    wait_until("3 tasks at the worker", lambda: len(worker.ran()) >= 3)
    ran = worker.ran()
    assert sorted(record["args"][0] for record in ran) == ["r0", "r1", "r2"]
    assert len({record["id"] for record in ran}) == 3
    fire_ids = {run["fire_id"] for n in range(3) for run in _runs(cw, f"via-redis-{n}")}
    assert {record["headers"]["cronwright_fire_id"] for record in ran} == fire_ids


def test_check_connects_without_sending_and_names_a_broker_it_cannot_reach(
    tmp_path: Path, rabbit_worker: Worker
) -> None:
    cw = celery_node(tmp_path, rabbit_worker)
    done = cw.run("check")
    assert done.rc == 0, done.stderr
    assert "ok: 2 targets" in done.stdout
    secrets = tmp_path / "secrets.env"
    secrets.write_text(
        f"FLEET_BROKER=amqp://guest:Unre4chable-pw@127.0.0.1:5699//\nFLEET_BACKEND={REDIS_BACKEND}\n"
    )
    done = cw.run("check")
    assert done.rc != 0
    assert "target fleet.fail: cannot reach the broker" in done.stderr
    assert "Unre4chable-pw" not in done.stdout + done.stderr
    secrets.write_text(f"FLEET_BACKEND={REDIS_BACKEND}\n")
    done = cw.run("check")
    assert done.rc != 0 and "FLEET_BROKER not set" in done.stderr
    assert cw.run("check").rc != 0
    assert rabbit_worker.ran() == []  # nothing was sent


def test_targets_shows_where_a_celery_action_sends(tmp_path: Path, rabbit_worker: Worker) -> None:
    cw = celery_node(tmp_path, rabbit_worker)
    (fleet,) = [row for row in cw.json("targets")["targets"] if row["target"] == "fleet"]
    assert fleet["kind"] == "celery"
    record = next(action for action in fleet["actions"] if action["action"] == "record")
    assert record["route"] == {
        "result": "sent",
        "task": "cw.record",
        "queue": rabbit_worker.queue,
        "positional": ["account"],
    }
    assert record["secrets"] == ["FLEET_BROKER", "FLEET_BACKEND"]  # their names; never their values
    shown = cw.ok("targets").stdout
    assert f"sends: result wait, task cw.fail, queue {rabbit_worker.queue}" in shown
    assert f'sends: result sent, task cw.record, queue {rabbit_worker.queue}, positional ["account"]' in shown


def test_the_broker_password_never_reaches_logs_replies_or_history(
    tmp_path: Path, rabbit_worker: Worker
) -> None:
    reachable(5672)
    cw = celery_node(tmp_path, rabbit_worker)
    secret = "Wr0ng-Pa55word"
    (tmp_path / "secrets.env").write_text(
        f"FLEET_BROKER=amqp://guest:{secret}@127.0.0.1:5672//\nFLEET_BACKEND={REDIS_BACKEND}\n"
    )
    _add(cw, "refused", "record", "--args", '{"account": "x"}', "--at", _now(), "--max-attempts", "1")
    ticked = cw.run("tick", "--json")
    assert ticked.rc == 0, ticked.stderr
    (run,) = _runs(cw, "refused")
    assert run["outcome"] == "error" and "ACCESS_REFUSED" in run["message"], run
    said = [
        ticked.stdout,
        ticked.stderr,
        cw.run("show", "refused", "--json").stdout,
        cw.run("history", "--json", "--output").stdout,
        cw.run("targets", "--json").stdout,
        cw.run("check").stderr,
    ]
    assert [text for text in said if secret in text or "guest:" in text] == []


def test_a_waited_task_keeps_its_occurrence_in_flight_so_overlap_skips_the_next(
    tmp_path: Path, rabbit_worker: Worker
) -> None:
    worker = rabbit_worker.start(tmp_path)
    cw = celery_node(tmp_path, worker, min_period="1s")
    with serving(cw):
        _add(cw, "slow-every-second", "hang", "--every", "1s")  # each task sleeps 30 s; its wait, 2 s
        wait_until(
            "an occurrence skipped while the task ran",
            lambda: cw.json("show", "slow-every-second")["job"]["skipped"]["overlap"] >= 1,
        )
    runs = _runs(cw, "slow-every-second")
    # Each waited 2 s for a task that sleeps 30: a timeout (or interrupted, if serve stopped during one).
    assert runs and {run["outcome"] for run in runs} <= {"timeout", "interrupted"}
