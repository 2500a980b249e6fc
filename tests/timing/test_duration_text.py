"""Durations as written: shorthand, compounds and ISO-8601, read exactly and written back exactly."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronwright.errors import Invalid
from cronwright.timing.durations import MAX_DURATION, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("250ms", timedelta(milliseconds=250)),
        ("90s", timedelta(seconds=90)),
        ("5m", timedelta(minutes=5)),
        ("12h", timedelta(hours=12)),
        ("30d", timedelta(days=30)),
        ("1w", timedelta(weeks=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d3h", timedelta(days=2, hours=3)),
        ("1w2d3h4m5s6ms", timedelta(weeks=1, days=2, hours=3, minutes=4, seconds=5, milliseconds=6)),
        (" 5m ", timedelta(minutes=5)),
        ("P30D", timedelta(days=30)),
        ("PT12H", timedelta(hours=12)),
        ("P1DT2H30M", timedelta(days=1, hours=2, minutes=30)),
        ("PT90S", timedelta(seconds=90)),
        ("P2W", timedelta(weeks=2)),
        ("PT5M", timedelta(minutes=5)),
    ],
)
def test_each_form_reads_exactly(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(hours=1, minutes=30), "1h30m"),
        (timedelta(minutes=5), "5m"),
        (timedelta(seconds=45), "45s"),
        (timedelta(days=2, hours=3), "2d3h"),
        (timedelta(milliseconds=250), "250ms"),
        (timedelta(days=90), "90d"),
        (timedelta(weeks=1), "7d"),
        (timedelta(microseconds=1500), "1ms500us"),
        (timedelta(0), "0s"),
        (timedelta(minutes=-5), "-5m"),
    ],
)
def test_format_writes_the_shortest_shorthand(delta: timedelta, text: str) -> None:
    assert format_duration(delta) == text


@given(st.timedeltas(min_value=timedelta(microseconds=1), max_value=MAX_DURATION))
def test_parse_reads_back_what_format_wrote(delta: timedelta) -> None:
    assert parse_duration(format_duration(delta)) == delta


def refusal(text: object, field: str = "duration") -> str:
    with pytest.raises(Invalid) as caught:
        parse_duration(text, field)
    assert caught.value.field == field
    return caught.value.message


@pytest.mark.parametrize("value", [None, 5, 1.5, True, [], {}, ["5m"], b"5m"])
def test_non_strings_are_refused(value: object) -> None:
    assert "must be a string" in refusal(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("9" * 63 + "s", "more than 100 years"),
        ("1" * 65, "longer than 64 characters"),
        ("5", "is not a duration"),
        ("m", "is not a duration"),
        ("five minutes", "is not a duration"),
        ("1.5h", "is not a duration"),
        ("5M", "is not a duration"),
        ("5 m", "is not a duration"),
        ("1h 30m", "is not a duration"),
        ("30m1h", "largest unit first"),
        ("1h1h", "largest unit first"),
        ("0s", "is zero"),
        ("0h0m", "is zero"),
        ("PT0S", "is zero"),
        ("-5m", "is negative"),
        ("P1M", "no fixed length"),
        ("P1Y", "no fixed length"),
        ("P", "is not a duration"),
        ("PT", "is not a duration"),
        ("P1DT", "is not a duration"),
        ("PT1.5S", "is not a duration"),
        ("36526d", "more than 100 years"),
        ("P36526D", "more than 100 years"),
        ("١٢s", "is not a duration"),
    ],
)
def test_bad_durations_are_refused_with_a_readable_message(text: str, expected: str) -> None:
    message = refusal(text, field="every")
    assert expected in message
    assert message.startswith("every ")


def test_a_hundred_years_is_the_most() -> None:
    assert parse_duration("36525d") == MAX_DURATION
