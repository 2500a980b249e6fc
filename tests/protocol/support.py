"""Helpers for protocol tests: a snapshot of the store as the operator sees it, and a refusal checker."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from conftest import Harness
from cronwright.core.sources import Source, operator

REQUEST_ID = "req-7f3a"


def agent(**limits: Any) -> Source:
    """A configured, non-operator source with the quotas the contract gives as an example."""
    settings: dict[str, Any] = {
        "targets": ("reports.*",),
        "max_schedules": 1,
        "min_period": timedelta(minutes=5),
        "max_lifetime": timedelta(days=30),
        **limits,
    }
    return Source("agent", **settings)


def snapshot(harness: Harness) -> str:
    """Every job row and every run, as JSON: two equal snapshots mean the store did not change."""
    jobs = harness.ok("list")["jobs"]
    runs = harness.ok("history", limit=1000)["runs"]
    return json.dumps({"jobs": jobs, "runs": runs}, sort_keys=True)


def refused(
    harness: Harness, request: dict[str, Any], code: str, source: Source | None = None, **expected: Any
) -> dict[str, Any]:
    """Sends `request` (with a request_id) and checks the refusal: its code, a message, the echoed
    request_id, the `expected` fields, and a store left exactly as it was."""
    before = snapshot(harness)
    reply = harness.protocol.dispatch({**request, "request_id": REQUEST_ID}, source or operator())
    assert reply["ok"] is False, reply
    assert reply["error"] == code, reply
    assert isinstance(reply["message"], str) and reply["message"].strip(), reply
    assert reply["request_id"] == REQUEST_ID, reply
    for key, value in expected.items():
        assert reply.get(key) == value, (key, reply)
    json.dumps(reply, allow_nan=False)
    assert snapshot(harness) == before, "a refused request changed the store"
    return reply


def create(name: str, **job: Any) -> dict[str, Any]:
    """A create_job request for reports.daily (cron 0 10 * * * unless a schedule or run_at is given)."""
    spec: dict[str, Any] = {"name": name, "target": "reports", "action": "daily", **job}
    if "schedule" not in spec and "run_at" not in spec:
        spec["schedule"] = {"cron": "0 10 * * *"}
    return {"action": "create_job", "job": spec}
