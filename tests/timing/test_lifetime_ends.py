"""Semantic 5: a lifetime is a duration from now or an end instant, within the ceiling and not in the past."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronwright.errors import Invalid, LifetimeTooLong
from cronwright.timing.iso import render
from cronwright.timing.lifetime import resolve_end

BERLIN = ZoneInfo("Europe/Berlin")
CEILING = timedelta(days=90)
NOW = datetime.fromisoformat("2026-03-01T12:00:00+01:00")


def end(spec: object, now: datetime = NOW, ceiling: timedelta = CEILING) -> str:
    return render(resolve_end(spec, now, BERLIN, ceiling), BERLIN)


def test_a_duration_is_read_from_now() -> None:
    assert end("30d") == "2026-03-31T13:00:00+02:00"  # 30 × 24 h of real time, across the March change
    assert end("12h") == "2026-03-02T00:00:00+01:00"
    assert end("P30D") == end("30d")
    assert end("PT90S") == "2026-03-01T12:01:30+01:00"


def test_an_end_instant_with_an_offset_is_taken_as_it_is() -> None:
    assert end("2026-04-01T00:00:00+00:00") == "2026-04-01T02:00:00+02:00"
    assert end("2026-04-01T00:00:00Z") == "2026-04-01T02:00:00+02:00"


def test_an_end_instant_without_an_offset_is_read_in_the_zone() -> None:
    assert end("2026-04-01T00:00:00") == "2026-04-01T00:00:00+02:00"
    assert resolve_end("2026-04-01T00:00", NOW, BERLIN, CEILING) == datetime(2026, 3, 31, 22, tzinfo=UTC)


def test_the_result_is_utc() -> None:
    assert resolve_end("1h", NOW, BERLIN, CEILING).tzinfo is UTC


def test_exactly_at_the_ceiling_is_allowed() -> None:
    assert resolve_end("90d", NOW, BERLIN, CEILING) == NOW + CEILING
    assert resolve_end(render(NOW + CEILING, BERLIN), NOW, BERLIN, CEILING) == NOW + CEILING


def test_beyond_the_ceiling_is_refused_naming_the_ceiling() -> None:
    with pytest.raises(LifetimeTooLong) as caught:
        resolve_end("90d1s", NOW, BERLIN, CEILING)
    assert "ceiling of 90d" in caught.value.message and "at most 90d" in caught.value.message
    assert caught.value.reply()["error"] == "lifetime_too_long"
    with pytest.raises(LifetimeTooLong, match="ceiling of 30d"):
        resolve_end("2027-01-01T00:00:00+01:00", NOW, BERLIN, timedelta(days=30))


def test_an_end_in_the_past_or_now_is_refused() -> None:
    for spec in ("2026-03-01T11:59:59+01:00", "2026-03-01T12:00:00+01:00", "2020-01-01T00:00:00"):
        with pytest.raises(Invalid, match="ends in the past") as caught:
            resolve_end(spec, NOW, BERLIN, CEILING)
        assert caught.value.field == "lifetime"


@pytest.mark.parametrize("spec", [None, 30, 1.5, True, [], {}, {"days": 30}])
def test_non_strings_are_refused(spec: object) -> None:
    with pytest.raises(Invalid, match="must be a string") as caught:
        resolve_end(spec, NOW, BERLIN, CEILING, field="changes.lifetime")
    assert caught.value.field == "changes.lifetime"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", "is empty"),
        ("forever", "neither a duration nor an instant"),
        ("-5d", "is negative"),
        ("0d", "is zero"),
        ("2026-13-01T00:00:00", "not an ISO-8601 instant"),
        ("2026-04-01", "without a time of day"),
        ("3" * 65, "longer than 64 characters"),
    ],
)
def test_bad_lifetimes_are_refused_with_a_readable_message(spec: str, expected: str) -> None:
    with pytest.raises(Invalid) as caught:
        resolve_end(spec, NOW, BERLIN, CEILING)
    assert expected in caught.value.message
    assert caught.value.field == "lifetime"
