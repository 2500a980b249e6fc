"""Semantic 31: several cron expressions in one schedule fire at the union of their instants, each once."""

from __future__ import annotations

from conftest import Harness, at


def test_two_expressions_sharing_an_instant_fire_it_once(harness: Harness) -> None:
    # Monday 2026-03-02: both "weekdays at 09:00" and "Mondays at 09:00" name 09:00.
    harness.clock.set(at("2026-03-01T12:00:00+01:00"))
    job = harness.create("union", {"cron": ["0 9 * * 1-5", "0 9 * * 1", "0 12 * * 6"]})
    assert job["schedule"] == {"cron": ["0 9 * * 1-5", "0 9 * * 1", "0 12 * * 6"], "tz": "Europe/Berlin"}
    assert job["next_run_at"] == "2026-03-02T09:00:00+01:00"

    harness.clock.set(at("2026-03-02T09:00:10+01:00"))
    assert harness.tick()["fired"] == 1
    assert harness.tick()["fired"] == 0
    assert [call.scheduled_for for call in harness.runner.calls] == [at("2026-03-02T09:00:00+01:00")]
    assert harness.job("union")["next_run_at"] == "2026-03-03T09:00:00+01:00"


def test_the_saturday_expression_adds_its_own_instants(harness: Harness) -> None:
    harness.clock.set(at("2026-03-06T10:00:00+01:00"))  # a Friday, after 09:00
    harness.create("union", {"cron": ["0 9 * * 1-5", "0 12 * * 6"]})
    assert harness.job("union")["next_run_at"] == "2026-03-07T12:00:00+01:00"
    harness.clock.set(at("2026-03-07T12:00:01+01:00"))
    assert harness.tick()["fired"] == 1
    assert harness.job("union")["next_run_at"] == "2026-03-09T09:00:00+01:00"


def test_a_list_of_one_is_the_expression_itself(harness: Harness) -> None:
    job = harness.create("one", {"cron": ["0 9 * * *"]})
    assert job["schedule"]["cron"] == "0 9 * * *"


def test_each_member_is_refused_on_its_own_terms(harness: Harness) -> None:
    spec = {
        "name": "bad",
        "target": "reports",
        "action": "daily",
        "schedule": {"cron": ["0 9 * * *", "0 0 30 2 *"]},
    }
    reply = harness.call("create_job", job=spec)
    assert (reply["ok"], reply["error"], reply["field"]) == (False, "invalid", "schedule.cron[1]")
    empty = harness.call("create_job", job={**spec, "schedule": {"cron": []}})
    assert (empty["ok"], empty["error"]) == (False, "invalid")


def test_an_update_to_several_expressions_keeps_the_zone(harness: Harness) -> None:
    harness.create("moving", {"cron": "0 9 * * *", "tz": "America/New_York"})
    changed = harness.ok("update", name="moving", changes={"schedule": {"cron": ["0 9 * * *", "0 18 * * *"]}})
    assert changed["job"]["schedule"] == {"cron": ["0 9 * * *", "0 18 * * *"], "tz": "America/New_York"}


def test_preview_of_two_expressions_across_the_october_night(harness: Harness) -> None:
    """Europe/Berlin, 2026-10-25: 03:00 CEST falls back to 02:00 CET. The fixed-time 02:30 fires once;
    the wildcard-hour :30 fires in both copies of the hour; their union holds each instant once."""
    reply = harness.ok(
        "preview",
        expression=["30 2 * * *", "30 * * * *"],
        tz="Europe/Berlin",
        after="2026-10-25T01:00:00+02:00",
        count=4,
    )
    assert reply["expression"] == ["30 2 * * *", "30 * * * *"]
    assert reply["firings"] == [
        "2026-10-25T01:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:30:00+01:00",
        "2026-10-25T03:30:00+01:00",
    ]
