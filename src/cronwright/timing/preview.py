"""The next firings of a cron expression, as `preview` shows them: pure, so every front can share it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from itertools import islice
from zoneinfo import ZoneInfo

from cronwright.errors import Invalid
from cronwright.timing.cron_set import CronSet
from cronwright.timing.iso import as_utc, render
from cronwright.timing.zones import zone as named_zone

MAX_COUNT = 1000


def preview(
    expression: object,
    zone_name: str | None,
    after: datetime,
    count: int,
    default_zone: ZoneInfo,
    exclusion: Callable[[datetime, ZoneInfo], str | None] | None = None,
) -> dict[str, object]:
    """{"expression", "explanation", "tz", "firings"}: the next `count` firings after `after`, in the zone.

    The firings are rendered in the zone to the second. There may be fewer than `count` if the expression
    stops firing within the walk's reach (see cron.HORIZON). With `exclusion` (why a calendar takes an
    instant out, read in the zone), the reply adds `excluded`: those of the firings it takes out, and why.
    """
    # bool is an int to Python, but `count: true` is a mistake, not a 1.
    if not isinstance(count, int) or isinstance(count, bool):
        raise Invalid(
            "count", f"count must be a whole number from 1 to {MAX_COUNT}, not {type(count).__name__}"
        )
    if not 1 <= count <= MAX_COUNT:
        raise Invalid("count", f"count {count} is out of range: ask for 1 to {MAX_COUNT} firings")
    cron = CronSet.parse(expression, field="expression")
    zone = default_zone if zone_name is None else named_zone(zone_name, field="tz")
    instants = list(islice(cron.iter_after(as_utc(after), zone), count))
    shown: dict[str, object] = {
        "expression": cron.shown,
        "explanation": cron.explain(),
        "tz": str(zone),
        "firings": [render(fired, zone) for fired in instants],
    }
    if exclusion is not None:
        reasons = ((fired, exclusion(fired, zone)) for fired in instants)
        shown["excluded"] = [{"at": render(fired, zone), "reason": why} for fired, why in reasons if why]
    return shown
