"""DESIGN semantics 15 and 16: dedupe keys and declarative seeds."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.errors import ConfigError
from cronwright.service.seeds import upsert_seeds
from cronwright.store.memory import MemoryStore

REMINDER = {
    "name": "remind",
    "target": "reports",
    "action": "daily",
    "run_at": "2026-03-02T10:00:00+01:00",
    "dedupe_key": "remind-42",
}


def test_default_dedupe_returns_the_live_job(harness: Harness) -> None:
    first = harness.ok("create_job", job=REMINDER)
    again = harness.ok("create_job", job={**REMINDER, "name": "remind-again"})
    assert again["deduped"] is True
    assert again["job"]["id"] == first["job"]["id"]
    assert len(harness.ok("list")["jobs"]) == 1


def test_default_dedupe_forgets_a_key_once_its_job_has_ended(harness: Harness) -> None:
    harness.ok("create_job", job=REMINDER)
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    again = harness.ok(
        "create_job", job={**REMINDER, "name": "remind-2", "run_at": "2026-03-02T11:00:00+01:00"}
    )
    assert "deduped" not in again


def test_once_dedupe_holds_across_a_restart(harness: Harness) -> None:
    once = {**REMINDER, "once": True}
    harness.ok("create_job", job=once)
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    restarted = harness.restart()
    reply = restarted.ok(
        "create_job", job={**once, "name": "remind-2", "run_at": "2026-03-02T11:00:00+01:00"}
    )
    assert reply["deduped"] is True
    assert reply["job"]["state"] == "done"
    restarted.clock.set(at("2026-03-02T11:00:00+01:00"))
    assert restarted.tick()["fired"] == 0


def test_once_dedupe_counts_a_deleted_row(harness: Harness) -> None:
    once = {**REMINDER, "once": True}
    harness.ok("create_job", job=once)
    harness.ok("delete", name="remind")
    assert harness.ok("create_job", job=once)["deduped"] is True


def test_once_needs_a_durable_store(clock: ManualClock) -> None:
    harness = make_harness(MemoryStore(), clock)
    reply = harness.call("create_job", job={**REMINDER, "once": True})
    assert (reply["error"], reply["field"]) == ("invalid", "once")


SEED: dict[str, Any] = {
    "dedupe_key": "nightly",
    "name": "nightly",
    "target": "backup",
    "action": "nightly",
    "args": {"dest": "/mnt/a"},
    "schedule": {"cron": "0 3 * * *"},
}


def test_a_changed_seed_is_updated_in_place_and_keeps_next_run_unless_its_schedule_changed(
    harness: Harness,
) -> None:
    upsert_seeds(harness.service, [SEED])
    first = harness.job("nightly")
    upsert_seeds(harness.service, [{**SEED, "args": {"dest": "/mnt/b"}}])
    changed = harness.job("nightly")
    assert changed["id"] == first["id"]
    assert changed["args"] == {"dest": "/mnt/b"}
    assert changed["next_run_at"] == first["next_run_at"]
    upsert_seeds(harness.service, [{**SEED, "schedule": {"cron": "0 4 * * *"}}])
    assert harness.job("nightly")["next_run_at"] == "2026-03-03T04:00:00+01:00"


def test_an_unchanged_seed_changes_nothing(harness: Harness) -> None:
    upsert_seeds(harness.service, [SEED])
    before = harness.job("nightly")
    harness.clock.set(at("2026-03-02T12:00:00+01:00"))
    upsert_seeds(harness.service, [SEED])
    assert harness.job("nightly") == before


def test_a_deleted_recurring_seed_is_re_created(harness: Harness) -> None:
    upsert_seeds(harness.service, [SEED])
    harness.ok("delete", name="nightly")
    upsert_seeds(harness.service, [SEED])
    assert harness.job("nightly")["id"] == 2


def test_a_one_shot_seed_with_a_terminal_row_is_a_no_op(harness: Harness) -> None:
    seed = {**REMINDER, "dedupe_key": "launch"}
    upsert_seeds(harness.service, [seed])
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.tick()
    upsert_seeds(harness.service, [seed])
    jobs = harness.ok("list")["jobs"]
    assert [(job["name"], job["state"]) for job in jobs] == [("remind", "done")]
    assert len(harness.runner.calls) == 1


def test_an_invalid_seed_aborts_boot_naming_it(harness: Harness) -> None:
    with pytest.raises(ConfigError, match="nightly-bad"):
        upsert_seeds(
            harness.service, [{**SEED, "dedupe_key": "nightly-bad", "schedule": {"cron": "61 * * * *"}}]
        )
    with pytest.raises(ConfigError, match="dedupe_key"):
        upsert_seeds(harness.service, [{k: v for k, v in SEED.items() if k != "dedupe_key"}])
