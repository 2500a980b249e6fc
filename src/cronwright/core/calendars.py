"""Named exclusion calendars (semantic 33): the pure questions, asked of dates already known.

A calendar is a set of dates: listed dates, inclusive ranges, and a country's (and region's) public
holidays, looked up through `Holidays` (the `holidays` package, wrapped by config/calendar_tables.py,
which also reads ICS files). An occurrence is excluded when its nominal instant's date, read in the
schedule's zone, is one of them, so "the 24th" means the 24th where the schedule lives, whatever the
node's zone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from cronwright.errors import Refusal
from cronwright.timing.iso import as_utc


class UnknownCalendar(Refusal):
    code = "unknown_calendar"


class Holidays(Protocol):
    """A country's holidays: the holiday's name on `day`, or None."""

    def get(self, day: date) -> str | None: ...


@dataclass(frozen=True)
class Calendar:
    """The excluded dates of one named calendar. Ask `excludes(instant, zone)` or `reason(day)`."""

    name: str
    dates: frozenset[date] = frozenset()
    ranges: tuple[tuple[date, date], ...] = ()
    country: str | None = None
    subdivision: str | None = None
    holidays: Holidays | None = field(default=None, compare=False, repr=False)

    def reason(self, day: date) -> str | None:
        """Why `day` is excluded ("2026-12-25 is Christmas Day"), or None when it is not."""
        if day in self.dates:
            return f"{day} is listed in calendar '{self.name}'"
        for first, last in self.ranges:
            if first <= day <= last:
                return f"{day} is in {first}..{last} of calendar '{self.name}'"
        if self.holidays is not None:
            holiday = self.holidays.get(day)
            if holiday is not None:
                return f"{day} is {holiday} ({self._where()})"
        return None

    def excludes_date(self, day: date) -> bool:
        return self.reason(day) is not None

    def excludes(self, instant: datetime, zone: ZoneInfo) -> bool:
        """Whether the date of `instant`, read in `zone`, is excluded."""
        return self.excludes_date(local_date(instant, zone))

    def _where(self) -> str:
        country = self.country or "?"
        return country if self.subdivision is None else f"{country}-{self.subdivision}"


def local_date(instant: datetime, zone: ZoneInfo) -> date:
    """The date of `instant` on the wall clock of `zone`."""
    return as_utc(instant).astimezone(zone).date()


@dataclass(frozen=True)
class Calendars(Mapping[str, Calendar]):
    """The node's calendars by name: the one place a schedule's `exclude` list is checked and read."""

    by_name: Mapping[str, Calendar] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Calendar:
        return self.by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name)

    def __len__(self) -> int:
        return len(self.by_name)

    def check(self, names: Iterable[str]) -> None:
        """Refuse (`unknown_calendar`) a name that no `[calendars.NAME]` defines."""
        for name in names:
            if name not in self.by_name:
                known = ", ".join(sorted(self.by_name)) or "none are configured"
                raise UnknownCalendar(
                    f"unknown calendar {name!r}: define it as [calendars.{name}] in the config "
                    f"(known: {known})",
                    calendar=name,
                )

    def exclusion(self, names: Iterable[str], instant: datetime, zone: ZoneInfo) -> str | None:
        """Why the occurrence at `instant` is excluded by one of `names`, read in `zone`; None if it is not.

        A name no longer configured (a calendar removed from the config after the schedule was made)
        excludes nothing: the schedule keeps firing rather than stopping on a missing table.
        """
        day = local_date(instant, zone)
        for name in names:
            calendar = self.by_name.get(name)
            why = calendar.reason(day) if calendar is not None else None
            if why is not None:
                return why
        return None


NO_CALENDARS = Calendars()
