"""Semantic 33, through the service and node: an occurrence whose nominal instant falls on an excluded
date, in the schedule's zone, does not fire and is counted in skipped.calendar; get and preview mark it;
an unknown calendar is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.config.calendar_tables import CalendarConfig, from_config
from cronwright.core.events import EventKind
from cronwright.store.sqlite import SqliteStore


@pytest.fixture
def harness(clock: ManualClock, tmp_path: Path) -> Iterator[Harness]:
    clock.set(at("2026-03-02T08:00:00+01:00"))
    tables = {"holidays": CalendarConfig.model_validate({"dates": ["2026-03-03"]}, strict=False)}
    made = make_harness(SqliteStore(tmp_path / "cw.db"), clock, calendars=from_config(tables, tmp_path))
    yield made
    made.runner.close()


def test_a_holiday_is_skipped_and_counted(harness: Harness) -> None:
    job = harness.create("daily", {"cron": "0 9 * * *", "exclude": ["holidays"]})
    assert job["schedule"]["exclude"] == ["holidays"]
    harness.clock.set(at("2026-03-02T09:00:10+01:00"))
    assert harness.tick()["fired"] == 1
    harness.clock.set(at("2026-03-03T09:00:10+01:00"))
    reply = harness.tick()
    assert (reply["fired"], reply["skipped"]) == (0, 1)
    shown = harness.job("daily")
    assert shown["skipped"] == {"overlap": 0, "misfire": 0, "calendar": 1}
    assert shown["next_run_at"] == "2026-03-04T09:00:00+01:00"
    skips = [e for e in harness.events.events if e.kind is EventKind.JOB_SKIPPED]
    assert [(e.fields["reason"], e.fields["count"]) for e in skips] == [("calendar", 1)]
    harness.clock.set(at("2026-03-04T09:00:10+01:00"))
    assert harness.tick()["fired"] == 1
    assert [c.scheduled_for for c in harness.runner.calls] == [
        at("2026-03-02T09:00:00+01:00"),
        at("2026-03-04T09:00:00+01:00"),
    ]


def test_the_next_firings_mark_the_excluded_one(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 9 * * *", "exclude": ["holidays"]})
    firings = harness.ok("get", name="daily")["next_firings"]
    assert [f["nominal"][:10] for f in firings] == [
        "2026-03-02",
        "2026-03-03",
        "2026-03-04",
        "2026-03-05",
        "2026-03-06",
    ]
    assert [("excluded" in f) for f in firings] == [False, True, False, False, False]
    assert "2026-03-03" in firings[1]["excluded"]


def test_missed_and_excluded_occurrences_are_counted_apart(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 9 * * *", "exclude": ["holidays"]})
    harness.clock.set(at("2026-03-05T10:00:00+01:00"))  # down since before 2 March 09:00
    assert harness.tick()["fired"] == 0
    # 2, 4 and 5 March were missed (5 March is an hour late); 3 March was a holiday.
    assert harness.job("daily")["skipped"] == {"overlap": 0, "misfire": 3, "calendar": 1}


def test_coalesce_catches_up_the_latest_occurrence_a_calendar_leaves(harness: Harness) -> None:
    harness.clock.set(at("2026-03-02T22:30:00+01:00"))
    harness.create("hourly", {"cron": "0 * * * *", "exclude": ["holidays"]}, misfire="coalesce")
    harness.clock.set(at("2026-03-03T00:30:00+01:00"))  # 23:00 was missed; 00:00 is on the holiday
    assert harness.tick()["fired"] == 1
    assert harness.runner.calls[0].scheduled_for == at("2026-03-02T23:00:00+01:00")
    assert harness.job("hourly")["skipped"] == {"overlap": 0, "misfire": 0, "calendar": 1}


def test_an_unknown_calendar_is_refused_and_nothing_is_created(harness: Harness) -> None:
    spec = {
        "name": "x",
        "target": "reports",
        "action": "daily",
        "schedule": {"cron": "0 9 * * *", "exclude": ["holidayz"]},
    }
    reply = harness.call("create_job", job=spec)
    assert (reply["ok"], reply["error"], reply["calendar"]) == (False, "unknown_calendar", "holidayz")
    assert "[calendars.holidayz]" in reply["message"]
    assert harness.ok("list")["jobs"] == []
    preview = harness.call("preview", expression="0 9 * * *", exclude=["nope"])
    assert (preview["ok"], preview["error"]) == (False, "unknown_calendar")


def test_preview_marks_the_excluded_instants(harness: Harness) -> None:
    reply = harness.ok(
        "preview", expression="0 9 * * *", after="2026-03-02T10:00:00+01:00", count=2, exclude=["holidays"]
    )
    assert reply["firings"] == ["2026-03-03T09:00:00+01:00", "2026-03-04T09:00:00+01:00"]
    assert [entry["at"] for entry in reply["excluded"]] == ["2026-03-03T09:00:00+01:00"]
