"""`preview` as every front shares it: a pure function of the expression, the zone, `after` and a count."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from cronwright.errors import Invalid
from cronwright.timing.preview import preview

BERLIN = ZoneInfo("Europe/Berlin")
AFTER = datetime.fromisoformat("2026-03-28T00:00:00+01:00")


def test_preview_shows_the_normalized_expression_its_meaning_zone_and_firings() -> None:
    # Berlin, 2026-03-29T01:00:00Z: 02:00+01:00 becomes 03:00+02:00.
    assert preview(" 30  2 * * * ", None, AFTER, 3, BERLIN) == {
        "expression": "30 2 * * *",
        "explanation": "At 02:30 every day",
        "tz": "Europe/Berlin",
        "firings": ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"],
    }


def test_preview_reads_and_renders_in_the_zone_it_is_given() -> None:
    shown = preview("@daily", "America/Havana", AFTER, 2, BERLIN)
    # Havana, 2026-03-08T05:00:00Z: 00:00-05:00 becomes 01:00-04:00.
    assert shown["tz"] == "America/Havana"
    assert shown["expression"] == "0 0 * * *"
    assert shown["firings"] == ["2026-03-28T00:00:00-04:00", "2026-03-29T00:00:00-04:00"]


def test_preview_lists_fewer_firings_when_the_walk_runs_out() -> None:
    # A 29 February that is a Sunday: 2032, 2060, 2088, then 2128, past the 100-year horizon.
    shown = preview("0 0 29 2 */7", "UTC", AFTER, 10, BERLIN)
    assert shown["firings"] == [
        "2032-02-29T00:00:00+00:00",
        "2060-02-29T00:00:00+00:00",
        "2088-02-29T00:00:00+00:00",
    ]


@pytest.mark.parametrize("count", [0, -1, 1001, True, "5", 2.0, None])
def test_count_must_be_a_whole_number_from_1_to_1000(count: object) -> None:
    with pytest.raises(Invalid) as caught:
        # The ignore below is kept: deliberate misuse, counts of a type the pure function refuses.
        preview("* * * * *", None, AFTER, count, BERLIN)  # type: ignore[arg-type]
    assert caught.value.field == "count"


def test_bad_expressions_and_zones_are_refused_naming_their_field() -> None:
    with pytest.raises(Invalid) as caught:
        preview("0 0 30 2 *", None, AFTER, 5, BERLIN)
    assert caught.value.field == "expression" and "February has no 30th" in caught.value.message
    with pytest.raises(Invalid) as caught:
        preview("@daily", "Mars/Base", AFTER, 5, BERLIN)
    assert caught.value.field == "tz"
    with pytest.raises(Invalid) as caught:
        preview(7, None, AFTER, 5, BERLIN)
    assert caught.value.field == "expression"
    # A list is several expressions (semantic 31); each member is refused naming its place.
    with pytest.raises(Invalid) as caught:
        preview(["@daily", "0 0 30 2 *"], None, AFTER, 5, BERLIN)
    assert caught.value.field == "expression[1]"


def test_a_thousand_firings_of_every_second_are_quick() -> None:
    firings = preview("* * * * * *", None, AFTER, 1000, BERLIN)["firings"]
    assert isinstance(firings, list) and len(firings) == 1000
    assert firings[-1] == "2026-03-28T00:16:40+01:00"
