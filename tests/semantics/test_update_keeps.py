"""DESIGN semantic 26 (update keeps what it is not given) and semantic 13 (a changed schedule re-arms; the
same schedule, however spelled, does not), through the protocol. The node zone is Europe/Berlin."""

from __future__ import annotations

from conftest import Harness, at


def test_a_changed_cron_without_tz_keeps_the_jobs_zone(harness: Harness) -> None:
    harness.create("zoned", {"cron": "0 9 * * *", "tz": "America/New_York"})
    job = harness.ok("update", name="zoned", changes={"schedule": {"cron": "0 10 * * *"}})["job"]
    assert job["schedule"] == {"cron": "0 10 * * *", "tz": "America/New_York"}
    # 10:00 in New York (EST, -05:00) is 16:00 in Berlin.
    assert job["next_run_at"] == "2026-03-02T16:00:00+01:00"


def test_tz_alone_moves_a_cron_job_to_that_zone_and_re_arms_it(harness: Harness) -> None:
    harness.create("zoned", {"cron": "0 9 * * *"})
    harness.clock.set(at("2026-03-02T09:30:00+01:00"))
    job = harness.ok("update", name="zoned", changes={"schedule": {"tz": "Asia/Tokyo"}})["job"]
    assert job["schedule"] == {"cron": "0 9 * * *", "tz": "Asia/Tokyo"}
    # 09:00 in Tokyo (+09:00) is 01:00 in Berlin: the next one after 09:30 Berlin is tomorrow's.
    assert job["next_run_at"] == "2026-03-03T01:00:00+01:00"


def test_tz_alone_on_a_job_that_is_not_cron_is_refused_and_changes_nothing(harness: Harness) -> None:
    before = harness.create("beat", {"every": "1h"})
    reply = harness.call("update", name="beat", changes={"schedule": {"tz": "Asia/Tokyo"}})
    assert (reply["ok"], reply["error"], reply["field"]) == (False, "invalid", "schedule.tz")
    assert "'tz' alone moves a cron schedule" in reply["message"]
    assert harness.job("beat") == before


def test_tz_alone_in_a_create_is_refused(harness: Harness) -> None:
    reply = harness.call(
        "create_job", job={"name": "x", "target": "reports", "action": "daily", "schedule": {"tz": "UTC"}}
    )
    assert (reply["error"], reply["field"]) == ("invalid", "schedule")


def test_the_same_schedule_spelled_otherwise_keeps_the_next_run_and_writes_nothing(harness: Harness) -> None:
    harness.create("beat", {"every": "1h"})
    harness.clock.set(at("2026-03-02T09:30:00+01:00"))
    before = harness.job("beat")
    for spelling in ({"every": "60m"}, {"every": "PT1H"}, {"every_ms": 3_600_000}):
        reply = harness.ok("update", name="beat", changes={"schedule": spelling})
        assert reply["job"] == before
    assert harness.job("beat") == before


def test_a_past_run_at_left_as_it_was_is_not_refused(harness: Harness) -> None:
    """An update that does not change a one-shot's instant does not re-check it (semantic 4 is for a new
    instant): the late one-shot keeps its run (semantic 6), and its other changes land."""
    harness.create("shot", run_at="2026-03-02T09:30:00+01:00")
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    same = {"run_at": "2026-03-02T08:30:00Z", "max_attempts": 2}  # 09:30 in Berlin, spelled in UTC
    job = harness.ok("update", name="shot", changes=same)["job"]
    assert (job["next_run_at"], job["max_attempts"]) == ("2026-03-02T09:30:00+01:00", 2)
    moved = harness.call("update", name="shot", changes={"run_at": "2026-03-02T09:40:00+01:00"})
    assert (moved["error"], moved["field"]) == ("invalid", "run_at")
