"""The timeline drawing (fronts/ui/timeline.py): DST changes from zoneinfo, marks, exclusions, escaping.

Europe/Berlin's 2027 spring-forward: 2027-03-28T02:00+01:00 becomes 03:00+02:00 (01:00Z). Its 2026 fall-back:
2026-10-25T03:00+02:00 becomes 02:00+01:00 (01:00Z). Lord Howe moves by half
an hour: 2026-10-04T02:00+10:30 becomes 02:30+11:00 (15:30Z the day before).
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronwright.fronts.ui.timeline import (
    MAX_MARKS,
    ExcludedDay,
    Firing,
    Lane,
    Transition,
    Window,
    excluded_days,
    svg,
    table,
    transitions,
)

SVG = ""  # inline in HTML, the drawing names no namespace
BERLIN = ZoneInfo("Europe/Berlin")


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def week(start: str) -> Window:
    return Window(utc(start), utc(start) + timedelta(days=7))


def parsed(drawing: str) -> ET.Element:
    return ET.fromstring(drawing)


def titles(root: ET.Element) -> list[str]:
    return [element.text or "" for element in root.iter(f"{SVG}title")]


def test_the_spring_forward_of_berlin_is_found_to_the_second() -> None:
    (change,) = transitions(["Europe/Berlin"], week("2027-03-25T00:00:00+01:00"))
    assert change.at == utc("2027-03-28T01:00:00Z")
    assert (change.before, change.after) == (timedelta(hours=1), timedelta(hours=2))
    assert change.label == "Europe/Berlin: clocks go forward 1 hour (+01:00 to +02:00)"


def test_the_fall_back_and_a_half_hour_zone() -> None:
    found = transitions(["Europe/Berlin", "Australia/Lord_Howe", "UTC"], week("2026-10-01T00:00:00Z"))
    assert [(change.zone, change.at.isoformat()) for change in found] == [
        ("Australia/Lord_Howe", "2026-10-03T15:30:00+00:00"),
    ]
    assert found[0].label == "Australia/Lord_Howe: clocks go forward 30 minutes (+10:30 to +11:00)"
    (back,) = transitions(["Europe/Berlin"], week("2026-10-22T00:00:00Z"))
    assert back.at == utc("2026-10-25T01:00:00Z")
    assert back.label == "Europe/Berlin: clocks go back 1 hour (+02:00 to +01:00)"


def test_a_window_without_a_change_has_none() -> None:
    assert transitions(["Europe/Berlin", "Asia/Tokyo"], week("2027-06-01T00:00:00Z")) == ()


_ZONES = sorted(zone for zone in available_timezones() if "/" in zone and not zone.startswith("Etc/"))


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(_ZONES),
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2037, 12, 1)).map(
        lambda naive: naive.replace(tzinfo=UTC, microsecond=0)
    ),
)
def test_each_change_found_is_where_the_offset_changes(name: str, start: datetime) -> None:
    window = Window(start, start + timedelta(days=7))
    zone = ZoneInfo(name)
    found = transitions([name], window)
    for change in found:
        assert window.start < change.at <= window.end
        assert (change.at - timedelta(seconds=1)).astimezone(zone).utcoffset() == change.before
        assert change.at.astimezone(zone).utcoffset() == change.after
    # Between the changes found, the offset holds (sampled every hour and at the edges).
    edges = [window.start, *(change.at for change in found), window.end]
    for low, high in itertools.pairwise(edges):
        offsets = {
            low.astimezone(zone).utcoffset(),
            (high - timedelta(seconds=1)).astimezone(zone).utcoffset(),
        }
        at = low
        while at < high:
            offsets.add(at.astimezone(zone).utcoffset())
            at += timedelta(hours=1)
        assert len(offsets) == 1, (name, low, high, offsets)


def _lane(
    name: str = "nightly",
    firings: tuple[Firing, ...] | None = None,
    excluded_days: tuple[ExcludedDay, ...] = (),
    href: str | None = None,
    truncated: bool = False,
) -> Lane:
    if firings is None:
        firings = (
            Firing(utc("2027-03-27T09:02:13+01:00"), utc("2027-03-27T09:00:00+01:00")),
            Firing(utc("2027-03-28T09:00:00+02:00"), utc("2027-03-28T09:00:00+02:00")),
        )
    return Lane(
        name=name,
        zone="Europe/Berlin",
        firings=firings,
        excluded_days=excluded_days,
        href=href,
        truncated=truncated,
    )


def test_the_drawing_marks_each_firing_with_its_jitter_and_a_title() -> None:
    window = week("2027-03-25T00:00:00+01:00")
    root = parsed(svg([_lane()], window, transitions(["Europe/Berlin"], window), BERLIN))
    said = titles(root)
    assert "nightly: fires at 2027-03-27T09:02:13+01:00 (nominal 2027-03-27T09:00:00+01:00, jittered)" in said
    assert "nightly: fires at 2027-03-28T09:00:00+02:00" in said
    assert "Europe/Berlin: clocks go forward 1 hour (+01:00 to +02:00) at 2027-03-28T03:00:00+02:00" in said
    # The jittered firing shows its nominal instant as its own mark.
    assert len([line for line in root.iter(f"{SVG}line") if line.get("class") == "cw-nominal"]) == 1
    assert root.get("role") == "img"
    labels = [text.text for text in root.iter(f"{SVG}text")]
    assert "DST Europe/Berlin +01:00 → +02:00" in labels


def test_the_dst_line_stands_where_the_change_is() -> None:
    window = week("2027-03-25T00:00:00+01:00")
    (change,) = transitions(["Europe/Berlin"], window)
    root = parsed(svg([_lane()], window, [change], BERLIN))
    (group,) = [g for g in root.iter(f"{SVG}g") if g.get("class") == "cw-dst"]
    line = group.find(f"{SVG}line")
    assert line is not None
    assert float(line.get("x1", "0")) == window.x(utc("2027-03-28T01:00:00Z"))


def test_excluded_dates_are_shaded_and_excluded_occurrences_crossed() -> None:
    window = week("2026-12-21T00:00:00+01:00")
    christmas = excluded_days(
        window, BERLIN, lambda day: "2026-12-25 is Christmas Day" if day.day == 25 else None
    )
    assert christmas == (
        ExcludedDay(
            utc("2026-12-25T00:00:00+01:00"), utc("2026-12-26T00:00:00+01:00"), "2026-12-25 is Christmas Day"
        ),
    )
    crossed = Firing(
        utc("2026-12-25T09:00:00+01:00"), utc("2026-12-25T09:00:00+01:00"), "2026-12-25 is Christmas Day"
    )
    root = parsed(svg([_lane(firings=(crossed,), excluded_days=christmas)], window, [], BERLIN))
    said = titles(root)
    assert "nightly: excluded date, 2026-12-25 is Christmas Day" in said
    assert "nightly: 2026-12-25T09:00:00+01:00 excluded, 2026-12-25 is Christmas Day" in said
    assert [rect.get("class") for rect in root.iter(f"{SVG}rect")] == ["cw-excluded-day"]


def test_a_lane_too_dense_to_mark_is_one_band_with_its_count() -> None:
    start = utc("2027-06-01T00:00:00Z")
    many = tuple(
        Firing(start + timedelta(minutes=n), start + timedelta(minutes=n)) for n in range(MAX_MARKS + 1)
    )
    root = parsed(
        svg([_lane("busy", firings=many, truncated=True)], week("2027-06-01T00:00:00Z"), [], BERLIN)
    )
    assert f"busy: {MAX_MARKS + 1} or more firings, too many to draw one by one" in titles(root)
    assert not list(root.iter(f"{SVG}circle"))


def test_the_axis_of_a_day_ticks_every_three_local_hours() -> None:
    window = Window(utc("2027-03-28T00:00:00+01:00"), utc("2027-03-29T00:00:00+02:00"))
    root = parsed(svg([], window, [], BERLIN))
    labels = [text.text for text in root.iter(f"{SVG}text")]
    assert labels[:3] == ["00:00", "03:00", "06:00"]  # 03:00 follows 00:00 on the night the clocks go on
    assert "No schedules fire in this window." in labels


HOSTILE = ["<script>alert(1)</script>", '<img src=x onerror="alert(2)">', "a & b ' \" ]]>"]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_is_text_in_the_drawing_and_the_table(name: str) -> None:
    window = week("2027-03-25T00:00:00+01:00")
    lane = _lane(name, href=f"/ui/schedules/{name}")
    drawing = svg([lane], window, [], BERLIN)
    assert "<script" not in drawing and "<img" not in drawing
    root = parsed(drawing)
    assert name in [text.text for text in root.iter(f"{SVG}text")]
    listed = table([lane], window, [])
    assert "<script" not in listed and "<img" not in listed
    heads = [
        cell_text(th) for th in ET.fromstring(f"<div>{listed}</div>").iter("th") if th.get("scope") == "row"
    ]
    assert heads == [name, name]


_PRINTABLE = st.characters(blacklist_categories=("Cc", "Cs"))


@given(st.text(_PRINTABLE, min_size=1, max_size=40), st.text(max_size=60))
def test_any_name_and_reason_round_trip_through_the_markup(name: str, reason: str) -> None:
    window = week("2027-03-25T00:00:00+01:00")
    day = ExcludedDay(utc("2027-03-26T00:00:00+01:00"), utc("2027-03-27T00:00:00+01:00"), reason)
    lane = _lane(name, excluded_days=(day,))
    root = parsed(svg([lane], window, [], BERLIN))
    assert name in [text.text or "" for text in root.iter(f"{SVG}text")]
    ET.fromstring(f"<div>{table([lane], window, [])}</div>")


def test_the_table_lists_firings_exclusions_and_dst_in_words() -> None:
    window = week("2027-03-25T00:00:00+01:00")
    changes = transitions(["Europe/Berlin"], window)
    listed = table([_lane()], window, changes)
    root = ET.fromstring(f"<div>{listed}</div>")
    assert [(li.text or "") + "".join(li.itertext())[len(li.text or "") :] for li in root.iter("li")] == [
        "DST change: Europe/Berlin: clocks go forward 1 hour (+01:00 to +02:00) at 2027-03-28T03:00:00+02:00"
    ]
    rows = [[cell_text(cell) for cell in row] for row in root.iter("tr")][1:]
    assert rows == [
        ["nightly", "2027-03-27T09:02:13+01:00", "2027-03-27T09:00:00+01:00", "jittered"],
        ["nightly", "2027-03-28T09:00:00+02:00", "2027-03-28T09:00:00+02:00", ""],
    ]


def cell_text(cell: ET.Element) -> str:
    return "".join(cell.itertext())


def test_a_window_is_two_aware_instants_in_order() -> None:
    with pytest.raises(ValueError):
        Window(datetime(2027, 1, 2), datetime(2027, 1, 3))
    with pytest.raises(ValueError):
        Window(utc("2027-01-02T00:00:00Z"), utc("2027-01-01T00:00:00Z"))


def test_transition_labels_for_odd_amounts() -> None:
    odd = Transition("X/Y", utc("2027-01-01T00:00:00Z"), timedelta(hours=1), timedelta(hours=2, minutes=30))
    assert odd.label == "X/Y: clocks go forward 1 h 30 min (+01:00 to +02:30)"
    west = Transition("X/Y", utc("2027-01-01T00:00:00Z"), timedelta(hours=-4), timedelta(hours=-5))
    assert west.label == "X/Y: clocks go back 1 hour (-04:00 to -05:00)"
