"""Semantic 33: named calendars from config exclude dates, read in the schedule's zone."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronwright.config.calendar_tables import CalendarConfig, build, from_config
from cronwright.core.calendars import Calendars, UnknownCalendar
from cronwright.errors import ConfigError

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def calendar_of(folder: Path, **table: Any) -> Calendars:
    return from_config({"holidays": CalendarConfig.model_validate(table, strict=False)}, folder)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_listed_dates_and_ranges_are_excluded_and_their_neighbours_are_not(tmp_path: Path) -> None:
    calendars = calendar_of(tmp_path, dates=["2026-12-24"], ranges=[["2026-12-27", "2026-12-31"]])
    holidays = calendars["holidays"]
    assert holidays.excludes_date(date(2026, 12, 24))
    assert not holidays.excludes_date(date(2026, 12, 26))
    assert holidays.excludes_date(date(2026, 12, 27)) and holidays.excludes_date(date(2026, 12, 31))
    assert not holidays.excludes_date(date(2027, 1, 1))


def test_the_date_is_read_in_the_schedule_zone_not_in_utc(tmp_path: Path) -> None:
    holidays = calendar_of(tmp_path, dates=["2026-12-24"])["holidays"]
    # 23:30 UTC on the 23rd is already the 24th in Berlin, and still the 23rd in New York.
    instant = at("2026-12-23T23:30:00+00:00")
    assert holidays.excludes(instant, BERLIN)
    assert not holidays.excludes(instant, NEW_YORK)


def test_country_and_region_holidays_come_from_the_holidays_package(tmp_path: Path) -> None:
    bavaria = calendar_of(tmp_path, country="DE", subdivision="BY")["holidays"]
    berlin_state = calendar_of(tmp_path, country="DE", subdivision="BE")["holidays"]
    assert bavaria.reason(date(2026, 12, 25)) == "2026-12-25 is Christmas Day (DE-BY)"
    # Epiphany is a holiday in Bavaria, not in the state of Berlin.
    assert bavaria.excludes_date(date(2027, 1, 6))
    assert not berlin_state.excludes_date(date(2027, 1, 6))
    assert not bavaria.excludes_date(date(2026, 12, 1))


def test_an_unknown_country_or_region_stops_the_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"calendars\.holidays: Country XX not available: country is an"):
        calendar_of(tmp_path, country="XX")
    with pytest.raises(ConfigError, match="subdivision ZZ: country is an ISO 3166-1 code such as DE"):
        calendar_of(tmp_path, country="DE", subdivision="ZZ")
    with pytest.raises(ConfigError, match="needs a country"):
        calendar_of(tmp_path, subdivision="BY")


ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:1
SUMMARY:Company day off
DTSTART;VALUE=DATE:20261120
DTEND;VALUE=DATE:20261122
END:VEVENT
BEGIN:VEVENT
UID:2
SUMMARY:Founders day
DTSTART;VALUE=DATE:20260301
RRULE:FREQ=YEARLY
END:VEVENT
BEGIN:VEVENT
UID:3
SUMMARY:Overnight freeze
DTSTART:20261210T220000Z
DTEND:20261211T020000Z
END:VEVENT
END:VCALENDAR
"""


def test_an_ics_file_beside_the_config_excludes_its_event_days(tmp_path: Path) -> None:
    (tmp_path / "off.ics").write_text(ICS)
    off = calendar_of(tmp_path, ics="off.ics")["holidays"]
    # DTEND of an all-day event is exclusive: the 20th and 21st, not the 22nd.
    assert off.excludes_date(date(2026, 11, 20)) and off.excludes_date(date(2026, 11, 21))
    assert not off.excludes_date(date(2026, 11, 22))
    # A yearly event recurs.
    assert off.excludes_date(date(2026, 3, 1)) and off.excludes_date(date(2031, 3, 1))
    assert not off.excludes_date(date(2026, 3, 2))
    # A timed event covers each date it spans.
    assert off.excludes_date(date(2026, 12, 10)) and off.excludes_date(date(2026, 12, 11))
    assert not off.excludes_date(date(2026, 12, 12))


def test_a_missing_or_broken_ics_file_stops_the_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be read"):
        calendar_of(tmp_path, ics="missing.ics")
    (tmp_path / "bad.ics").write_text("not a calendar")
    with pytest.raises(ConfigError, match="not iCalendar"):
        calendar_of(tmp_path, ics="bad.ics")


def test_a_bad_table_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="is not a date"):
        CalendarConfig.model_validate({"dates": ["24.12.2026"]}, strict=False)
    with pytest.raises(ValueError, match="ends before it starts"):
        CalendarConfig.model_validate({"ranges": [["2026-12-31", "2026-12-27"]]}, strict=False)
    with pytest.raises(ValueError, match="pair of dates"):
        CalendarConfig.model_validate({"ranges": [["2026-12-31"]]}, strict=False)
    with pytest.raises(ValueError, match="extra"):
        CalendarConfig.model_validate({"days": ["2026-12-24"]}, strict=False)


def test_an_unknown_calendar_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    calendars = calendar_of(tmp_path, dates=["2026-12-24"])
    calendars.check(["holidays"])
    with pytest.raises(UnknownCalendar) as refused:
        calendars.check(["holidays", "vacations"])
    reply = refused.value.reply()
    assert reply["error"] == "unknown_calendar" and reply["calendar"] == "vacations"
    assert "[calendars.vacations]" in reply["message"] and "holidays" in reply["message"]


def test_exclusion_names_the_first_calendar_that_excludes(tmp_path: Path) -> None:
    calendars = Calendars(
        {
            "eve": build(
                "eve", CalendarConfig.model_validate({"dates": ["2026-12-24"]}, strict=False), tmp_path
            ),
            "xmas": build("xmas", CalendarConfig(country="DE"), tmp_path),
        }
    )
    assert calendars.exclusion(["eve", "xmas"], at("2026-12-25T09:00:00+01:00"), BERLIN) == (
        "2026-12-25 is Christmas Day (DE)"
    )
    assert calendars.exclusion(["eve"], at("2026-12-25T09:00:00+01:00"), BERLIN) is None
    # A calendar dropped from the config since excludes nothing rather than stopping the schedule.
    assert calendars.exclusion(["gone"], at("2026-12-24T09:00:00+01:00"), BERLIN) is None
