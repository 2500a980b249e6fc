"""Semantic 1: cron meets DST as cronie does, in zones with 1-hour, midnight and 30-minute transitions.

Each group lists the transition instants of its zone. Expectations are literal ISO strings, rendered in the
zone by `iso.render`, so that a wrong offset fails as surely as a wrong wall time.
"""

from __future__ import annotations

from datetime import datetime
from itertools import islice
from zoneinfo import ZoneInfo

from cronwright.timing.cron import CronExpression
from cronwright.timing.iso import render


def firings(expression: str, zone_name: str, after: str, count: int) -> list[str]:
    zone = ZoneInfo(zone_name)
    walk = CronExpression.parse(expression).iter_after(datetime.fromisoformat(after), zone)
    return [render(fired, zone) for fired in islice(walk, count)]


def count_on_local_day(expression: str, zone_name: str, start: str, end: str) -> int:
    zone = ZoneInfo(zone_name)
    cron = CronExpression.parse(expression)
    return cron.count_between(datetime.fromisoformat(start), datetime.fromisoformat(end), zone)


# -- Europe/Berlin ----------------------------------------------------------------------------------
# 2026-03-29T01:00:00Z: 02:00+01:00 becomes 03:00+02:00 (02:00-02:59 does not exist).
# 2026-10-25T01:00:00Z: 03:00+02:00 becomes 02:00+01:00 (02:00-02:59 happens twice).


def test_spring_forward_gap_moves_a_fixed_time_job_to_the_end_of_the_gap() -> None:
    assert firings("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00+01:00", 3) == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_spring_forward_gap_fires_a_fixed_time_job_once_even_if_several_slots_fall_in_it() -> None:
    assert firings("0,30 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00+01:00", 3) == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_spring_forward_gap_has_no_wall_times_for_a_wildcard_hour_job() -> None:
    # Real time goes on: 01:30+01:00 and 03:30+02:00 are one hour apart.
    assert firings("30 * * * *", "Europe/Berlin", "2026-03-29T00:00:00+01:00", 3) == [
        "2026-03-29T00:30:00+01:00",
        "2026-03-29T01:30:00+01:00",
        "2026-03-29T03:30:00+02:00",
    ]
    assert (
        count_on_local_day(
            "30 * * * *", "Europe/Berlin", "2026-03-29T00:00:00+01:00", "2026-03-29T23:59:59+02:00"
        )
        == 23
    )


def test_spring_forward_gap_drops_the_missing_slot_of_a_stepped_hour_job() -> None:
    # cronie: a stepped hour is a wildcard job, and wildcard jobs do not run for skipped wall times.
    assert firings("0 */2 * * *", "Europe/Berlin", "2026-03-28T23:00:00+01:00", 3) == [
        "2026-03-29T00:00:00+01:00",
        "2026-03-29T04:00:00+02:00",
        "2026-03-29T06:00:00+02:00",
    ]


def test_fall_back_night_runs_a_fixed_time_job_once() -> None:
    assert firings("30 2 * * *", "Europe/Berlin", "2026-10-24T00:00:00+02:00", 3) == [
        "2026-10-24T02:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]
    assert (
        count_on_local_day(
            "30 2 * * *", "Europe/Berlin", "2026-10-25T00:00:00+02:00", "2026-10-25T23:59:59+01:00"
        )
        == 1
    )


def test_fall_back_night_does_not_rerun_a_fixed_time_job_from_inside_the_second_copy() -> None:
    # 02:40+01:00 is in the second copy; 02:30+02:00 and 02:45+02:00 already happened in the first.
    for expression, next_day in (
        ("30 2 * * *", "2026-10-26T02:30:00+01:00"),
        ("45 2 * * *", "2026-10-26T02:45:00+01:00"),
    ):
        assert firings(expression, "Europe/Berlin", "2026-10-25T02:40:00+01:00", 1) == [next_day]


def test_fall_back_night_runs_a_wildcard_hour_job_in_both_copies() -> None:
    assert firings("30 * * * *", "Europe/Berlin", "2026-10-25T01:00:00+02:00", 4) == [
        "2026-10-25T01:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:30:00+01:00",
        "2026-10-25T03:30:00+01:00",
    ]
    assert (
        count_on_local_day(
            "30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00+02:00", "2026-10-25T23:59:59+01:00"
        )
        == 25
    )


def test_fall_back_night_runs_a_stepped_hour_job_in_both_copies() -> None:
    assert firings("0 */2 * * *", "Europe/Berlin", "2026-10-24T23:00:00+02:00", 4) == [
        "2026-10-25T00:00:00+02:00",
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:00+01:00",
        "2026-10-25T04:00:00+01:00",
    ]


# -- America/Havana: both transitions at midnight ---------------------------------------------------
# 2026-03-08T05:00:00Z: 00:00-05:00 becomes 01:00-04:00 (00:00-00:59 does not exist).
# 2026-11-01T05:00:00Z: 01:00-04:00 becomes 00:00-05:00 (00:00-00:59 happens twice).


def test_midnight_gap_moves_a_midnight_job_to_one_in_the_morning() -> None:
    assert firings("0 0 * * *", "America/Havana", "2026-03-07T12:00:00-05:00", 2) == [
        "2026-03-08T01:00:00-04:00",
        "2026-03-09T00:00:00-04:00",
    ]
    assert firings("30 0 * * *", "America/Havana", "2026-03-07T12:00:00-05:00", 2) == [
        "2026-03-08T01:00:00-04:00",
        "2026-03-09T00:30:00-04:00",
    ]


def test_midnight_gap_has_no_wall_times_for_a_wildcard_hour_job() -> None:
    assert firings("30 * * * *", "America/Havana", "2026-03-07T23:00:00-05:00", 3) == [
        "2026-03-07T23:30:00-05:00",
        "2026-03-08T01:30:00-04:00",
        "2026-03-08T02:30:00-04:00",
    ]


def test_repeated_midnight_hour_runs_a_fixed_time_job_once() -> None:
    assert firings("30 0 * * *", "America/Havana", "2026-10-31T12:00:00-04:00", 2) == [
        "2026-11-01T00:30:00-04:00",
        "2026-11-02T00:30:00-05:00",
    ]
    assert firings("0 0 * * *", "America/Havana", "2026-10-31T12:00:00-04:00", 2) == [
        "2026-11-01T00:00:00-04:00",
        "2026-11-02T00:00:00-05:00",
    ]


def test_repeated_midnight_hour_runs_a_wildcard_hour_job_in_both_copies() -> None:
    assert firings("30 * * * *", "America/Havana", "2026-10-31T23:00:00-04:00", 4) == [
        "2026-10-31T23:30:00-04:00",
        "2026-11-01T00:30:00-04:00",
        "2026-11-01T00:30:00-05:00",
        "2026-11-01T01:30:00-05:00",
    ]


# -- America/Santiago: transitions at midnight, the repeated hour on the evening before -------------
# 2026-04-05T03:00:00Z: 24:00-03:00 becomes 23:00-04:00 (23:00-23:59 on 4 April happens twice).
# 2026-09-06T04:00:00Z: 00:00-04:00 becomes 01:00-03:00 (00:00-00:59 on 6 September does not exist).


def test_santiago_midnight_gap_moves_a_midnight_job_to_one_in_the_morning() -> None:
    assert firings("0 0 * * *", "America/Santiago", "2026-09-05T12:00:00-04:00", 2) == [
        "2026-09-06T01:00:00-03:00",
        "2026-09-07T00:00:00-03:00",
    ]


def test_santiago_midnight_gap_has_no_wall_times_for_a_wildcard_hour_job() -> None:
    assert firings("30 * * * *", "America/Santiago", "2026-09-05T22:00:00-04:00", 3) == [
        "2026-09-05T22:30:00-04:00",
        "2026-09-05T23:30:00-04:00",
        "2026-09-06T01:30:00-03:00",
    ]


def test_santiago_repeated_evening_hour_runs_a_fixed_time_job_once() -> None:
    assert firings("30 23 * * *", "America/Santiago", "2026-04-04T12:00:00-03:00", 2) == [
        "2026-04-04T23:30:00-03:00",
        "2026-04-05T23:30:00-04:00",
    ]


def test_santiago_repeated_evening_hour_runs_a_wildcard_hour_job_in_both_copies() -> None:
    assert firings("30 * * * *", "America/Santiago", "2026-04-04T22:00:00-03:00", 4) == [
        "2026-04-04T22:30:00-03:00",
        "2026-04-04T23:30:00-03:00",
        "2026-04-04T23:30:00-04:00",
        "2026-04-05T00:30:00-04:00",
    ]


# -- Australia/Lord_Howe: a 30-minute shift ---------------------------------------------------------
# 2026-04-04T15:00:00Z: 02:00+11:00 becomes 01:30+10:30 (01:30-01:59 on 5 April happens twice).
# 2026-10-03T15:30:00Z: 02:00+10:30 becomes 02:30+11:00 (02:00-02:29 on 4 October does not exist).


def test_half_hour_gap_moves_a_fixed_time_job_to_the_end_of_the_gap() -> None:
    assert firings("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", 2) == [
        "2026-10-04T02:30:00+11:00",
        "2026-10-05T02:15:00+11:00",
    ]


def test_half_hour_gap_leaves_a_fixed_time_job_after_it_alone() -> None:
    assert firings("45 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", 1) == [
        "2026-10-04T02:45:00+11:00"
    ]


def test_half_hour_gap_skips_only_the_missing_wall_times_of_a_wildcard_hour_job() -> None:
    # 02:15 does not exist that night but 02:45 does. cronsim alone jumps from 01:45 to 03:45 here.
    assert firings("15 * * * *", "Australia/Lord_Howe", "2026-10-04T01:00:00+10:30", 2) == [
        "2026-10-04T01:15:00+10:30",
        "2026-10-04T03:15:00+11:00",
    ]
    assert firings("45 * * * *", "Australia/Lord_Howe", "2026-10-04T01:00:00+10:30", 3) == [
        "2026-10-04T01:45:00+10:30",
        "2026-10-04T02:45:00+11:00",
        "2026-10-04T03:45:00+11:00",
    ]


def test_repeated_half_hour_runs_a_fixed_time_job_once() -> None:
    assert firings("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00", 2) == [
        "2026-04-05T01:45:00+11:00",
        "2026-04-06T01:45:00+10:30",
    ]


def test_repeated_half_hour_runs_a_wildcard_hour_job_in_both_copies() -> None:
    # cronsim alone jumps a real hour from 01:46+11:00 and lands on 02:15+10:30, missing the second 01:45.
    assert firings("45 * * * *", "Australia/Lord_Howe", "2026-04-05T00:00:00+11:00", 4) == [
        "2026-04-05T00:45:00+11:00",
        "2026-04-05T01:45:00+11:00",
        "2026-04-05T01:45:00+10:30",
        "2026-04-05T02:45:00+10:30",
    ]
    assert firings("*/15 1 * * *", "Australia/Lord_Howe", "2026-04-05T00:00:00+11:00", 6) == [
        "2026-04-05T01:00:00+11:00",
        "2026-04-05T01:15:00+11:00",
        "2026-04-05T01:30:00+11:00",
        "2026-04-05T01:45:00+11:00",
        "2026-04-05T01:30:00+10:30",
        "2026-04-05T01:45:00+10:30",
    ]


# -- Pacific/Chatham: whole-hour shifts, but at a quarter to the hour -------------------------------
# 2026-04-04T14:00:00Z: 03:45+13:45 becomes 02:45+12:45 (02:45-03:44 on 5 April happens twice).
# 2026-09-26T14:00:00Z: 02:45+12:45 becomes 03:45+13:45 (02:45-03:44 on 27 September does not exist).


def test_repeated_hour_off_the_hour_runs_a_wildcard_minute_job_in_both_copies() -> None:
    # cronsim alone rewinds to 02:00 at the change, walks back into the first copy and circles there.
    assert firings("* 3 * * *", "Pacific/Chatham", "2026-04-05T03:43:00+13:45", 3) == [
        "2026-04-05T03:44:00+13:45",
        "2026-04-05T03:00:00+12:45",
        "2026-04-05T03:01:00+12:45",
    ]
    assert (
        count_on_local_day(
            "* 3 * * *", "Pacific/Chatham", "2026-04-05T00:00:00+13:45", "2026-04-05T23:59:59+12:45"
        )
        == 105
    )


def test_gap_off_the_hour_moves_a_fixed_time_job_to_its_end() -> None:
    assert firings("0 3 * * *", "Pacific/Chatham", "2026-09-26T12:00:00+12:45", 2) == [
        "2026-09-27T03:45:00+13:45",
        "2026-09-28T03:00:00+13:45",
    ]
    assert firings("30 * * * *", "Pacific/Chatham", "2026-09-27T01:00:00+12:45", 3) == [
        "2026-09-27T01:30:00+12:45",
        "2026-09-27T02:30:00+12:45",
        "2026-09-27T04:30:00+13:45",
    ]
