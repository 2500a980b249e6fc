"""Semantic 3, the grid rule: after an occurrence due at D, the next is the smallest D + k·period > now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronwright.timing.every import count_on_grid, latest_on_grid, next_on_grid
from cronwright.timing.iso import render

BERLIN = ZoneInfo("Europe/Berlin")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_after_downtime_exactly_one_next_occurrence_on_the_original_grid() -> None:
    # Due at 10:00 every 15 minutes; the node was down until 11:07. No replay, no re-phasing to 11:07.
    due, period, now = at("2026-05-01T10:00:00+00:00"), timedelta(minutes=15), at("2026-05-01T11:07:00+00:00")
    assert next_on_grid(due, period, now) == at("2026-05-01T11:15:00+00:00")
    assert latest_on_grid(due, period, now) == at("2026-05-01T11:00:00+00:00")
    assert count_on_grid(due, period, now) == 5  # 10:00, 10:15, 10:30, 10:45, 11:00


def test_a_grid_point_exactly_at_now_is_not_next() -> None:
    due, period, now = at("2026-05-01T10:00:00+00:00"), timedelta(minutes=15), at("2026-05-01T10:30:00+00:00")
    assert next_on_grid(due, period, now) == at("2026-05-01T10:45:00+00:00")
    assert latest_on_grid(due, period, now) == now
    assert count_on_grid(due, period, now) == 3


def test_on_time_the_next_occurrence_is_one_period_on() -> None:
    due = at("2026-05-01T10:00:00+00:00")
    assert next_on_grid(due, timedelta(minutes=5), due) == at("2026-05-01T10:05:00+00:00")
    assert next_on_grid(due, timedelta(minutes=5), due + timedelta(seconds=3)) == at(
        "2026-05-01T10:05:00+00:00"
    )


def test_when_due_is_still_ahead_next_is_one_period_after_it_and_nothing_is_missed() -> None:
    due, period, now = at("2026-05-01T10:00:00+00:00"), timedelta(minutes=5), at("2026-05-01T09:00:00+00:00")
    assert next_on_grid(due, period, now) == at("2026-05-01T10:05:00+00:00")
    assert latest_on_grid(due, period, now) is None
    assert count_on_grid(due, period, now) == 0


def test_the_grid_is_exact_after_a_million_odd_periods() -> None:
    # A third of a second is 333333 µs: floats would drift, integer microseconds do not.
    period = timedelta(microseconds=333_333)
    due = at("2026-05-01T00:00:00+00:00")
    now = due + 1_000_000 * period + timedelta(microseconds=1)
    assert next_on_grid(due, period, now) == due + 1_000_001 * period
    assert latest_on_grid(due, period, now) == due + 1_000_000 * period
    assert count_on_grid(due, period, now) == 1_000_001


def test_the_grid_runs_in_real_time_across_dst() -> None:
    # Berlin, 2026-03-29T01:00:00Z: 02:00+01:00 becomes 03:00+02:00. An hourly grid is 3600 s apart, always.
    due = at("2026-03-29T01:30:00+01:00")
    assert render(next_on_grid(due, timedelta(hours=1), due), BERLIN) == "2026-03-29T03:30:00+02:00"


def test_results_are_utc_whatever_the_inputs_offsets() -> None:
    fired = next_on_grid(at("2026-05-01T12:00:00+02:00"), timedelta(hours=1), at("2026-05-01T06:30:00-04:00"))
    assert fired == at("2026-05-01T11:00:00+00:00") and fired.tzinfo is UTC


@pytest.mark.parametrize("period", [timedelta(0), timedelta(seconds=-5)])
def test_a_period_that_is_not_positive_is_a_programming_error(period: timedelta) -> None:
    with pytest.raises(ValueError, match="positive"):
        next_on_grid(at("2026-05-01T10:00:00+00:00"), period, at("2026-05-01T10:00:00+00:00"))


def test_naive_instants_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="naive"):
        next_on_grid(datetime(2026, 5, 1), timedelta(minutes=5), at("2026-05-01T10:00:00+00:00"))
