"""Semantic 17: instants out are ISO-8601 with their offset, to the second; instants in name one instant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronwright.errors import Invalid
from cronwright.timing.iso import as_utc, parse_instant, render, wall_to_utc

BERLIN = ZoneInfo("Europe/Berlin")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")
HAVANA = ZoneInfo("America/Havana")


def read(text: str, zone: ZoneInfo = BERLIN) -> str:
    return render(parse_instant(text, zone), zone)


def test_render_shows_the_offset_and_drops_microseconds() -> None:
    instant = datetime(2026, 3, 29, 1, 0, 0, 999_999, tzinfo=UTC)
    assert render(instant, BERLIN) == "2026-03-29T03:00:00+02:00"
    assert render(instant, ZoneInfo("UTC")) == "2026-03-29T01:00:00+00:00"
    assert render(instant, LORD_HOWE) == "2026-03-29T12:00:00+11:00"


def test_render_shows_both_copies_of_a_repeated_hour_apart() -> None:
    # Berlin, 2026-10-25T01:00:00Z: 03:00+02:00 becomes 02:00+01:00.
    assert render(datetime(2026, 10, 25, 0, 30, tzinfo=UTC), BERLIN) == "2026-10-25T02:30:00+02:00"
    assert render(datetime(2026, 10, 25, 1, 30, tzinfo=UTC), BERLIN) == "2026-10-25T02:30:00+01:00"


def test_naive_datetimes_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="naive"):
        render(datetime(2026, 5, 1), BERLIN)
    with pytest.raises(ValueError, match="naive"):
        as_utc(datetime(2026, 5, 1))


def test_as_utc_keeps_the_instant() -> None:
    converted = as_utc(datetime.fromisoformat("2026-05-01T12:00:00+02:00"))
    assert converted == datetime(2026, 5, 1, 10, tzinfo=UTC) and converted.tzinfo is UTC


def test_parse_takes_an_offset_or_z_as_given() -> None:
    assert read("2026-05-01T12:00:00+05:30") == "2026-05-01T08:30:00+02:00"
    assert read("2026-05-01T10:00:00Z") == "2026-05-01T12:00:00+02:00"
    assert parse_instant("2026-05-01T10:00:00.5Z", BERLIN) == datetime(
        2026, 5, 1, 10, 0, 0, 500_000, tzinfo=UTC
    )
    assert parse_instant("2026-05-01T10:00:00Z", BERLIN).tzinfo is UTC


def test_parse_reads_an_offset_less_instant_in_the_default_zone() -> None:
    assert read("2026-05-01T12:00:00") == "2026-05-01T12:00:00+02:00"
    assert read("2026-05-01T12:00") == "2026-05-01T12:00:00+02:00"
    assert read("2026-05-01 12:00") == "2026-05-01T12:00:00+02:00"


def test_an_offset_less_instant_in_a_gap_means_the_first_instant_after_it() -> None:
    # Berlin, 2026-03-29T01:00:00Z: 02:00+01:00 becomes 03:00+02:00.
    assert read("2026-03-29T02:30:00") == "2026-03-29T03:00:00+02:00"
    # Lord Howe, 2026-10-03T15:30:00Z: 02:00+10:30 becomes 02:30+11:00.
    assert read("2026-10-04T02:15:00", LORD_HOWE) == "2026-10-04T02:30:00+11:00"
    # Havana, 2026-03-08T05:00:00Z: 00:00-05:00 becomes 01:00-04:00.
    assert read("2026-03-08T00:00:00", HAVANA) == "2026-03-08T01:00:00-04:00"


def test_an_offset_less_instant_in_a_repeated_hour_means_the_first_copy() -> None:
    # Berlin, 2026-10-25T01:00:00Z: 03:00+02:00 becomes 02:00+01:00.
    assert read("2026-10-25T02:30:00") == "2026-10-25T02:30:00+02:00"
    # Lord Howe, 2026-04-04T15:00:00Z: 02:00+11:00 becomes 01:30+10:30.
    assert read("2026-04-05T01:45:00", LORD_HOWE) == "2026-04-05T01:45:00+11:00"


def test_wall_to_utc_refuses_an_aware_datetime() -> None:
    with pytest.raises(ValueError, match="naive"):
        wall_to_utc(datetime(2026, 5, 1, tzinfo=UTC), BERLIN)


def refusal(text: object) -> str:
    with pytest.raises(Invalid) as caught:
        parse_instant(text, BERLIN, field="run_at")
    assert caught.value.field == "run_at"
    return caught.value.message


@pytest.mark.parametrize("value", [None, 5, 1.5, True, [], {}, datetime(2026, 5, 1, tzinfo=UTC)])
def test_non_strings_are_refused(value: object) -> None:
    assert "must be an ISO-8601 string" in refusal(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "is empty"),
        ("  ", "is empty"),
        ("2026-05-01T12:00:00+02:00" + " " * 40, "longer than 64 characters"),
        ("tomorrow", "is not an ISO-8601 instant"),
        ("2026-02-30T12:00:00", "is not an ISO-8601 instant"),
        ("2026-05-01T25:00:00", "is not an ISO-8601 instant"),
        ("2026-05-01T12:00:00+25:00", "is not an ISO-8601 instant"),
        ("2026-05-01", "a date without a time of day: add one, e.g. 2026-05-01T00:00:00"),
        ("0001-01-01T00:00:00+01:00", "out of range"),
    ],
)
def test_bad_instants_are_refused_with_a_readable_message(text: str, expected: str) -> None:
    assert expected in refusal(text)


def test_render_reads_an_instant_given_in_any_zone_as_through_utc() -> None:
    """`render` goes straight into the zone: the same text as through UTC first, across both of Berlin's
    transitions, Lord Howe's half hour, an offset with seconds (Monrovia, 1970) and a fraction of a second."""
    zones = [BERLIN, LORD_HOWE, HAVANA, ZoneInfo("Africa/Monrovia"), ZoneInfo("UTC")]
    starts = [
        datetime(2026, 3, 29, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 4, 4, 14, 30, tzinfo=UTC),
        datetime(1970, 6, 1, 12, 0, 0, 999_999, tzinfo=UTC),
    ]
    for start in starts:
        for step in range(0, 7200, 450):
            instant = start + timedelta(seconds=step, microseconds=step % 7)
            for given_in in zones:
                given = instant.astimezone(given_in)
                for zone in zones:
                    through_utc = given.astimezone(UTC).astimezone(zone).replace(microsecond=0).isoformat()
                    assert render(given, zone) == through_utc
    assert (
        render(datetime(1970, 6, 1, 12, tzinfo=UTC), ZoneInfo("Africa/Monrovia"))
        == "1970-06-01T11:15:30-00:44:30"
    )
    # Given in the zone itself: a wall time it skipped, and the second copy of a repeated one.
    skipped = datetime(2026, 3, 29, 2, 30, tzinfo=BERLIN)
    repeated = datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=BERLIN)
    for given in (skipped, repeated):
        through_utc = given.astimezone(UTC).astimezone(BERLIN).replace(microsecond=0).isoformat()
        assert render(given, BERLIN) == through_utc
    assert render(skipped, BERLIN) == "2026-03-29T03:30:00+02:00"
    assert render(repeated, BERLIN) == "2026-10-25T02:30:00+01:00"
