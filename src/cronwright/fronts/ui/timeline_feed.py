"""The timeline's lanes, from protocol replies only: what the caller's `list`, `get` and `preview` answer.

`get` answers a schedule's next five occurrences (jittered `at`, `nominal`, and why a calendar excludes
one); the window needs more, so the walk goes on from the fifth with the same pure functions the engine
fires by (the timetable's next nominal instant, and its jitter fixed by the job's id and that instant),
and stops at the schedule's end. The dates its calendars exclude come from `preview` with its `exclude`:
a daily expression at noon in the schedule's zone, one firing a date, each excluded one with its reason.
So the timeline shows nothing the protocol would not answer this caller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.core.model import CronSchedule, EverySchedule, Schedule
from cronwright.core.timetable import fires_at, following
from cronwright.errors import CronwrightError
from cronwright.fronts.ui.timeline import Firing, Lane, Window, excluded_days
from cronwright.timing.cron_set import CronSet
from cronwright.timing.iso import as_utc, parse_instant
from cronwright.timing.jitter import parse_jitter

Reply = dict[str, Any]
# The protocol, asked as the caller: ask(action, **fields) -> its reply.
Ask = Callable[..., Awaitable[Reply]]

# The most occurrences a lane walks: more than the drawing marks one by one (it draws a band instead).
CAP = 400


async def lanes(
    ask: Ask, rows: Sequence[Mapping[str, Any]], window: Window, node_zone: ZoneInfo
) -> list[Lane]:
    """One lane for each of `rows` (the caller's `list` rows) that fires or is excluded within `window`."""
    found: list[Lane] = []
    reasons: dict[tuple[str, tuple[str, ...]], dict[date, str]] = {}
    for row in rows:
        if row.get("next_run_at") is None or row.get("state") not in ("active", "running"):
            continue
        if as_utc(parse_instant(row["next_run_at"], node_zone)) >= window.end:
            continue
        lane = await _lane(ask, row, window, node_zone, reasons)
        if lane is not None:
            found.append(lane)
    return found


async def _lane(
    ask: Ask,
    row: Mapping[str, Any],
    window: Window,
    node_zone: ZoneInfo,
    reasons: dict[tuple[str, tuple[str, ...]], dict[date, str]],
) -> Lane | None:
    reply = await ask("get", job_id=row["id"])
    if not reply.get("ok"):
        return None  # gone since the list, or no longer the caller's
    shown = row["schedule"]
    zone_name = shown.get("tz") if isinstance(shown.get("tz"), str) else node_zone.key
    zone = ZoneInfo(zone_name)
    names = tuple(str(name) for name in shown.get("exclude") or ())
    day_reasons: dict[date, str] = {}
    if names:
        key = (zone_name, names)
        if key not in reasons:
            reasons[key] = await _excluded_dates(ask, zone_name, names, window, zone)
        day_reasons = reasons[key]
    firings = _walk(row, reply.get("next_firings") or [], window, node_zone, zone, day_reasons)
    days = excluded_days(window, zone, day_reasons.get)
    if not firings and not days:
        return None
    return Lane(
        name=row["name"],
        zone=zone_name,
        firings=tuple(firings),
        excluded_days=days,
        truncated=len(firings) >= CAP,
    )


async def _excluded_dates(
    ask: Ask, zone_name: str, names: tuple[str, ...], window: Window, zone: ZoneInfo
) -> dict[date, str]:
    """The dates of the window (read in `zone`) that the calendars `names` exclude, with the reason."""
    first = window.start.astimezone(zone).date() - timedelta(days=1)
    count = (window.end.astimezone(zone).date() - first).days + 1
    reply = await ask(
        "preview",
        expression="0 12 * * *",
        tz=zone_name,
        after=f"{first}T12:00",
        count=count,
        exclude=list(names),
    )
    if not reply.get("ok"):
        return {}
    return {
        datetime.fromisoformat(item["at"]).date(): str(item["reason"]) for item in reply.get("excluded") or ()
    }


def _walk(
    row: Mapping[str, Any],
    given: Sequence[Mapping[str, Any]],
    window: Window,
    node_zone: ZoneInfo,
    zone: ZoneInfo,
    day_reasons: Mapping[date, str],
) -> list[Firing]:
    """`get`'s next firings, then the timetable's walk from the last of them, to the window's end."""
    firings = [
        Firing(
            as_utc(parse_instant(item["at"], node_zone)),
            as_utc(parse_instant(item["nominal"], node_zone)),
            item.get("excluded"),
        )
        for item in given
    ]
    schedule = _schedule(row["schedule"])
    ends_at = as_utc(parse_instant(row["ends_at"], node_zone))
    if schedule is not None and firings and len(given) >= 5:
        nominal = firings[-1].nominal
        while len(firings) < CAP:
            upcoming = following(schedule, nominal)
            if upcoming is None or upcoming <= nominal or upcoming >= window.end:
                break
            # To the second, as the protocol renders get's own firings.
            at = fires_at(row["id"], schedule, upcoming).replace(microsecond=0)
            if at >= ends_at:
                break
            why = day_reasons.get(as_utc(upcoming).astimezone(zone).date())
            firings.append(Firing(at, upcoming, why))
            nominal = upcoming
    return [firing for firing in firings if firing.nominal < window.end and firing.at >= window.start]


def _schedule(shown: Mapping[str, Any]) -> Schedule | None:
    """The row's timing as a value object, for the walk (its calendars are asked by `preview`)."""
    try:
        jitter = None if shown.get("jitter") is None else parse_jitter(shown["jitter"])
        if shown.get("cron") is not None:
            return CronSchedule(CronSet.parse(shown["cron"]), str(shown.get("tz")), jitter)
        if isinstance(shown.get("every_ms"), int):
            return EverySchedule(timedelta(milliseconds=shown["every_ms"]), jitter)
    except CronwrightError:
        return None
    return None
