"""DESIGN semantics 2-5 and 17: what comes due, when, and until when."""

from __future__ import annotations

from datetime import datetime, timedelta

from conftest import Harness, at


def test_impossible_expression_is_refused_at_create(harness: Harness) -> None:
    reply = harness.call(
        "create_job",
        job={"name": "never", "target": "reports", "action": "daily", "schedule": {"cron": "0 0 30 2 *"}},
    )
    assert reply["ok"] is False
    assert reply["error"] == "invalid"
    assert reply["field"] == "schedule.cron"
    assert "February" in reply["message"]
    assert harness.ok("list")["jobs"] == []


def test_expression_that_cannot_come_due_before_the_end_has_no_next_run(harness: Harness) -> None:
    # Now is 2026-03-02; the next 29 February is in 2028, beyond a 30-day lifetime.
    job = harness.create("leap", {"cron": "0 0 29 2 *"}, lifetime="30d")
    assert job["next_run_at"] is None
    assert job["state"] == "active"
    assert job["ends_at"] == "2026-04-01T10:00:00+02:00"  # 30 days of 24 hours, across DST


def test_every_period_below_the_floor_is_refused(harness: Harness) -> None:
    reply = harness.call(
        "create_job",
        job={"name": "fast", "target": "reports", "action": "daily", "schedule": {"every": "30s"}},
    )
    assert reply["error"] == "period_too_short"
    assert "1m" in reply["message"]


def test_every_fires_on_its_grid_after_downtime(harness: Harness) -> None:
    job = harness.create("grid", {"every": "10m"}, misfire="coalesce")
    assert job["next_run_at"] == "2026-03-02T09:10:00+01:00"
    # The node is down for 47 minutes past the first due instant.
    harness.clock.set(at("2026-03-02T09:57:00+01:00"))
    assert harness.tick()["fired"] == 1
    shown = harness.job("grid")
    # Exactly one catch-up, for the latest missed occurrence, and the grid is kept.
    assert shown["last_run"]["fire_id"] == "1-1"
    assert [c.scheduled_for.isoformat() for c in harness.runner.calls] == ["2026-03-02T08:50:00+00:00"]
    assert shown["next_run_at"] == "2026-03-02T10:00:00+01:00"
    assert shown["skipped"]["misfire"] == 4


def next_run_at(harness: Harness, job_id: int) -> datetime | None:
    stored = harness.node.store.get(job_id)
    assert stored is not None, job_id
    return stored.next_run_at


def test_an_every_grid_made_mid_second_is_anchored_on_the_whole_second(harness: Harness) -> None:
    harness.clock.set(at("2026-03-02T09:00:00.481700+01:00"))
    job = harness.create("grid", {"every": "10m"})
    assert next_run_at(harness, job["id"]) == at("2026-03-02T09:10:00+01:00")
    harness.clock.set(at("2026-03-02T09:10:00+01:00"))
    assert harness.tick()["fired"] == 1
    # Due on the whole second, so the envelope's exact scheduled_for reads as one too.
    assert [c.scheduled_for.isoformat() for c in harness.runner.calls] == ["2026-03-02T08:10:00+00:00"]
    assert next_run_at(harness, job["id"]) == at("2026-03-02T09:20:00+01:00")


def test_one_shot_fires_once(harness: Harness) -> None:
    harness.ok(
        "create_job",
        job={"name": "once", "target": "reports", "action": "daily", "run_at": "2026-03-02T09:30:00+01:00"},
    )
    harness.clock.set(at("2026-03-02T09:30:00+01:00"))
    assert harness.tick()["fired"] == 1
    harness.clock.advance(timedelta(days=1))
    assert harness.tick()["fired"] == 0
    shown = harness.job("once")
    assert shown["state"] == "done"
    assert shown["next_run_at"] is None
    assert len(harness.runner.calls) == 1


def test_run_at_further_in_the_past_than_the_grace_is_refused(harness: Harness) -> None:
    late = {"name": "late", "target": "reports", "action": "daily", "run_at": "2026-03-02T08:58:59+01:00"}
    assert harness.call("create_job", job=late)["error"] == "invalid"
    recent = {**late, "run_at": "2026-03-02T08:59:30+01:00"}
    assert harness.ok("create_job", job=recent)["job"]["next_run_at"] == "2026-03-02T08:59:30+01:00"


def test_lifetime_defaults_to_the_ceiling_and_cannot_exceed_it(harness: Harness) -> None:
    job = harness.create("default-life", {"cron": "0 7 * * *"})
    assert job["ends_at"] == "2026-05-31T10:00:00+02:00"  # 90 days, across the March DST change
    reply = harness.call(
        "create_job",
        job={"name": "too-long", "target": "reports", "action": "daily", "schedule": {"cron": "0 7 * * *"},
             "lifetime": "91d"},
    )  # fmt: skip
    assert reply["error"] == "lifetime_too_long"


def test_lifetime_as_an_instant_without_offset_is_read_in_the_node_zone(harness: Harness) -> None:
    job = harness.create("until", {"cron": "0 7 * * *"}, lifetime="2026-04-01T12:00:00")
    assert job["ends_at"] == "2026-04-01T12:00:00+02:00"


def test_lifetime_ending_in_the_past_is_refused(harness: Harness) -> None:
    reply = harness.call(
        "create_job",
        job={"name": "past", "target": "reports", "action": "daily", "schedule": {"cron": "0 7 * * *"},
             "lifetime": "2026-03-01T00:00:00+01:00"},
    )  # fmt: skip
    assert reply["error"] == "invalid"
    assert reply["field"] == "lifetime"


def test_job_expires_at_its_end_and_never_fires_at_or_after_it(harness: Harness) -> None:
    # Every 10 minutes until 09:30: the 09:30 occurrence is at the end, so it never fires.
    harness.create("short", {"every": "10m"}, lifetime="30m")
    fired = []
    for minute in (10, 20, 30, 40):
        harness.clock.set(at(f"2026-03-02T09:{minute}:00+01:00"))
        fired.append(harness.tick()["fired"])
    assert fired == [1, 1, 0, 0]
    shown = harness.job("short")
    assert shown["state"] == "expired"
    assert shown["next_run_at"] is None
    assert "job_expired" in harness.events.kinds()


def test_update_without_lifetime_never_extends_the_end(harness: Harness) -> None:
    job = harness.create("keep-end", {"cron": "0 7 * * *"}, lifetime="10d")
    harness.clock.advance(timedelta(days=5))
    updated = harness.ok(
        "update", name="keep-end", changes={"schedule": {"cron": "0 8 * * *"}, "args": {"a": 1}}
    )
    assert updated["job"]["ends_at"] == job["ends_at"]


def test_update_with_lifetime_renews_an_expired_job_from_the_update(harness: Harness) -> None:
    harness.create("renew", {"cron": "0 7 * * *"}, lifetime="1d")
    harness.clock.set(at("2026-03-05T09:00:00+01:00"))
    harness.tick()
    assert harness.job("renew")["state"] == "expired"
    renewed = harness.ok("update", name="renew", changes={"lifetime": "2d"})["job"]
    assert renewed["state"] == "active"
    assert renewed["ends_at"] == "2026-03-07T09:00:00+01:00"
    assert renewed["next_run_at"] == "2026-03-06T07:00:00+01:00"


def test_every_instant_in_a_reply_has_the_node_zone_offset(harness: Harness) -> None:
    job = harness.create("zoned", {"cron": "0 7 * * *", "tz": "America/New_York"})
    # 07:00 in New York is 13:00 in Berlin, shown with Berlin's offset, to the second.
    assert job["next_run_at"] == "2026-03-02T13:00:00+01:00"
    for key in ("created_at", "updated_at", "ends_at"):
        assert job[key].endswith("+01:00") or job[key].endswith("+02:00")
        assert len(job[key]) == len("2026-03-02T13:00:00+01:00")
