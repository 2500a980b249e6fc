"""The Celery app a real worker runs in the broker tests (`celery -A celery_tasks worker`, started by
conftest.py): it records each task it runs, with the cronwright headers it got, and each message it revoked,
in a Redis list named by the test (CW_TEST_RECORD)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import redis
from celery import Celery, Task
from celery.signals import task_revoked, worker_ready

HEADERS = (
    "cronwright_fire_id",
    "cronwright_attempt",
    "cronwright_scheduled_for",
    "cronwright_nominal",
    "cronwright_schedule",
    "cronwright_job_id",
)
RECORD = os.environ.get("CW_TEST_RECORD", "cw-test")
store = redis.Redis.from_url(os.environ.get("CW_TEST_REDIS", "redis://127.0.0.1:6379/15"))
app = Celery("cw_test", broker=os.environ.get("CW_TEST_BROKER"), backend=os.environ.get("CW_TEST_BACKEND"))
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    worker_hijack_root_logger=False,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
)


@app.task(bind=True, name="cw.record")
def record(self: Task, *args: Any, **kwargs: Any) -> str:
    headers = {name: getattr(self.request, name, None) for name in HEADERS}
    # `at`: when the task started on the worker (the bench measures due-to-start lag with it).
    entry = {
        "id": self.request.id,
        "args": list(args),
        "kwargs": kwargs,
        "headers": headers,
        "at": time.time(),
    }
    store.rpush(RECORD, json.dumps(entry))
    return "recorded"


@app.task(name="cw.fail")
def fail(**kwargs: Any) -> None:
    raise ValueError("the ledger is locked")


@app.task(name="cw.hang")
def hang(**kwargs: Any) -> None:
    time.sleep(30)


@task_revoked.connect
def revoked(request: Any = None, expired: bool = False, **_: Any) -> None:
    store.rpush(f"{RECORD}:revoked", json.dumps({"id": getattr(request, "id", None), "expired": expired}))


@worker_ready.connect
def ready(**_: Any) -> None:
    store.set(f"{RECORD}:ready", "1")
