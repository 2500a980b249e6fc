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

`CronExpression` adds what a service needs around that, in three modules: cron_parse.py (refusals that say
what to fix, a refusal for expressions that can never fire, the explanation), cron_forward.py (the walk
forward, bounded, in UTC) and cron_backward.py (a latest-firing search that agrees with the forward walk).
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from cronsim import CronSim

from cronwright.errors import Invalid
from cronwright.timing import cron_backward, cron_forward
from cronwright.timing.cron_forward import _MICRO, HORIZON
from cronwright.timing.cron_parse import (
    _REFERENCE,
    MACROS,
    MAX_TEXT,
    _is_fixed_time,
    _normalize,
    _ordinal,
    _problem,
    _stored_problem,
)
from cronwright.timing.iso import as_utc

__all__ = ["HORIZON", "MACROS", "MAX_TEXT", "CronExpression"]

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
        """cronsim's English for the expression, e.g. "At 03:00", with its ordinals mended ("the 21st day",
        not cronsim's "21th") and each weekday named once (day-of-week 7 is Sunday, as 0 is)."""
        try:
            said = str(CronSim(_one_sunday(self.text), _REFERENCE).explain())
            return _ORDINAL.sub(lambda found: _ordinal(int(found.group(1))), said)
        except Exception:
            # The explanation is a courtesy; a gap in cronsim's wording must not make a valid schedule fail.
            return f"cron expression {self.text}"

    # -- forward (cron_forward.py) ---------------------------------------------------------------------

    def iter_after(self, after: datetime, zone: ZoneInfo) -> Iterator[datetime]:
        """The firings strictly after `after`, read in `zone`, as strictly increasing UTC instants.

        Ends when the expression has no firing in 50 years, past `HORIZON`, or at the end of the calendar.
        """
        return cron_forward.iter_after(self.text, after, zone)

    def next_after(self, after: datetime, zone: ZoneInfo) -> datetime | None:
        """The first firing strictly after `after`, in UTC; None if there is none within the walk's reach."""
        return cron_forward.next_after(self.text, after, zone)

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

    # -- backward (cron_backward.py) -------------------------------------------------------------------

    def latest_at_or_before(self, instant: datetime, not_before: datetime, zone: ZoneInfo) -> datetime | None:
        """The latest firing in [not_before, instant], in UTC, or None: the one missed run worth catching up.

        It agrees with the forward walk: it is the last firing `iter_after` would give in that span.
        """
        return cron_backward.latest_at_or_before(self.text, instant, not_before, zone)


_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")


def _one_sunday(text: str) -> str:
    """`text` with a day-of-week list item 7 written 0 and each item once, for the explanation only:
    cronsim says "on Sunday and Sunday" for `0,7`. Ranges (`5-7`) and steps are left as they are."""
    fields = text.split()
    if len(fields) not in (5, 6):
        return text
    items = ["0" if item == "7" else item for item in fields[-1].split(",")]
    fields[-1] = ",".join(dict.fromkeys(items))
    return " ".join(fields)
