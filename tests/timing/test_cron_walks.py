"""Walking an expression: next, next before an end, counting, and the latest firing for a catch-up."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronwright.timing.cron import CronExpression
from cronwright.timing.iso import render

BERLIN = ZoneInfo("Europe/Berlin")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def shown(instant: datetime | None, zone: ZoneInfo = BERLIN) -> str | None:
    return None if instant is None else render(instant, zone)


def forward_latest(
    cron: CronExpression, instant: datetime, not_before: datetime, zone: ZoneInfo
) -> datetime | None:
    """The definition: the last firing the forward walk gives in [not_before, instant]."""
    latest = None
    for fired in cron.iter_after(not_before - timedelta(microseconds=1), zone):
        if fired > instant:
            break
        latest = fired
    return latest


def test_next_after_is_strictly_after_and_in_utc() -> None:
    cron = CronExpression.parse("0 3 * * *")
    fired = cron.next_after(at("2026-05-01T03:00:00+02:00"), BERLIN)
    assert fired == at("2026-05-02T01:00:00+00:00") and fired.tzinfo is UTC
    assert (
        shown(cron.next_after(at("2026-05-01T02:59:59.999999+02:00"), BERLIN)) == "2026-05-01T03:00:00+02:00"
    )


def test_next_after_reads_the_expression_in_the_zone_whatever_the_offset_of_after() -> None:
    cron = CronExpression.parse("0 3 * * *")
    assert shown(cron.next_after(at("2026-05-01T00:00:00+00:00"), BERLIN)) == "2026-05-01T03:00:00+02:00"
    assert shown(cron.next_after(at("2026-04-30T20:00:00-04:00"), BERLIN)) == "2026-05-01T03:00:00+02:00"


def test_next_after_refuses_a_naive_instant() -> None:
    with pytest.raises(ValueError, match="naive"):
        CronExpression.parse("0 3 * * *").next_after(datetime(2026, 5, 1), BERLIN)


def test_next_before_stops_at_the_end_and_never_fires_at_it() -> None:
    cron = CronExpression.parse("0 3 * * *")
    start = at("2026-05-01T00:00:00+02:00")
    assert (
        shown(cron.next_before(start, at("2026-05-01T03:00:01+02:00"), BERLIN)) == "2026-05-01T03:00:00+02:00"
    )
    assert cron.next_before(start, at("2026-05-01T03:00:00+02:00"), BERLIN) is None
    assert shown(cron.next_before(start, None, BERLIN)) == "2026-05-01T03:00:00+02:00"


def test_count_between_includes_both_ends_and_stops_at_the_cap() -> None:
    cron = CronExpression.parse("0 * * * *")
    start, end = at("2026-05-01T00:00:00+02:00"), at("2026-05-01T10:00:00+02:00")
    assert cron.count_between(start, end, BERLIN) == 11
    assert cron.count_between(start, end, BERLIN, cap=4) == 4
    assert cron.count_between(start, end, BERLIN, cap=0) == 0
    assert cron.count_between(end, start, BERLIN) == 0


def test_count_between_counts_the_repeated_hour_for_a_wildcard_job_only() -> None:
    # Berlin, 2026-10-25T01:00:00Z: 03:00+02:00 becomes 02:00+01:00.
    day = at("2026-10-25T00:00:00+02:00"), at("2026-10-25T23:59:59+01:00")
    assert CronExpression.parse("0 * * * *").count_between(*day, BERLIN) == 25
    assert CronExpression.parse("0 2 * * *").count_between(*day, BERLIN) == 1


def test_an_expression_stops_firing_where_the_calendar_does() -> None:
    assert (
        CronExpression.parse("0 0 * * *").next_after(at("9999-12-31T12:00:00+00:00"), ZoneInfo("UTC")) is None
    )


def test_latest_at_or_before_finds_the_one_missed_firing_worth_catching_up() -> None:
    cron = CronExpression.parse("0 3 * * *")
    down, up = at("2026-05-01T12:00:00+02:00"), at("2026-05-09T12:00:00+02:00")
    assert shown(cron.latest_at_or_before(up, down, BERLIN)) == "2026-05-09T03:00:00+02:00"
    assert (
        shown(cron.latest_at_or_before(at("2026-05-09T03:00:00+02:00"), down, BERLIN))
        == "2026-05-09T03:00:00+02:00"
    )
    assert cron.latest_at_or_before(at("2026-05-02T02:59:59+02:00"), down, BERLIN) is None
    assert cron.latest_at_or_before(down, up, BERLIN) is None


def test_latest_firing_in_a_repeated_hour_agrees_with_the_forward_walk() -> None:
    # Berlin, 2026-10-25T01:00:00Z: 03:00+02:00 becomes 02:00+01:00. At 02:40+01:00 (the second copy), a
    # "45 2" job already fired at 02:45+02:00 (the first copy), though 02:45 has not come round again.
    cron = CronExpression.parse("45 2 * * *")
    instant = at("2026-10-25T02:40:00+01:00")
    latest = cron.latest_at_or_before(instant, at("2026-10-20T00:00:00+02:00"), BERLIN)
    assert shown(latest) == "2026-10-25T02:45:00+02:00"


def test_latest_firing_after_a_half_hour_change_agrees_with_the_forward_walk() -> None:
    # Lord Howe, 2026-04-04T15:00:00Z: 02:00+11:00 becomes 01:30+10:30.
    cron = CronExpression.parse("45 * * * *")
    latest = cron.latest_at_or_before(
        at("2026-04-05T02:00:00+10:30"), at("2026-04-04T00:00:00+11:00"), LORD_HOWE
    )
    assert shown(latest, LORD_HOWE) == "2026-04-05T01:45:00+10:30"


EXPRESSIONS = [
    "0 3 * * *",
    "30 2 * * *",
    "45 2 * * *",
    "0,30 2 * * *",
    "15 2,3 * * *",
    "0 0 * * *",
    "59 23 * * *",
    "0-59/13 0-23/5 * * *",
    "30 * * * *",
    "*/7 * * * *",
    "0 */2 * * *",
    "*/20 2 * * *",
    "10 * * * * *",
]
INSTANTS = {
    # 2026-03-29T01:00:00Z (gap 02:00-02:59), 2026-10-25T01:00:00Z (02:00-02:59 twice)
    "Europe/Berlin": [
        "2026-03-29T02:59:59+02:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T04:10:00+02:00",
        "2026-10-25T02:20:00+02:00",
        "2026-10-25T02:20:00+01:00",
        "2026-10-25T03:10:00+01:00",
    ],
    # 2026-03-08T05:00:00Z (gap 00:00-00:59), 2026-11-01T05:00:00Z (00:00-00:59 twice)
    "America/Havana": [
        "2026-03-08T01:00:00-04:00",
        "2026-03-08T02:30:00-04:00",
        "2026-11-01T00:40:00-04:00",
        "2026-11-01T00:40:00-05:00",
    ],
    # 2026-04-04T15:00:00Z (01:30-01:59 twice), 2026-10-03T15:30:00Z (gap 02:00-02:29)
    "Australia/Lord_Howe": [
        "2026-04-05T01:40:00+11:00",
        "2026-04-05T01:40:00+10:30",
        "2026-10-04T02:40:00+11:00",
        "2026-10-04T03:20:00+11:00",
    ],
}


@pytest.mark.parametrize("expression", EXPRESSIONS)
@pytest.mark.parametrize("zone_name", sorted(INSTANTS))
def test_latest_at_or_before_agrees_with_the_forward_walk_across_dst(expression: str, zone_name: str) -> None:
    zone = ZoneInfo(zone_name)
    cron = CronExpression.parse(expression)
    for text in INSTANTS[zone_name]:
        instant = at(text)
        spans = (
            [timedelta(hours=3)] if len(expression.split()) == 6 else [timedelta(hours=3), timedelta(days=2)]
        )
        for span in spans:
            expected = forward_latest(cron, instant, instant - span, zone)
            assert cron.latest_at_or_before(instant, instant - span, zone) == expected, (text, span)


def test_latest_at_or_before_is_fast_for_every_second_after_a_year_down() -> None:
    cron = CronExpression.parse("* * * * * *")
    up = at("2027-05-01T12:00:00.250000+02:00")
    started = time.perf_counter()
    latest = cron.latest_at_or_before(up, up - timedelta(days=365), BERLIN)
    count = cron.count_between(up - timedelta(days=365), up, BERLIN)
    elapsed = time.perf_counter() - started
    assert shown(latest) == "2027-05-01T12:00:00+02:00"
    assert count == 1000  # the cap
    assert elapsed < 0.5  # a few milliseconds on a laptop


def test_a_rare_expression_is_walked_in_bounded_time() -> None:
    # Fires about once in 28 years, in a zone whose offset changes twice a year.
    cron = CronExpression.parse("* * * 2 1#5")
    started = time.perf_counter()
    assert shown(cron.next_after(at("2026-05-01T00:00:00+10:30"), LORD_HOWE), LORD_HOWE) == (
        "2044-02-29T00:00:00+11:00"
    )
    assert (
        cron.latest_at_or_before(at("2043-05-01T00:00:00+10:00"), at("2016-03-01T00:00:00+11:00"), LORD_HOWE)
        is None
    )
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0
