"""Semantic 35, the pure part: which occurrences of [from, to) a backfill runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronwright.errors import Invalid
from cronwright.timing.backfill import MAX_BACKFILL, check_range, grid_from, plan
from cronwright.timing.cron_set import CronSet
from cronwright.timing.iso import render

BERLIN = ZoneInfo("Europe/Berlin")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_the_range_is_half_open_and_oldest_first() -> None:
    planned = plan(
        CronSet.parse("0 * * * *").iter_after(at("2026-12-01T08:59:59+01:00"), BERLIN),
        end=at("2026-12-01T12:00:00+01:00"),
        now=at("2026-12-02T00:00:00+01:00"),
        done=set(),
    )
    assert [render(t, BERLIN) for t in planned.occurrences] == [
        "2026-12-01T09:00:00+01:00",
        "2026-12-01T10:00:00+01:00",
        "2026-12-01T11:00:00+01:00",
    ]
    assert not planned.more


def test_what_already_started_or_waits_is_not_planned_again() -> None:
    walk = CronSet.parse("0 * * * *").iter_after(at("2026-12-01T08:59:59+01:00"), BERLIN)
    done = {at("2026-12-01T10:00:00+01:00").astimezone(UTC)}
    planned = plan(walk, at("2026-12-01T12:00:00+01:00"), at("2026-12-02T00:00:00+01:00"), done)
    assert [render(t, BERLIN) for t in planned.occurrences] == [
        "2026-12-01T09:00:00+01:00",
        "2026-12-01T11:00:00+01:00",
    ]


def test_calendar_excluded_occurrences_are_never_backfilled() -> None:
    walk = CronSet.parse("0 9 * * *").iter_after(at("2026-12-23T00:00:00+01:00"), BERLIN)
    planned = plan(
        walk,
        at("2026-12-27T00:00:00+01:00"),
        at("2027-01-01T00:00:00+01:00"),
        set(),
        excluded=lambda instant: instant.astimezone(BERLIN).day in (24, 25),
    )
    assert [render(t, BERLIN) for t in planned.occurrences] == [
        "2026-12-23T09:00:00+01:00",
        "2026-12-26T09:00:00+01:00",
    ]


def test_nothing_after_now_is_planned() -> None:
    walk = CronSet.parse("0 * * * *").iter_after(at("2026-12-01T08:59:59+01:00"), BERLIN)
    planned = plan(walk, at("2026-12-01T23:00:00+01:00"), at("2026-12-01T10:00:00+01:00"), set())
    assert [render(t, BERLIN) for t in planned.occurrences] == [
        "2026-12-01T09:00:00+01:00",
        "2026-12-01T10:00:00+01:00",
    ]


def test_at_most_a_thousand_and_the_rest_is_flagged() -> None:
    walk = CronSet.parse("* * * * *").iter_after(at("2026-11-01T00:00:00+01:00"), BERLIN)
    planned = plan(walk, at("2026-12-01T00:00:00+01:00"), at("2026-12-02T00:00:00+01:00"), set())
    assert len(planned.occurrences) == MAX_BACKFILL and planned.more
    assert render(planned.occurrences[0], BERLIN) == "2026-11-01T00:01:00+01:00"


def test_the_fall_back_night_backfills_each_occurrence_once() -> None:
    # 2026-10-25: 02:00-02:59 happens twice in Berlin; a fixed-time 02:30 fired once, an hourly one twice.
    fixed = plan(
        CronSet.parse("30 2 * * *").iter_after(at("2026-10-25T00:00:00+02:00"), BERLIN),
        at("2026-10-26T00:00:00+01:00"),
        at("2026-10-27T00:00:00+01:00"),
        set(),
    )
    assert [render(t, BERLIN) for t in fixed.occurrences] == ["2026-10-25T02:30:00+02:00"]
    hourly = plan(
        CronSet.parse("30 * * * *").iter_after(at("2026-10-25T02:00:00+02:00"), BERLIN),
        at("2026-10-25T03:00:00+01:00"),
        at("2026-10-27T00:00:00+01:00"),
        set(),
    )
    assert [render(t, BERLIN) for t in hourly.occurrences] == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:30:00+01:00",
    ]


def test_an_every_grid_is_walked_back_before_its_anchor_and_on_after_it() -> None:
    anchor = at("2026-12-01T10:00:00+00:00")
    period = timedelta(minutes=40)
    before = iter(grid_from(anchor, period, at("2026-12-01T08:30:00+00:00")))
    assert [next(before), next(before), next(before)] == [
        at("2026-12-01T08:40:00+00:00"),
        at("2026-12-01T09:20:00+00:00"),
        at("2026-12-01T10:00:00+00:00"),
    ]
    on_anchor = iter(grid_from(anchor, period, anchor))
    assert next(on_anchor) == anchor
    after = iter(grid_from(anchor, period, at("2026-12-01T10:00:01+00:00")))
    assert next(after) == at("2026-12-01T10:40:00+00:00")


@pytest.mark.parametrize(
    ("start", "end", "field"),
    [
        ("2026-12-01T10:00:00+00:00", "2026-12-01T10:00:00+00:00", "to"),
        ("2026-12-01T11:00:00+00:00", "2026-12-01T10:00:00+00:00", "to"),
        ("2026-12-03T00:00:00+00:00", "2026-12-04T00:00:00+00:00", "from"),
    ],
)
def test_an_empty_or_future_range_is_refused(start: str, end: str, field: str) -> None:
    with pytest.raises(Invalid) as refused:
        check_range(at(start), at(end), at("2026-12-02T00:00:00+00:00"))
    assert refused.value.field == field
