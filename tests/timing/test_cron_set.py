"""Semantic 31: several cron expressions in one schedule fire at the union of their instants, each once.

Europe/Berlin, 2026-10-25T01:00:00Z: 03:00+02:00 becomes 02:00+01:00 (02:00-02:59 happens twice).
Each member keeps its own DST reading: a fixed-time one fires once in the repeated hour, a wildcard-hour one
in both copies.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronwright.errors import Invalid
from cronwright.timing.cron import CronExpression
from cronwright.timing.cron_set import MAX_EXPRESSIONS, CronSet
from cronwright.timing.iso import render

BERLIN = ZoneInfo("Europe/Berlin")


def firings(value: object, after: str, count: int, zone: ZoneInfo = BERLIN) -> list[str]:
    walk = CronSet.parse(value).iter_after(datetime.fromisoformat(after), zone)
    return [render(fired, zone) for fired in islice(walk, count)]


def test_weekday_mornings_and_saturday_noon_interleave_in_time_order() -> None:
    # 2026-12-04 is a Friday.
    assert firings(["0 9 * * 1-5", "0 12 * * 6"], "2026-12-04T00:00:00+01:00", 4) == [
        "2026-12-04T09:00:00+01:00",
        "2026-12-05T12:00:00+01:00",
        "2026-12-07T09:00:00+01:00",
        "2026-12-08T09:00:00+01:00",
    ]


def test_an_instant_two_expressions_share_fires_once() -> None:
    # Both name 09:00 on weekdays; the second adds 09:30.
    assert firings(["0 9 * * 1-5", "0,30 9 * * *"], "2026-12-04T00:00:00+01:00", 4) == [
        "2026-12-04T09:00:00+01:00",
        "2026-12-04T09:30:00+01:00",
        "2026-12-05T09:00:00+01:00",
        "2026-12-05T09:30:00+01:00",
    ]


def test_each_expression_keeps_its_own_dst_rule_in_the_repeated_hour() -> None:
    # "30 2 * * *" is fixed-time: once, in the first copy. "45 * * * *" fires in both copies.
    assert firings(["30 2 * * *", "45 * * * *"], "2026-10-25T01:50:00+02:00", 5) == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:45:00+02:00",
        "2026-10-25T02:45:00+01:00",
        "2026-10-25T03:45:00+01:00",
        "2026-10-25T04:45:00+01:00",
    ]


def test_a_shared_instant_in_the_repeated_hour_fires_once() -> None:
    # Both fire at 02:30+02:00 (the fixed-time one only there); the wildcard one also at 02:30+01:00.
    assert firings(["30 2 * * *", "30 * * * *"], "2026-10-25T01:50:00+02:00", 3) == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:30:00+01:00",
        "2026-10-25T03:30:00+01:00",
    ]


def test_one_expression_is_that_expression() -> None:
    single = CronSet.parse("0 3 * * *")
    assert single.shown == "0 3 * * *"
    assert single.explain() == CronExpression.parse("0 3 * * *").explain()


def test_repeats_are_kept_once_by_normalized_text() -> None:
    both = CronSet.parse(["@daily", "0 0 * * *", "0 9 * jan mon"])
    assert both.shown == ["0 0 * * *", "0 9 * JAN MON"]


def test_explanation_names_every_member() -> None:
    text = CronSet.parse(["0 9 * * 1-5", "0 12 * * 6"]).explain()
    assert text == "At 09:00 on Monday through Friday; or at 12:00 on Saturday"


def test_a_bad_member_is_refused_by_its_place() -> None:
    with pytest.raises(Invalid) as refused:
        CronSet.parse(["0 9 * * *", "0 25 * * *"])
    assert refused.value.field == "cron[1]"
    assert "hour" in refused.value.message


@pytest.mark.parametrize(
    ("value", "words"),
    [([], "empty list"), (7, "not int"), ([f"{m} 9 * * *" for m in range(MAX_EXPRESSIONS + 1)], "at most")],
)
def test_not_a_list_of_expressions_is_refused(value: object, words: str) -> None:
    with pytest.raises(Invalid) as refused:
        CronSet.parse(value)
    assert words in refused.value.message


def test_latest_at_or_before_is_the_latest_of_any_member() -> None:
    cron = CronSet.parse(["0 9 * * 1-5", "0 12 * * 6"])
    latest = cron.latest_at_or_before(
        datetime.fromisoformat("2026-12-06T23:00:00+01:00"),
        datetime.fromisoformat("2026-12-01T00:00:00+01:00"),
        BERLIN,
    )
    assert latest is not None and render(latest, BERLIN) == "2026-12-05T12:00:00+01:00"


def test_count_between_counts_a_shared_instant_once() -> None:
    cron = CronSet.parse(["0 9 * * *", "0 9,18 * * *"])
    start = datetime.fromisoformat("2026-12-01T00:00:00+01:00")
    end = datetime.fromisoformat("2026-12-02T09:00:00+01:00")
    assert cron.count_between(start, end, BERLIN) == 3  # 1st 09:00 and 18:00, 2nd 09:00 (end included)
    assert cron.count_between(start, end, BERLIN, cap=2) == 2


def test_a_stored_set_with_an_edited_member_reports_its_problem() -> None:
    stored = CronSet.stored(["0 9 * * *", "0 99 * * *"])
    assert stored.problem() is not None
    assert CronSet.stored("0 9 * * *").problem() is None


_FIELDS = st.sampled_from(["0", "15", "30", "*/20", "0,45"])
_HOURS = st.sampled_from(["*", "2", "3", "9", "*/5", "1-3"])
_EXPRESSIONS = st.builds(lambda m, h: f"{m} {h} * * *", _FIELDS, _HOURS)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_EXPRESSIONS, min_size=1, max_size=4),
    st.datetimes(min_value=datetime(2026, 3, 20), max_value=datetime(2026, 11, 1)),
)
def test_the_union_is_exactly_the_sorted_distinct_firings_of_the_members(
    texts: list[str], naive_after: datetime
) -> None:
    after = naive_after.replace(tzinfo=UTC)
    stop = after + timedelta(days=2)
    expected: set[datetime] = set()
    for text in texts:
        for fired in CronExpression.parse(text).iter_after(after, BERLIN):
            if fired > stop:
                break
            expected.add(fired)
    union = []
    for fired in CronSet.parse(texts).iter_after(after, BERLIN):
        if fired > stop:
            break
        union.append(fired)
    assert union == sorted(expected)
