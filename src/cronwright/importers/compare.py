"""`--compare`: for each mapped entry, the firings its source system would make and cronwright's, side by
side over the next year, and every instant where they differ.

The two walks are independent. cronwright's is its own timetable (timing/, cronsim: cronie's rules). The
source's is the reading its `Reading` names: `cron` is croniter's (an independent cron implementation, for
crontab, Kubernetes and Celery's crontab), `oncalendar` the oncalendar library's reading of systemd's
OnCalendar=, `trigger` APScheduler's own trigger object. Intervals are not compared: their phase depends on
when each side started them. Jitter is left out of both: the nominal instants are compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import islice
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.importers.outcome import Entry
from cronwright.timing.cron_set import CronSet
from cronwright.timing.iso import as_utc, parse_instant, render
from cronwright.timing.zones import zone as named_zone

HORIZON = timedelta(days=366)
MOST = 5000  # firings walked on each side: a year of an hourly job, several days of a minutely one
SHOWN = 5  # the next firings printed for each entry
LISTED = 50  # differing instants listed for each entry (all are counted)


def compare(entry: Entry, after: datetime, node_zone: ZoneInfo) -> dict[str, Any]:
    """{"where", "name", "reading", "zone", "next": [ISO...], "differ": [{"at", "source", "cronwright"}],
    "differences": N} or, when no comparison is made, {"where", "name", "reading": "none", "why"}."""
    assert entry.seed is not None and entry.reading is not None
    seed, reading = entry.seed, entry.reading
    schedule = seed.get("schedule") or {}
    zone = (
        named_zone(schedule.get("tz") or reading.zone) if (schedule.get("tz") or reading.zone) else node_zone
    )
    head = {"where": entry.where, "name": seed["name"]}
    if reading.kind == "none":
        return {**head, "reading": "none", "why": reading.why}
    end = as_utc(after) + HORIZON
    ours = _bounded(_cronwright(seed, after, zone, node_zone), end)
    theirs = _bounded(_source(reading, after, zone), end)
    mine, other = set(ours), set(theirs)
    differ = sorted(mine ^ other)
    return {
        **head,
        "reading": reading.kind,
        "zone": zone.key,
        "next": [render(instant, zone) for instant in ours[:SHOWN]],
        "differences": len(differ),
        "differ": [
            {"at": render(instant, zone), "source": instant in other, "cronwright": instant in mine}
            for instant in differ[:LISTED]
        ],
    }


def _bounded(walk: Iterator[datetime], end: datetime) -> list[datetime]:
    found = []
    for instant in islice(walk, MOST):
        instant = as_utc(instant)
        if instant >= end:
            break
        found.append(instant)
    return found


def _cronwright(seed: Any, after: datetime, zone: ZoneInfo, node_zone: ZoneInfo) -> Iterator[datetime]:
    if "run_at" in seed:
        instant = parse_instant(seed["run_at"], node_zone, "run_at")
        return iter([instant] if instant > after else [])
    return CronSet.parse(seed["schedule"]["cron"]).iter_after(as_utc(after), zone)


def _source(reading: Any, after: datetime, zone: ZoneInfo) -> Iterator[datetime]:
    start = after.astimezone(zone)
    if reading.kind == "cron":
        return _croniter(reading.expressions, start)
    if reading.kind == "oncalendar":
        import oncalendar

        return iter(oncalendar.OnCalendar("\n".join(reading.expressions), start))
    return _trigger(reading.trigger, start)


def _croniter(expressions: tuple[str, ...], start: datetime) -> Iterator[datetime]:
    from croniter import croniter

    walks = [croniter(text, start) for text in expressions]
    pending = [walk.get_next(datetime) for walk in walks]
    last = None
    while True:
        index = min(range(len(walks)), key=lambda i: as_utc(pending[i]))
        instant = pending[index]
        pending[index] = walks[index].get_next(datetime)
        if last is None or as_utc(instant) != as_utc(last):
            last = instant
            yield instant


def _trigger(trigger: Any, start: datetime) -> Iterator[datetime]:
    previous = None
    now = start + timedelta(microseconds=1)
    while True:
        instant = trigger.get_next_fire_time(previous, now)
        if instant is None:
            return
        yield instant
        previous, now = instant, instant + timedelta(seconds=1)
