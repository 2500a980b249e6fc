"""`[calendars.NAME]` tables read into calendars: listed dates and ranges, a country's holidays through
the `holidays` package, and the days an ICS file's events cover, read with `icalendar`.

Building a calendar reads its ICS file; after that every question is pure (core/calendars.py). Holidays are
computed per year on first use, under a lock, since passes ask from several threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cronwright.core.calendars import Calendar, Calendars
from cronwright.errors import ConfigError

if TYPE_CHECKING:
    import holidays

# `holidays`, `icalendar` and dateutil are imported where a calendar needs them: every CLI call imports this
# module, and `holidays` alone (a module per country) costs more than the rest of a `tick`'s imports.

# The most dates one ICS file (its recurring events expanded) may add: a bound on the work of loading it.
MAX_ICS_DATES = 100_000
# How far a recurring ICS event without an end is expanded (50 years).
_RECUR_SPAN = timedelta(days=18263)


class CalendarConfig(BaseModel):
    """One `[calendars.NAME]` table."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)  # as config._Strict

    dates: list[date] = Field(default_factory=list)
    ranges: list[tuple[date, date]] = Field(default_factory=list)
    country: str | None = None
    subdivision: str | None = None
    ics: str | None = None

    @field_validator("dates", mode="before")
    @classmethod
    def _dates(cls, value: object) -> object:
        # TOML gives dates as dates or as strings ("2026-12-24"); both mean the same day.
        return [_day(item) for item in value] if isinstance(value, list) else value

    @field_validator("ranges", mode="before")
    @classmethod
    def _ranges(cls, value: object) -> object:
        if not isinstance(value, list):
            return value
        spans = []
        for item in value:
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise ValueError("each range is a pair of dates, e.g. ['2026-12-27', '2026-12-31']")
            first, last = _day(item[0]), _day(item[1])
            if isinstance(first, date) and isinstance(last, date) and last < first:
                raise ValueError(f"range [{first}, {last}] ends before it starts")
            spans.append((first, last))
        return spans


def _day(value: object) -> object:
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a date: write YYYY-MM-DD") from None
    return value


class LockedHolidays:
    """A country's holidays, asked from several threads: the table computes a year on first use."""

    def __init__(self, table: holidays.HolidayBase) -> None:
        self._table = table
        self._lock = threading.Lock()

    def get(self, day: date) -> str | None:
        with self._lock:
            found = self._table.get(day)
        return None if found is None else str(found)


def build(name: str, config: CalendarConfig, folder: Path) -> Calendar:
    """One calendar from its table; an ICS path is read from `folder` (the config file's folder)."""
    dates = set(config.dates)
    if config.ics is not None:
        path = Path(config.ics)
        dates |= read_ics(path if path.is_absolute() else folder / path, name)
    table: holidays.HolidayBase | None = None
    if config.country is not None:
        import holidays

        try:
            table = holidays.country_holidays(config.country, subdiv=config.subdivision)
        except NotImplementedError as error:
            raise ConfigError(
                f"calendars.{name}: {error}: country is an ISO 3166-1 code such as DE, and subdivision"
                " one of its regions such as BY (see the holidays package's list)"
            ) from None
    elif config.subdivision is not None:
        raise ConfigError(f"calendars.{name}: subdivision {config.subdivision!r} needs a country")
    lookup = None if table is None else LockedHolidays(table)
    return Calendar(name, frozenset(dates), tuple(config.ranges), config.country, config.subdivision, lookup)


def from_config(tables: Mapping[str, CalendarConfig], folder: Path, where: str | None = None) -> Calendars:
    """Every `[calendars.NAME]` table built; an error names `where` (the config file) as config errors do."""
    try:
        return Calendars({name: build(name, table, folder) for name, table in tables.items()})
    except ConfigError as error:
        if where is None:
            raise
        raise ConfigError(f"{where}: {error}") from error.__cause__


# -- ICS files -------------------------------------------------------------------------------------


def read_ics(path: Path, name: str) -> set[date]:
    """The dates covered by the events of an ICS file, recurring events expanded (bounded)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"calendars.{name}: ics file {path} cannot be read: {error}") from error
    import icalendar

    try:
        calendar = icalendar.Calendar.from_ical(data)
    except ValueError as error:
        raise ConfigError(f"calendars.{name}: ics file {path} is not iCalendar: {error}") from None
    days: set[date] = set()
    for event in calendar.walk("VEVENT"):
        try:
            days |= _event_days(event)
        except (ValueError, TypeError, KeyError) as error:
            raise ConfigError(
                f"calendars.{name}: ics file {path}: event {event.get('SUMMARY', '?')!s}: {error}"
            ) from None
        if len(days) > MAX_ICS_DATES:
            raise ConfigError(
                f"calendars.{name}: ics file {path} covers more than {MAX_ICS_DATES} dates; split it"
            )
    return days


def _event_days(event: Any) -> set[date]:
    start_prop = event.get("DTSTART")
    if start_prop is None:
        return set()
    start = start_prop.dt
    length = _length(event, start)
    starts: Iterable[Any] = [start]
    if event.get("RRULE") is not None:
        starts = _recurrences(event, start)
    days: set[date] = set()
    for first in starts:
        days |= _covered(first, length)
        if len(days) > MAX_ICS_DATES:
            break
    return days


def _length(event: Any, start: Any) -> timedelta:
    end_prop = event.get("DTEND")
    if end_prop is not None:
        return end_prop.dt - start  # type: ignore[no-any-return]
    duration = event.get("DURATION")
    if duration is not None:
        return duration.dt  # type: ignore[no-any-return]
    # RFC 5545: an all-day event without an end lasts one day, a timed one no time at all.
    return timedelta(days=1) if not isinstance(start, datetime) else timedelta(0)


def _covered(start: Any, length: timedelta) -> set[date]:
    """The dates an event touches: an all-day DTEND is exclusive; a timed event covers each date it spans."""
    if not isinstance(start, datetime):
        count = max(1, length.days)
        return {start + timedelta(days=offset) for offset in range(count)}
    end = start + length
    last = (end - timedelta(microseconds=1)).date() if length > timedelta(0) else start.date()
    return {start.date() + timedelta(days=offset) for offset in range((last - start.date()).days + 1)}


def _recurrences(event: Any, start: Any) -> Iterator[Any]:
    from dateutil.rrule import rrulestr

    rule_text = event.get("RRULE").to_ical().decode()
    anchor = start if isinstance(start, datetime) else datetime(start.year, start.month, start.day)
    rule = rrulestr(rule_text, dtstart=anchor)
    horizon = anchor + _RECUR_SPAN
    for count, instant in enumerate(rule):
        if instant > horizon or count >= MAX_ICS_DATES:
            return
        yield instant if isinstance(start, datetime) else instant.date()
