"""Several cron expressions as one timetable: the union of their instants, each instant once (semantic 31).

Each expression keeps its own reading of DST (see cron.py): a fixed-time expression fires once in a repeated
hour and after a gap, a wildcard-hour one in both copies of a repeated hour. The union only merges the walks,
so an instant two expressions share (09:00 on a day both name) fires once, and the set's walk agrees with
each member's walk everywhere else.

A one-expression set behaves exactly like that expression: the engine can always walk a set.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from cronwright.errors import Invalid
from cronwright.timing.cron import CronExpression
from cronwright.timing.iso import as_utc

# Enough for any real timetable (weekday mornings, Saturday noon, month ends...), and a bound on the work of
# one merge step, which reads one firing of every member.
MAX_EXPRESSIONS = 20
_MICRO = timedelta(microseconds=1)


def _dedupe(walk: Iterable[datetime]) -> Iterator[datetime]:
    last: datetime | None = None
    for fired in walk:
        if fired != last:
            last = fired
            yield fired


@dataclass(frozen=True, slots=True)
class CronSet:
    """One or more valid cron expressions, in the order given, without repeats (by normalized text)."""

    expressions: tuple[CronExpression, ...]

    def __post_init__(self) -> None:
        if not self.expressions:
            raise ValueError("a CronSet needs at least one expression")

    @classmethod
    def parse(cls, value: object, field: str = "cron") -> CronSet:
        """Read one expression (a string) or several (a list of strings), or refuse with `Invalid`.

        Each member is refused on its own terms, naming its place ("cron[1]"); two members that normalize
        to the same text are kept once, since they mean the same instants.
        """
        if isinstance(value, str):
            return cls((CronExpression.parse(value, field),))
        if not isinstance(value, list | tuple):
            raise Invalid(
                field,
                f"{field} must be a cron expression such as '0 9 * * 1-5', or a list of them, "
                f"not {type(value).__name__}",
            )
        if not value:
            raise Invalid(field, f"{field} is an empty list: give at least one cron expression")
        if len(value) > MAX_EXPRESSIONS:
            raise Invalid(field, f"{field} lists {len(value)} expressions: give at most {MAX_EXPRESSIONS}")
        parsed: dict[str, CronExpression] = {}
        for index, text in enumerate(value):
            expression = CronExpression.parse(text, f"{field}[{index}]")
            parsed.setdefault(expression.text, expression)
        return cls(tuple(parsed.values()))

    @classmethod
    def stored(cls, texts: object) -> CronSet:
        """A set read back from a store, unchecked (see CronExpression.stored); ask `problem` first.

        One text or a non-empty list of them; anything else (a row edited behind the service's back)
        is kept as one expression whose `problem` says what it is, so the row still loads and lists.
        """
        if isinstance(texts, list | tuple) and texts:
            return cls(tuple(CronExpression.stored(text) for text in texts))
        return cls((CronExpression.stored(texts),))  # type: ignore[arg-type]

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(expression.text for expression in self.expressions)

    @property
    def shown(self) -> str | list[str]:
        """The form a row shows and a request takes: the text for one expression, a list for several."""
        texts = self.texts
        return texts[0] if len(texts) == 1 else list(texts)

    def __str__(self) -> str:
        return ", ".join(self.texts)

    def problem(self) -> str | None:
        """Why some member cannot be walked (a stored row edited behind the service's back), or None."""
        for expression in self.expressions:
            problem = expression.problem()
            if problem is not None:
                return problem
        return None

    def explain(self) -> str:
        """Each member's English, joined: "At 09:00, Monday through Friday; or at 12:00, only on Saturday"."""
        words = [expression.explain() for expression in self.expressions]
        if len(words) == 1:
            return words[0]
        return "; or ".join([words[0], *(word[:1].lower() + word[1:] for word in words[1:])])

    # -- forward --------------------------------------------------------------------------------------

    def iter_after(self, after: datetime, zone: ZoneInfo) -> Iterator[datetime]:
        """The union's firings strictly after `after`, strictly increasing, each instant once."""
        if len(self.expressions) == 1:
            return self.expressions[0].iter_after(after, zone)
        walks = [expression.iter_after(after, zone) for expression in self.expressions]
        return _dedupe(heapq.merge(*walks))

    def next_after(self, after: datetime, zone: ZoneInfo) -> datetime | None:
        """The first firing of any member strictly after `after`, in UTC; None if no member fires again."""
        firsts = [expression.next_after(after, zone) for expression in self.expressions]
        found = [fired for fired in firsts if fired is not None]
        return min(found) if found else None

    def next_before(self, after: datetime, end: datetime | None, zone: ZoneInfo) -> datetime | None:
        """`next_after`, or None if that firing is at or after `end`."""
        fired = self.next_after(after, zone)
        if fired is None or (end is not None and fired >= as_utc(end)):
            return None
        return fired

    def between(self, start: datetime, end: datetime, zone: ZoneInfo, cap: int) -> list[datetime]:
        """The firings in [start, end), oldest first, at most `cap` of them."""
        stop = as_utc(end)
        walk = self.iter_after(as_utc(start) - _MICRO, zone)
        return list(islice(_until(walk, stop), max(cap, 0)))

    def count_between(self, start: datetime, end: datetime, zone: ZoneInfo, cap: int = 1000) -> int:
        """How many distinct firings lie in [start, end], counting no further than `cap`."""
        if len(self.expressions) == 1:
            return self.expressions[0].count_between(start, end, zone, cap)
        if cap < 0:
            raise ValueError(f"cap must be 0 or more, not {cap}")
        # [start, end] is [start, end + 1µs): instants are whole microseconds.
        return len(self.between(start, as_utc(end) + _MICRO, zone, cap))

    # -- backward -------------------------------------------------------------------------------------

    def latest_at_or_before(self, instant: datetime, not_before: datetime, zone: ZoneInfo) -> datetime | None:
        """The latest firing of any member in [not_before, instant], or None."""
        latest = [
            expression.latest_at_or_before(instant, not_before, zone) for expression in self.expressions
        ]
        found = [fired for fired in latest if fired is not None]
        return max(found) if found else None


def _until(walk: Iterator[datetime], stop: datetime) -> Iterator[datetime]:
    for fired in walk:
        if fired >= stop:
            return
        yield fired
