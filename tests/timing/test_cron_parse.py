"""Reading cron expressions: what is accepted and how it is normalized; what is refused and why."""

from __future__ import annotations

import time
from datetime import datetime
from itertools import islice
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronwright.errors import Invalid
from cronwright.timing.cron import CronExpression
from cronwright.timing.iso import render

UTC_ZONE = ZoneInfo("UTC")


def firings(expression: str, after: str, count: int, zone_name: str = "UTC") -> list[str]:
    zone = ZoneInfo(zone_name)
    walk = CronExpression.parse(expression).iter_after(datetime.fromisoformat(after), zone)
    return [render(fired, zone) for fired in islice(walk, count)]


def refusal(text: Any, field: str = "cron") -> str:
    with pytest.raises(Invalid) as caught:
        CronExpression.parse(text, field)
    assert caught.value.field == field
    message = caught.value.message
    assert "\n" not in message and "Traceback" not in message
    return message


# -- accepted ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("macro", "fields"),
    [
        ("@hourly", "0 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("  @Daily ", "0 0 * * *"),
    ],
)
def test_macros_expand_to_their_five_fields(macro: str, fields: str) -> None:
    assert CronExpression.parse(macro).text == fields


def test_macros_fire_when_their_fields_do() -> None:
    assert firings("@hourly", "2026-05-01T10:20:00+00:00", 2) == [
        "2026-05-01T11:00:00+00:00",
        "2026-05-01T12:00:00+00:00",
    ]
    assert firings("@weekly", "2026-05-01T10:20:00+00:00", 1) == ["2026-05-03T00:00:00+00:00"]
    assert firings("@monthly", "2026-05-01T10:20:00+00:00", 1) == ["2026-06-01T00:00:00+00:00"]
    assert firings("@yearly", "2026-05-01T10:20:00+00:00", 1) == ["2027-01-01T00:00:00+00:00"]


def test_normalized_text_has_single_spaces_and_upper_case_names() -> None:
    assert CronExpression.parse("  0\t9  * jan   mon-fri ").text == "0 9 * JAN MON-FRI"
    assert CronExpression.parse("0 0 l * *").text == "0 0 L * *"
    assert str(CronExpression.parse("*/15   * * * *")) == "*/15 * * * *"


def test_last_day_of_the_month_is_l() -> None:
    assert firings("0 0 L * *", "2026-02-01T00:00:00+00:00", 3) == [
        "2026-02-28T00:00:00+00:00",
        "2026-03-31T00:00:00+00:00",
        "2026-04-30T00:00:00+00:00",
    ]


def test_last_weekday_of_the_month_is_lw() -> None:
    # 31 May 2026 is a Sunday, 31 October 2026 a Saturday.
    assert firings("0 0 LW 5,10 *", "2026-01-01T00:00:00+00:00", 2) == [
        "2026-05-29T00:00:00+00:00",
        "2026-10-30T00:00:00+00:00",
    ]


def test_last_friday_of_the_month_is_5l() -> None:
    assert firings("0 0 * * 5L", "2026-01-01T00:00:00+00:00", 3) == [
        "2026-01-30T00:00:00+00:00",
        "2026-02-27T00:00:00+00:00",
        "2026-03-27T00:00:00+00:00",
    ]


def test_third_friday_of_the_month_is_5_hash_3() -> None:
    assert firings("0 0 * * 5#3", "2026-01-01T00:00:00+00:00", 3) == [
        "2026-01-16T00:00:00+00:00",
        "2026-02-20T00:00:00+00:00",
        "2026-03-20T00:00:00+00:00",
    ]


def test_day_of_month_or_day_of_week_when_neither_is_a_star() -> None:
    # cronie: "13 * 5" is the 13th OR any Friday; "*/1 * 5" is every day that is a Friday.
    assert firings("0 0 13 * 5", "2026-03-01T00:00:00+00:00", 3) == [
        "2026-03-06T00:00:00+00:00",
        "2026-03-13T00:00:00+00:00",
        "2026-03-20T00:00:00+00:00",
    ]
    assert firings("0 0 */1 * 5", "2026-03-01T00:00:00+00:00", 2) == [
        "2026-03-06T00:00:00+00:00",
        "2026-03-13T00:00:00+00:00",
    ]


def test_six_fields_put_seconds_first() -> None:
    assert firings("*/20 * * * * *", "2026-05-01T10:00:00+00:00", 3) == [
        "2026-05-01T10:00:20+00:00",
        "2026-05-01T10:00:40+00:00",
        "2026-05-01T10:01:00+00:00",
    ]


def test_sunday_is_0_or_7() -> None:
    assert firings("0 0 * * 7", "2026-05-01T00:00:00+00:00", 1) == firings(
        "0 0 * * SUN", "2026-05-01T00:00:00+00:00", 1
    )


def test_explain_is_cronsims_english() -> None:
    assert CronExpression.parse("30 2 * * *").explain() == "At 02:30 every day"
    assert CronExpression.parse("0 0 * * 5#3").explain() == "At 00:00 on the third Friday of the month"


@pytest.mark.parametrize(
    ("expression", "said"),
    [
        ("0 7 21 * *", "At 07:00 on the 21st day of every month"),
        ("0 7 22 * *", "At 07:00 on the 22nd day of every month"),
        ("0 7 31 * *", "At 07:00 on the 31st day of every month"),
        ("0 7 11,12,13,23 * *", "At 07:00 on the 11th, the 12th, the 13th, and the 23rd day of month"),
        ("0 7 * * 0,7", "At 07:00 on Sunday"),
        ("0 7 * * 7", "At 07:00 on Sunday"),
        ("0 7 * * 5-7", "At 07:00 on Friday through Sunday"),
        ("0 0 7 * * 0,7", "At 07:00 on Sunday"),
    ],
)
def test_explain_says_ordinals_and_weekdays_as_english_does(expression: str, said: str) -> None:
    """cronsim says "21th", "22th", "31th" and, for `0,7`, "on Sunday and Sunday" (issue 35, defect 8)."""
    assert CronExpression.parse(expression).explain() == said


def test_a_stored_expression_can_be_rebuilt_directly() -> None:
    assert CronExpression("0 3 * * *") == CronExpression.parse("0 3 * * *")


def test_a_direct_build_gets_the_same_checks() -> None:
    with pytest.raises(Invalid):
        CronExpression("0 0 30 2 *")
    with pytest.raises(ValueError, match="not normalized"):
        CronExpression("@daily")


def test_a_refusal_names_the_field_it_was_given() -> None:
    assert refusal("nope", field="schedule.cron")


# -- refused -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [None, 5, 2.5, True, [], {}, ["0 3 * * *"], {"cron": "0 3 * * *"}, b"0 3 * * *"]
)
def test_non_strings_are_refused_not_coerced(value: object) -> None:
    assert "must be a string" in refusal(value)


def test_empty_and_blank_are_refused() -> None:
    assert "is empty" in refusal("")
    assert "is empty" in refusal(" \t ")


def test_an_over_long_expression_is_refused() -> None:
    assert "longer than 200 characters" in refusal("0 " * 100 + "*")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("61 * * * *", "minute field '61' is out of range 0-59"),
        ("* 24 * * *", "hour field '24' is out of range 0-23"),
        ("0 0 0 * *", "day-of-month field '0' is out of range 1-31"),
        ("0 0 * 13 *", "month field '13' is out of range 1-12"),
        ("0 0 * * 8", "day-of-week field '8' is out of range 0-7"),
        ("60 * * * * *", "second field '60' is out of range 0-59"),
        ("1,61 * * * *", "minute field '1,61' has 61, which is out of range 0-59"),
        ("* * * *", "has 4 fields: write 5"),
        ("* * * * * * *", "has 7 fields"),
        ("a b c d e", "minute field 'A' is not a number or a range"),
        ("0 0 * FOO *", "month field 'FOO' is not a number or a range: use a number 1-12 or a name JAN-DEC"),
        ("17-9 * * * *", "minute field '17-9' has the backward range '17-9'"),
        ("0 0 * * MON-SUN", "e.g. 1-7 for Monday to Sunday"),
        ("1,,2 * * * *", "empty list item"),
        ("*/0 * * * *", "step of 0"),
        ("0 0 * * 5#6", "write day#n with n from 1 to 5"),
        ("0 0 * * XL", "write nL for the last weekday n of the month"),
        ("@reboot", "unknown cron macro '@reboot'"),
        ("0 0 * * *\n0 1 * * *", "contains '\\n', which cron does not use"),
        ("0 0 * * ½", "contains '½'"),
        ("0 0 ? * *", "contains '?'"),
    ],
)
def test_bad_expressions_are_refused_with_a_message_that_names_the_field(text: str, expected: str) -> None:
    assert expected in refusal(text)


@pytest.mark.parametrize(
    ("text", "field", "limit"),
    [
        ("*/1000000 * * * *", "minute", "use a step from 1 to 60"),
        ("*/61 * * * *", "minute", "use a step from 1 to 60"),
        ("0 */25 * * *", "hour", "use a step from 1 to 24"),
        ("0 0 1/32 * *", "day-of-month", "use a step from 1 to 31"),
        ("0 0 * */13 *", "month", "use a step from 1 to 12"),
        ("0 0 * * */8", "day-of-week", "use a step from 1 to 7"),
        ("*/" + "9" * 150 + " * * * * *", "second", "use a step from 1 to 60"),
    ],
)
def test_a_step_larger_than_the_field_is_refused(text: str, field: str, limit: str) -> None:
    # cronsim reads "*/1000000" as "0"; that is surely not what was meant.
    message = refusal(text)
    assert message.startswith(f"{field} field ") and limit in message


def test_the_largest_sensible_step_is_accepted() -> None:
    assert CronExpression.parse("*/60 * * * *").text == "*/60 * * * *"


def test_february_30_can_never_fire() -> None:
    assert refusal("0 0 30 2 *") == (
        "cron expression '0 0 30 2 *' can never fire: February has no 30th "
        "(L means the last day of the month)"
    )


def test_the_31st_of_short_months_can_never_fire() -> None:
    assert "can never fire: April and June have no 31st" in refusal("0 0 31 4,6 *")
    assert "can never fire: February has no 30th" in refusal("0 0 30-31 2 *")


def test_an_expression_no_date_satisfies_can_never_fire() -> None:
    # The last weekday of a month is never a Saturday or a Sunday.
    assert "can never fire: no date matches" in refusal("0 0 LW * */6")
    # The 1st or 30th of February, and the last Monday of February: never both.
    assert "can never fire" in refusal("0 0 */29 2 1L")


def test_rare_but_possible_expressions_are_accepted() -> None:
    # A 29 February that is a Sunday: 2032, then 2060.
    assert firings("0 0 29 2 */7", "2026-01-01T00:00:00+00:00", 2) == [
        "2032-02-29T00:00:00+00:00",
        "2060-02-29T00:00:00+00:00",
    ]


def test_refusing_a_never_firing_expression_is_quick() -> None:
    started = time.perf_counter()
    for text in ("0 0 LW * */6", "* * LW * */6", "59 59 23 LW 2 */6"):
        refusal(text)
    # About 15 ms each on a laptop: cronsim's 50-year walk, done once per text.
    assert time.perf_counter() - started < 1.5
