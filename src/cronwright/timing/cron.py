"""Cron expressions, read as cronsim reads them, in a named zone.

cronsim decides what an expression means: names, ranges, steps, L, LW, nL, #n, and which expressions get
cronie's DST fix-up. DST then works as in cronie:

- a fixed-time expression (5 fields, minute and hour not starting with '*'): a firing whose wall time falls
  in a spring-forward gap fires at the first instant after the gap, and one in a repeated hour fires once, in
  the first copy. cronsim walks these itself, on the wall clock;
- any other expression (a '*' or '*/n' minute or hour, or 6 fields) follows real time: it fires at every
  instant whose wall time matches, so in both copies of a repeated hour, and never for a wall time a gap
  skipped. cronsim's own walk stumbles on changes that are not whole hours or not on the hour (Lord Howe,
  Chatham), so these are walked piece by piece between offset changes, at a fixed offset each.

This module adds what a service needs around that: refusals that say what to fix, a refusal for expressions
that can never fire, a bound on every walk, instants in UTC, and a latest-firing search that agrees with the
forward walk.

The normalized text is upper case (cronsim reads it so anyway), with macros expanded and fields separated by
one space: " @daily " becomes "0 0 * * *" and "0 9 * jan mon-fri" becomes "0 9 * JAN MON-FRI".
"""

from __future__ import annotations

import re
import reprlib
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import NamedTuple
from zoneinfo import ZoneInfo

from cronsim import CronSim
from cronsim.cronsim import Field

from cronwright.errors import Invalid
from cronwright.timing.iso import as_utc

MAX_TEXT = 200
# The furthest any walk looks past its start. No schedule lives longer (durations stop at 100 years), and it
# bounds the work of a walk over rare expressions ("0 0 29 2 */7" fires about once in 28 years).
HORIZON = timedelta(days=36525)

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MICRO = timedelta(microseconds=1)
_SECOND = timedelta(seconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Where the "can it ever fire?" walk starts. The calendar repeats every 400 years and the longest wait between
# two firings of any expression is about 40 years (Feb 29 on a given weekday), inside cronsim's 50-year walk.
_REFERENCE = datetime(2000, 1, 1, tzinfo=UTC)
# Firings a walk may drop because they lie at or before its start: this happens only when the start is in
# the second copy of a repeated hour and cronsim reports first-copy wall times. At most one per minute of a
# repeated hour or two; the bound is there so that no surprise can make a walk run away.
_MAX_SKIPPED = 10_000

_ALLOWED = re.compile(r"[0-9A-Za-z*/,#\- \t]+")
_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


class _Spec(NamedTuple):
    field: Field
    name: str
    low: int
    high: int
    # The most a step may be: a larger step can only ever pick the start, which is surely not what was meant.
    max_step: int
    names: tuple[str, ...]
    name_base: int


_SPECS = {
    Field.SECOND: _Spec(Field.SECOND, "second", 0, 59, 60, (), 0),
    Field.MINUTE: _Spec(Field.MINUTE, "minute", 0, 59, 60, (), 0),
    Field.HOUR: _Spec(Field.HOUR, "hour", 0, 23, 24, (), 0),
    Field.DAY: _Spec(Field.DAY, "day-of-month", 1, 31, 31, (), 0),
    Field.MONTH: _Spec(Field.MONTH, "month", 1, 12, 12, tuple(_MONTHS), 1),
    Field.DOW: _Spec(Field.DOW, "day-of-week", 0, 7, 7, tuple(_DAYS), 0),
}
_FIVE = (Field.MINUTE, Field.HOUR, Field.DAY, Field.MONTH, Field.DOW)
_SIX = (Field.SECOND, *_FIVE)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# -- reading the text --------------------------------------------------------------------------------


def _normalize(text: object, field: str) -> str:
    """Expand macros, upper-case, and join the fields with single spaces; refuse what is not cron at all."""
    if not isinstance(text, str):
        raise Invalid(
            field,
            f"{field} must be a string such as '0 3 * * *' or '@daily', not {type(text).__name__}",
        )
    if len(text) > MAX_TEXT:
        raise Invalid(
            field, f"{field} is longer than {MAX_TEXT} characters: a cron expression is 5 or 6 short fields"
        )
    stripped = text.strip()
    if not stripped:
        raise Invalid(field, f"{field} is empty: give a cron expression such as '0 3 * * *' or '@daily'")
    if stripped.startswith("@"):
        expanded = MACROS.get(stripped.lower())
        if expanded is None:
            raise Invalid(
                field,
                f"unknown cron macro {stripped!r}: use one of {', '.join(MACROS)}, or write the 5 fields",
            )
        return expanded
    if not _ALLOWED.fullmatch(stripped):
        bad = next(ch for ch in stripped if not _ALLOWED.fullmatch(ch))
        raise Invalid(
            field,
            f"cron expression {stripped!r} contains {bad!r}, which cron does not use: "
            "write fields of digits, names, and * , - / # L W, separated by spaces",
        )
    parts = stripped.upper().split()
    if len(parts) not in (5, 6):
        raise Invalid(
            field,
            f"cron expression {stripped!r} has {len(parts)} fields: write 5 "
            "(minute hour day-of-month month day-of-week), or 6 with seconds first",
        )
    return " ".join(parts)


def _value_problem(spec: _Spec, value: str, whole: str, alone: bool) -> str | None:
    if value in spec.names:
        return None
    if not value.isdigit():
        if spec.names:
            first, last = spec.names[0], spec.names[-1]
            hint = f"use a number {spec.low}-{spec.high} or a name {first}-{last}"
        else:
            hint = f"use a number {spec.low}-{spec.high}"
        if alone:
            return f"{spec.name} field {whole!r} is not a number or a range: {hint}"
        return f"{spec.name} field {whole!r} has {value!r}, which is not a number: {hint}"
    if not spec.low <= int(value) <= spec.high:
        if alone:
            return f"{spec.name} field {whole!r} is out of range {spec.low}-{spec.high}"
        return f"{spec.name} field {whole!r} has {int(value)}, which is out of range {spec.low}-{spec.high}"
    return None


def _term_problem(spec: _Spec, term: str, whole: str) -> str | None:
    """What is wrong with one comma-separated term (None if nothing), checked in cronsim's order."""
    alone = term == whole
    if term == "*":
        return None
    if spec.field == Field.DOW and "L" in term:
        if not term.endswith("L") or not term[:-1].isdigit():
            return (
                f"{spec.name} field {whole!r} is not valid: write nL for the last weekday n of the month, "
                "e.g. 5L for the last Friday"
            )
        return _value_problem(spec, term[:-1], whole, alone=False)
    if spec.field == Field.DOW and "#" in term:
        day, nth = term.split("#", 1)
        if not nth.isdigit() or not 1 <= int(nth) <= 5:
            return (
                f"{spec.name} field {whole!r} is not valid: write day#n with n from 1 to 5, "
                "e.g. 5#3 for the third Friday"
            )
        return _value_problem(spec, day, whole, alone=False)
    if "/" in term:
        base, step = term.split("/", 1)
        if not step.isdigit():
            return f"{spec.name} field {whole!r} has the step {step!r}, which is not a number"
        if int(step) == 0:
            return f"{spec.name} field {whole!r} has a step of 0: use a step of 1 or more"
        if int(step) > spec.max_step:
            return (
                f"{spec.name} field {whole!r} has a step of {int(step)}, larger than the field's range "
                f"{spec.low}-{spec.high}: use a step from 1 to {spec.max_step}"
            )
        if spec.field == Field.DAY and base in ("L", "LW"):
            return None
        return _term_problem(spec, base, whole)
    if "-" in term:
        start, end = term.split("-", 1)
        problem = _value_problem(spec, start, whole, alone=False) or _value_problem(
            spec, end, whole, alone=False
        )
        if problem is not None:
            return problem
        if _index(spec, end) < _index(spec, start):
            # Sunday is 0 to cronsim, so "MON-SUN" runs backwards; 7 is Sunday too, and ends a week.
            hint = (
                ", e.g. 1-7 for Monday to Sunday" if spec.field == Field.DOW and end in ("0", "SUN") else ""
            )
            backward = f"{spec.name} field {whole!r} has the backward range {term!r}"
            return f"{backward}: write the smaller end first{hint}"
        return None
    if spec.field == Field.DAY and term in ("L", "LW"):
        return None
    return _value_problem(spec, term, whole, alone)


def _index(spec: _Spec, value: str) -> int:
    return spec.names.index(value) + spec.name_base if value in spec.names else int(value)


def _field_problem(spec: _Spec, text: str) -> str | None:
    for term in text.split(","):
        if not term:
            return f"{spec.name} field {text!r} has an empty list item: remove the extra comma"
        problem = _term_problem(spec, term, text)
        if problem is not None:
            return problem
    return None


def _impossible_day(text: str, parts: list[str]) -> str | None:
    """cronsim's own check for "30 2"-like expressions, worded for a person."""
    day_part, month_part, dow_part = parts[-3:]
    if not (day_part.startswith("*") or dow_part.startswith("*")):
        # Day-of-month OR day-of-week: the weekday alone can make it fire.
        return None
    days = {d for d in Field.DAY.parse(day_part) if isinstance(d, int) and d > 0}
    months = sorted(m for m in Field.MONTH.parse(month_part) if isinstance(m, int))
    if len(days) != len(Field.DAY.parse(day_part)) or not days:
        return None
    first = min(days)
    if any(first <= _DAYS_IN_MONTH[m - 1] for m in months):
        return None
    names = [_MONTH_NAMES[m - 1] for m in months]
    verb = "has" if len(names) == 1 else "have"
    return (
        f"cron expression {text!r} can never fire: {_join(names)} {verb} no {_ordinal(first)} "
        "(L means the last day of the month)"
    )


@lru_cache(maxsize=512)
def _problem(text: str) -> str | None:
    """Why the normalized `text` is refused, or None. Cached: parse and the constructor both ask."""
    parts = text.split()
    for spec_field, part in zip(_FIVE if len(parts) == 5 else _SIX, parts, strict=True):
        problem = _field_problem(_SPECS[spec_field], part)
        if problem is not None:
            return problem
    try:
        impossible = _impossible_day(text, parts)
        if impossible is not None:
            return impossible
        sim = CronSim(text, _REFERENCE)
    except Exception:
        # cronsim is a third-party parser reading untrusted text: whatever it raises means "cannot read this".
        return f"cron expression {text!r} is not valid: check each field against 'man 5 crontab'"
    try:
        next(sim)
    except StopIteration:
        return (
            f"cron expression {text!r} can never fire: no date matches its day-of-month, month and "
            "day-of-week fields together"
        )
    except Exception:
        return f"cron expression {text!r} is not valid: check each field against 'man 5 crontab'"
    return None


@lru_cache(maxsize=4096)
def _stored_problem(text: str) -> str | None:
    """Why a stored text is not an expression as `parse` writes it (normalized and valid), or None."""
    try:
        normalized = _normalize(text, "cron")
    except Invalid as refusal:
        return refusal.message
    if normalized != text:
        # The walks read the text as stored, and cronsim reads no macros: only the written form is safe.
        return f"cron expression {text!r} is not in the form cronwright stores ({normalized!r})"
    return _problem(text)


# -- the zone's offset changes ----------------------------------------------------------------------


def _is_fixed_time(text: str) -> bool:
    """cronsim's (and cronie's) test for the DST fix-up: 5 fields, minute and hour not starting with '*'."""
    parts = text.split()
    return len(parts) == 5 and not parts[0].startswith("*") and not parts[1].startswith("*")


_WEEK = timedelta(days=7)
# More than any two offsets of one zone have ever differed (Apia and Kiritimati crossed the date line: 24 h
# and 24 h 40 min). It bounds how far a wall time can move between two pieces of a walk.
_WIDEST = timedelta(hours=26)


def _offset(instant: datetime, zone: ZoneInfo) -> timedelta:
    return instant.astimezone(zone).utcoffset() or timedelta(0)


@lru_cache(maxsize=4096)
def _changes(zone: ZoneInfo, year: int) -> tuple[datetime, ...]:
    """The instants in UTC year `year` at which `zone` changes offset (the first second of the new one)."""
    if not 1 < year < 9999:
        return ()
    # zoneinfo does not publish its transitions, so sample the offset weekly and bisect each change to the
    # second. A change undone within the same week would go unseen; no zone has had one in living memory.
    here = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC)
    before = _offset(here, zone)
    found: list[datetime] = []
    while here < end:
        step = min(here + _WEEK, end)
        after = _offset(step, zone)
        if after != before:
            low, high = here, step
            while high - low > _SECOND:
                mid = low + ((high - low) // _SECOND // 2) * _SECOND
                if _offset(mid, zone) == before:
                    low = mid
                else:
                    high = mid
            found.append(high)
        here, before = step, after
    return tuple(found)


def _next_change(zone: ZoneInfo, after: datetime, until: datetime) -> datetime | None:
    """The first offset change in (after, until]."""
    for year in range(after.year, until.year + 1):
        changes = _changes(zone, year)
        at = bisect_right(changes, after)
        if at < len(changes):
            return changes[at] if changes[at] <= until else None
    return None


def _last_change(zone: ZoneInfo, since: datetime, at_or_before: datetime) -> datetime | None:
    """The last offset change in (since, at_or_before]."""
    for year in range(at_or_before.year, since.year - 1, -1):
        changes = _changes(zone, year)
        at = bisect_right(changes, at_or_before)
        if at > 0:
            return changes[at - 1] if changes[at - 1] > since else None
    return None


def _whole_second_after(instant: datetime) -> datetime:
    return instant.replace(microsecond=0) + _SECOND


def _walls(sim: CronSim) -> Iterator[datetime]:
    """cronsim's walk, ending quietly where cronsim gives out (50 years) or the calendar does (year 9999)."""
    while True:
        try:
            wall = next(sim)
        except (StopIteration, OverflowError):
            return
        yield wall


# -- the expression ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CronExpression:
    """A valid, normalized cron expression. Build it with `CronExpression.parse`.

    Every method takes the instant to start from and the zone to read the expression in, and returns aware UTC
    datetimes. No walk looks further than `HORIZON` past its start.
    """

    text: str

    def __post_init__(self) -> None:
        # A direct build (say, from a stored row) gets the same checks as parse; the cache makes it cheap.
        if _normalize(self.text, "cron") != self.text:
            raise ValueError(
                f"CronExpression({self.text!r}) is not normalized: build it with CronExpression.parse"
            )
        problem = _problem(self.text)
        if problem is not None:
            raise Invalid("cron", problem)

    @classmethod
    def stored(cls, text: str) -> CronExpression:
        """An expression read back from a store, unchecked: a row written behind the service's back, or by
        an older release, must still load (and list) even if its text no longer parses; its walk is empty.
        """
        expression = object.__new__(cls)
        object.__setattr__(expression, "text", text)
        return expression

    def problem(self) -> str | None:
        """Why this expression cannot be walked, or None. Only one read back with `stored` can have one: a
        row edited behind the service's back. Its walks must not run (cronsim would raise), so the engine
        asks first. Cached per text, so listing many rows of few expressions costs a lookup each.
        """
        text: object = self.text
        if not isinstance(text, str):
            return f"the stored expression {reprlib.repr(text)} is not a string but a {type(text).__name__}"
        return _stored_problem(text)

    @classmethod
    def parse(cls, text: object, field: str = "cron") -> CronExpression:
        """Read `text` (5 or 6 fields, or a macro), or refuse it with `Invalid` naming `field`."""
        normalized = _normalize(text, field)
        problem = _problem(normalized)
        if problem is not None:
            raise Invalid(field, problem)
        return cls(normalized)

    def __str__(self) -> str:
        return self.text

    @property
    def fixed_time(self) -> bool:
        """True if cronie's DST fix-up applies: gap firings move after the gap, repeated hours fire once."""
        return _is_fixed_time(self.text)

    def explain(self) -> str:
        """cronsim's English for the expression, e.g. "At 03:00"."""
        try:
            return str(CronSim(self.text, _REFERENCE).explain())
        except Exception:
            # The explanation is a courtesy; a gap in cronsim's wording must not make a valid schedule fail.
            return f"cron expression {self.text}"

    # -- forward --------------------------------------------------------------------------------------

    def iter_after(self, after: datetime, zone: ZoneInfo) -> Iterator[datetime]:
        """The firings strictly after `after`, read in `zone`, as strictly increasing UTC instants.

        Ends when the expression has no firing in 50 years, past `HORIZON`, or at the end of the calendar.
        """
        start = as_utc(after)
        try:
            limit = start + HORIZON
        except OverflowError:
            limit = datetime.max.replace(tzinfo=UTC)
        walk = self._fixed_time_walk if self.fixed_time else self._real_time_walk
        for fired in walk(start, zone):
            if fired > limit:
                return
            yield fired

    def _fixed_time_walk(self, start: datetime, zone: ZoneInfo) -> Iterator[datetime]:
        # cronsim walks the wall clock here and applies cronie's fix-up itself: a wall time in a gap becomes
        # the first minute after it, and a repeated one its first copy.
        try:
            sim = CronSim(self.text, start.astimezone(zone))
        except OverflowError:
            return
        last = start
        skipped = 0
        while True:
            try:
                fired = next(sim).astimezone(UTC)
            except (StopIteration, OverflowError):
                return
            if fired <= last:
                # A first-copy wall time reached from a start in the second copy of a repeated hour: it fired
                # before `after` (see _MAX_SKIPPED).
                skipped += 1
                if skipped > _MAX_SKIPPED:
                    return
                continue
            skipped = 0
            last = fired
            yield fired

    def _real_time_walk(self, start: datetime, zone: ZoneInfo) -> Iterator[datetime]:
        """Every instant after `start` whose wall time in `zone` matches: both copies of a repeated hour, and
        nothing for wall times a gap skipped.

        cronsim can walk a zone itself, but it jumps up to an hour of real time at once and then re-reads
        the wall clock, which lands on the wrong minute across a change that is not a whole hour or not on
        the hour (Lord Howe's 30 minutes, Chatham's 02:45): it skips firings, or circles. So the walk is cut
        at each offset change, and each piece is walked on a naive wall clock at that piece's fixed offset,
        where cronsim's calendar arithmetic is exact.
        """
        since = _whole_second_after(start)  # firings fall on whole seconds
        while True:
            try:
                offset = _offset(since, zone)
                sim = CronSim(self.text, (since + offset).replace(tzinfo=None) - _SECOND)
            except OverflowError:
                return
            checked = since  # no offset change in (since, checked]
            for wall in _walls(sim):
                try:
                    fired = (wall - offset).replace(tzinfo=UTC)
                except OverflowError:
                    return
                change = _next_change(zone, checked, fired) if fired > checked else None
                if change is not None:
                    break
                checked = fired
                yield fired
                since = fired + _SECOND
            else:
                return  # the naive walk gave out: no wall time matches within 50 years
            # Nothing fires in [since, change). Any firing in a later piece lies before since + _WIDEST or
            # at or after fired - _WIDEST: read at this piece's offset, its wall time would have been found.
            since = change if change < since + _WIDEST else max(change, fired - _WIDEST)

    def next_after(self, after: datetime, zone: ZoneInfo) -> datetime | None:
        """The first firing strictly after `after`, in UTC; None if there is none within the walk's reach."""
        return next(self.iter_after(after, zone), None)

    def next_before(self, after: datetime, end: datetime | None, zone: ZoneInfo) -> datetime | None:
        """`next_after`, or None if that firing is at or after `end` (a schedule never fires at its end)."""
        fired = self.next_after(after, zone)
        if fired is None or (end is not None and fired >= as_utc(end)):
            return None
        return fired

    def count_between(self, start: datetime, end: datetime, zone: ZoneInfo, cap: int = 1000) -> int:
        """How many firings lie in [start, end], counting no further than `cap` (and `HORIZON` past start)."""
        if cap < 0:
            raise ValueError(f"cap must be 0 or more, not {cap}")
        stop = as_utc(end)
        count = 0
        if cap == 0:
            return 0
        for fired in self.iter_after(as_utc(start) - _MICRO, zone):
            if fired > stop:
                break
            count += 1
            if count >= cap:
                break
        return count

    # -- backward -------------------------------------------------------------------------------------

    def latest_at_or_before(self, instant: datetime, not_before: datetime, zone: ZoneInfo) -> datetime | None:
        """The latest firing in [not_before, instant], in UTC, or None: the one missed run worth catching up.

        It agrees with the forward walk: it is the last firing `iter_after` would give in that span.
        """
        end = as_utc(instant)
        start = as_utc(not_before)
        if start > end:
            return None
        if self.fixed_time:
            return self._fixed_time_latest(end, start, zone)
        return self._real_time_latest(end, start, zone)

    def _real_time_latest(self, end: datetime, start: datetime, zone: ZoneInfo) -> datetime | None:
        # The forward real-time walk run backwards: pieces of fixed offset, walked on a naive wall clock.
        until = end.replace(microsecond=0)
        while until >= start:
            try:
                offset = _offset(until, zone)
                # cronsim steps back one second before looking, so start one second late to include `until`.
                sim = CronSim(self.text, (until + offset).replace(tzinfo=None) + _SECOND, reverse=True)
                fired = (next(sim) - offset).replace(tzinfo=UTC)
            except (StopIteration, OverflowError):
                return None
            change = _last_change(zone, fired, until)
            if change is None:
                return fired if fired >= start else None
            # Nothing fires in [change, until]. Any firing in an earlier piece lies after until - _WIDEST or
            # at or before fired + _WIDEST (the mirror of the forward walk's reasoning).
            before_change = change - _SECOND
            until = before_change if change > until - _WIDEST else min(before_change, fired + _WIDEST)
        return None

    def _first_at_or_after(self, instant: datetime, zone: ZoneInfo) -> datetime | None:
        return self.next_after(instant - _MICRO, zone)

    def _fixed_time_latest(self, end: datetime, start: datetime, zone: ZoneInfo) -> datetime | None:
        # cronsim's reverse walk proposes, and the forward walk (the definition of a firing) confirms. Where
        # they disagree, in a repeated hour, an exact search over the forward walk decides.
        candidate = self._reverse_candidate(end, zone)
        if candidate is not None and start <= candidate <= end:
            if self._first_at_or_after(candidate, zone) == candidate:
                following = self.next_after(candidate, zone)
                if following is None or following > end:
                    return candidate
        else:
            first = self._first_at_or_after(start, zone)
            if first is None or first > end:
                return None
        return self._latest_by_search(end, start, zone)

    def _reverse_candidate(self, end: datetime, zone: ZoneInfo) -> datetime | None:
        # Firings fall on whole seconds: starting one second past `end` (rounded down) lets `end` count.
        try:
            since = _whole_second_after(end).astimezone(zone)
            return next(CronSim(self.text, since, reverse=True)).astimezone(UTC)
        except (StopIteration, OverflowError):
            return None

    def _latest_by_search(self, end: datetime, start: datetime, zone: ZoneInfo) -> datetime | None:
        """The latest forward firing in [start, end], found with O(log(end - start)) forward walks."""

        def some_in(since: datetime) -> bool:
            found = self._first_at_or_after(since, zone)
            return found is not None and found <= end

        if not some_in(start):
            return None
        # Widen a window back from `end` until it holds a firing, then narrow its left edge to the last second
        # that still has one after it. Firings fall on whole seconds, so that second is the latest firing.
        width = _SECOND
        while not some_in(max(end - width, start)):
            width *= 2
        low = max(end - width, start)
        low_s = -((_EPOCH - low) // _SECOND)  # round up: firings are on whole seconds
        high_s = (end - _EPOCH) // _SECOND + 1  # nothing lies in [high, end]
        while high_s - low_s > 1:
            mid = (low_s + high_s) // 2
            if some_in(_EPOCH + mid * _SECOND):
                low_s = mid
            else:
                high_s = mid
        return self._first_at_or_after(max(_EPOCH + low_s * _SECOND, start), zone)
