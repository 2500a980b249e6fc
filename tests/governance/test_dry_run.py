"""Dry runs of create_job and update (issue 15): every check of the real request, nothing written.

"Nothing written" is checked on the bytes: the SQLite file and its WAL hash the same before and after.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from conftest import Harness
from cronwright.core.sources import Source
from cronwright.fronts.mcp import tool_specs
from cronwright.store.sqlite import SqliteStore
from protocol.support import agent, create


def store_bytes(harness: Harness) -> str:
    """A digest of the store's file and its write-ahead log: what a write would change."""
    assert isinstance(harness.raw_store, SqliteStore), "this test reads the SQLite store's file"
    path = Path(harness.raw_store.path)
    digest = hashlib.sha256()
    for part in (path, path.with_name(path.name + "-wal")):
        digest.update(part.read_bytes() if part.exists() else b"")
    return digest.hexdigest()


def dry(request: dict[str, Any]) -> dict[str, Any]:
    return {**request, "dry_run": True}


def test_a_dry_create_answers_the_would_be_job_and_writes_no_byte(harness: Harness) -> None:
    source = agent(max_schedules=3)
    assert harness.protocol.dispatch(create("first"), source)["ok"]
    before = store_bytes(harness)

    reply = harness.protocol.dispatch(dry(create("report", lifetime="7d")), source)

    assert reply["ok"] and reply["dry_run"] is True, reply
    assert reply["job"]["name"] == "report" and reply["job"]["state"] == "active"
    # The clock stands at 2026-03-02T09:00+01:00; the cron is 0 10 * * * in Berlin.
    assert reply["firings"] == [f"2026-03-0{day}T10:00:00+01:00" for day in range(2, 7)]
    assert reply["ends_at"] == "2026-03-09T09:00:00+01:00" == reply["job"]["ends_at"]
    assert reply["quota"] == {"used": 2, "max": 3}
    assert "persistence" not in reply
    assert store_bytes(harness) == before
    assert harness.service.store.find("report") is None


def test_a_dry_create_is_refused_exactly_as_the_real_one(harness: Harness) -> None:
    source = agent(max_schedules=1)
    assert harness.protocol.dispatch(create("first"), source)["ok"]
    before = store_bytes(harness)

    over = harness.protocol.dispatch(dry(create("second")), source)
    taken = harness.protocol.dispatch(dry(create("first")), agent(max_schedules=5))
    short = harness.protocol.dispatch(dry(create("fast", schedule={"every": "1m"})), agent(max_schedules=5))
    foreign = harness.protocol.dispatch(dry(create("x", target="backup", action="nightly")), source)

    assert over["error"] == "quota_exceeded" == harness.protocol.dispatch(create("second"), source)["error"]
    assert taken["error"] == "name_taken"
    assert short["error"] == "period_too_short"
    assert foreign["error"] == "target_not_allowed"
    assert store_bytes(harness) == before


def test_a_dry_update_shows_the_new_firings_and_changes_nothing(harness: Harness) -> None:
    job = harness.create("report", {"cron": "0 10 * * *"})
    before = store_bytes(harness)

    reply = harness.ok("update", name="report", changes={"schedule": {"cron": "30 7 * * *"}}, dry_run=True)

    assert reply["dry_run"] is True and reply["job"]["schedule"]["cron"] == "30 7 * * *"
    assert reply["firings"][:2] == ["2026-03-03T07:30:00+01:00", "2026-03-04T07:30:00+01:00"]
    assert reply["quota"] == {"used": 1, "max": None}  # the operator has no max_schedules
    assert store_bytes(harness) == before
    assert harness.job("report") == job


def test_a_dry_update_is_refused_as_the_real_one(harness: Harness) -> None:
    harness.create("report", {"cron": "0 10 * * *"})
    harness.create("other", {"cron": "0 11 * * *"})
    before = store_bytes(harness)

    taken = harness.call("update", name="report", changes={"name": "other"}, dry_run=True)
    immutable = harness.call("update", name="report", changes={"target": "backup"}, dry_run=True)

    assert taken["error"] == "name_taken" and immutable["error"] == "immutable_field"
    assert store_bytes(harness) == before


def test_a_dry_create_of_a_deduped_key_says_which_job_is_there(harness: Harness) -> None:
    first = harness.create("keyed", {"every": "1h"}, dedupe_key="k")
    before = store_bytes(harness)

    reply = harness.ok("create_job", job={**create("again")["job"], "dedupe_key": "k"}, dry_run=True)

    assert reply["deduped"] is True and reply["dry_run"] is True and reply["job"]["id"] == first["id"]
    assert store_bytes(harness) == before


def test_mcp_tools_carry_dry_run_to_the_request_not_into_the_job() -> None:
    tools = tool_specs()
    create_tool, update_tool = tools["schedules_create"], tools["schedules_update"]
    assert "dry_run" in create_tool.arguments.model_fields and "dry_run" in update_tool.arguments.model_fields

    made = create_tool.request({"name": "r", "target": "t", "action": "a", "dry_run": True})
    changed = update_tool.request({"name": "r", "args": {"n": 1}, "dry_run": True})

    job = {"name": "r", "target": "t", "action": "a"}
    assert made == {"action": "create_job", "job": job, "dry_run": True}
    assert changed == {"action": "update", "name": "r", "changes": {"args": {"n": 1}}, "dry_run": True}


def test_a_dry_run_of_a_once_key_on_a_memory_store_is_refused(harness: Harness) -> None:
    # `once` needs a durable store: the real request's check applies to a dry run too. The harness's
    # store is SQLite, so the same request passes there and writes nothing.
    source = Source("agent", targets=("reports.*",))
    reply = harness.protocol.dispatch(dry(create("o", dedupe_key="k", once=True)), source)
    assert reply["ok"] and reply["dry_run"] is True
    assert harness.service.store.find("o") is None
