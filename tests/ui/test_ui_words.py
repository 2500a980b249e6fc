"""A schedule in plain English (fronts/ui/words.py), from the protocol's schedule rows."""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from cronwright.fronts.ui.words import duration_in_words, every_in_words, schedule_in_words

_SIZES = {
    "day": timedelta(days=1),
    "hour": timedelta(hours=1),
    "minute": timedelta(minutes=1),
    "second": timedelta(seconds=1),
    "millisecond": timedelta(milliseconds=1),
}


def test_weekday_mornings_in_a_zone() -> None:
    row = {"cron": "0 9 * * 1-5", "tz": "Europe/Berlin"}
    assert schedule_in_words(row) == "at 09:00 on Monday to Friday, Europe/Berlin"


def test_a_stepped_minute_is_said_as_a_period() -> None:
    assert schedule_in_words({"cron": "*/15 * * * *", "tz": "UTC"}) == "every 15 minutes, UTC"
    assert schedule_in_words({"cron": "* * * * *", "tz": "UTC"}) == "every minute, UTC"
    assert schedule_in_words({"cron": "*/10 * * * * *", "tz": "UTC"}) == "every 10 seconds, UTC"
    assert schedule_in_words({"cron": "0 */2 * * *", "tz": "UTC"}) == "every 2 hours, on the hour, UTC"


def test_a_macro_reads_as_its_expression() -> None:
    assert schedule_in_words({"cron": "@daily", "tz": "Asia/Tokyo"}) == "at 00:00 every day, Asia/Tokyo"


def test_several_expressions_are_their_union() -> None:
    row = {"cron": ["0 9 * * 1-5", "0 12 * * 6"], "tz": "Europe/Berlin"}
    assert schedule_in_words(row) == "at 09:00 on Monday to Friday; or at 12:00 on Saturday, Europe/Berlin"


def test_a_one_shot_names_its_instant() -> None:
    assert schedule_in_words({"at": "2027-03-01T09:00:00+01:00"}) == "once at 2027-03-01T09:00:00+01:00"


def test_every_with_jitter_and_calendars() -> None:
    row = {"every": "1h30m", "every_ms": 5_400_000, "jitter": "2m30s", "exclude": ["holidays", "ops"]}
    assert schedule_in_words(row) == (
        "every 1 hour and 30 minutes, up to 2 minutes and 30 seconds later at random (jitter), "
        "except on the dates of calendars 'holidays' and 'ops'"
    )


def test_one_excluded_calendar_is_singular() -> None:
    row = {"cron": "0 7 * * *", "tz": "UTC", "exclude": ["de"]}
    assert schedule_in_words(row) == "at 07:00 every day, UTC, except on the dates of calendar 'de'"


def test_an_unreadable_stored_expression_is_named_not_guessed() -> None:
    said = schedule_in_words({"cron": "0 0 30 2 *", "tz": "UTC"})
    assert said == "cron expression '0 0 30 2 *' (which cannot be read), UTC"
    assert schedule_in_words({}) == "a schedule that cannot be read"


def test_a_single_unit_is_said_alone() -> None:
    assert every_in_words(timedelta(hours=1)) == "every hour"
    assert every_in_words(timedelta(days=1)) == "every day"
    assert every_in_words(timedelta(days=2)) == "every 2 days"


def _read_back(words: str) -> timedelta:
    total = timedelta(0)
    for count, unit in re.findall(r"(\d+) ([a-z]+?)s?\b", words):
        total += int(count) * _SIZES[unit]
    return total


@given(st.integers(min_value=1, max_value=100 * 365 * 86_400_000))
def test_a_period_in_words_reads_back_to_the_same_period(every_ms: int) -> None:
    period = timedelta(milliseconds=every_ms)
    words = duration_in_words(period)
    assert _read_back(words) == period
    # Largest unit first, each unit once.
    units = re.findall(r"\d+ ([a-z]+?)s?\b", words)
    assert units == sorted(set(units), key=list(_SIZES).index)


@given(
    st.sampled_from(["*", "0", "15", "*/5", "1-5"]),
    st.sampled_from(["*", "9", "*/3", "8-17"]),
    st.sampled_from(["*", "1", "L", "15"]),
    st.sampled_from(["*", "JAN", "6-8"]),
    st.sampled_from(["*", "MON-FRI", "5L", "1#2", "0"]),
    st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]),
)
def test_every_valid_expression_has_words_ending_in_its_zone(
    minute: str, hour: str, day: str, month: str, dow: str, tz: str
) -> None:
    said = schedule_in_words({"cron": f"{minute} {hour} {day} {month} {dow}", "tz": tz})
    assert said.endswith(f", {tz}")
    assert "cannot be read" not in said
    assert said[0].islower()
