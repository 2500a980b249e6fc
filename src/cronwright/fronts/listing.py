"""`cronwright list` as text that fits the terminal, like `systemctl list-timers` but never wider than asked.

The richest layout that fits the width wins (FORMS): first every column with full ISO-8601 instants; then
instants in a compact local form; then LEFT in one unit, and the least needed columns left out (RUNS, then
ENDS, then LAST), which the footer names. No instant is ever cut: a compact instant leaves out only what it
shares with now in the node zone (the date when it is today, the year when it is this year, the offset when it
is now's offset, the seconds when they are zero), so it still names exactly one instant. Only names and
schedules, which are not instants, are shortened with "…", and only when nothing else is left to drop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.fronts.render import relative, visible

HEADERS = ("NAME", "RUNS", "SCHEDULE", "NEXT", "LEFT", "LAST", "RESULT", "ENDS", "STATE")
GAP = "  "
SHORTENED = ("NAME", "SCHEDULE")  # the last resort, longest first: text, never an instant

# States whose schedule fires nothing until an operator (or its source) acts: resume, approve.
HELD = frozenset({"paused", "pending"})


@dataclass(frozen=True, slots=True)
class Listing:
    lines: list[str]
    notes: list[str]


def compact(instant: str, now: datetime, zone: ZoneInfo) -> str:
    """An ISO instant as local wall time, leaving out what it shares with now: '10:00', '03-03 07:30',
    '05-31 09:00+02', '2027-01-04 07:00:30'."""
    at = datetime.fromisoformat(instant).astimezone(zone)
    here = now.astimezone(zone)
    clock = at.strftime("%H:%M:%S" if at.second else "%H:%M")
    if at.date() == here.date():
        text = clock
    elif at.year == here.year:
        text = f"{at:%m-%d} {clock}"
    else:
        text = f"{at:%Y-%m-%d} {clock}"
    offset = at.utcoffset()
    if offset != here.utcoffset():
        text += _offset(offset or timedelta(0))
    return text


def _offset(offset: timedelta) -> str:
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(offset) // timedelta(minutes=1)
    hours, minutes = divmod(minutes, 60)
    return f"{sign}{hours:02d}" + (f":{minutes:02d}" if minutes else "")


def schedule_cell(schedule: Mapping[str, Any], now: datetime, zone: ZoneInfo, short: bool) -> str:
    """The schedule; short, a cron zone only when it is not the node's (its last part), an `at` compact."""
    if "cron" in schedule:
        expressions = schedule["cron"]
        text = " | ".join(expressions) if isinstance(expressions, list) else str(expressions)
        tz = schedule.get("tz", "")
        if not short:
            return f"cron '{text}' {tz}".rstrip()
        return text if tz in ("", zone.key) else f"{text} ({tz.rsplit('/', 1)[-1]})"
    if "every" in schedule:
        return f"every {schedule['every']}"
    at = schedule.get("at")
    return f"at {compact(at, now, zone) if short and isinstance(at, str) else at}"


@dataclass(frozen=True, slots=True)
class _Form:
    short: bool  # compact instants instead of ISO-8601
    units: int  # of LEFT: 'in 16h 29m' or 'in 16h'
    dropped: tuple[str, ...] = ()


# From the richest to the leanest; the first that fits wins.
FORMS = (
    _Form(short=False, units=2),
    _Form(short=True, units=2),
    _Form(short=True, units=2, dropped=("RUNS",)),
    _Form(short=True, units=1, dropped=("RUNS",)),
    _Form(short=True, units=1, dropped=("RUNS", "ENDS")),
    _Form(short=True, units=1, dropped=("RUNS", "ENDS", "LAST")),
)
BREAKER = "*"
NOTE_WIDTH = 40  # the most of a pause note the list shows; `show` shows it whole


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def cells(row: Mapping[str, Any], now: datetime, zone: ZoneInfo, form: _Form) -> dict[str, str]:
    last = row.get("last_run") or {}
    result = last.get("outcome", "-")
    state = row["state"]
    if row.get("paused_by") == "breaker":
        if form.short:
            state += BREAKER
        else:
            result = f"{result} (breaker)"
    elif row.get("pause_note") and not form.short:
        state += f" ({_clip(visible(row['pause_note']), NOTE_WIDTH)})"  # why it was paused: --wide, or a pipe

    def instant(value: str | None) -> str:
        if value is None:
            return "-"
        return compact(value, now, zone) if form.short else value

    # A paused or pending schedule fires nothing: its timetable's next instant is no firing to count down.
    next_run_at = None if row["state"] in HELD else row.get("next_run_at")
    return {
        "NAME": row["name"],
        "RUNS": f"{row['target']}.{row['action']}",
        "SCHEDULE": schedule_cell(row["schedule"], now, zone, form.short),
        "NEXT": instant(next_run_at),
        "LEFT": relative(next_run_at, now, form.units),
        "LAST": instant(last.get("fired_at")),
        "RESULT": result,
        "ENDS": instant(row.get("ends_at")),
        "STATE": state,
    }


def lay_out(rows: Sequence[Mapping[str, Any]], now: datetime, zone: ZoneInfo, width: int | None) -> Listing:
    """The table's lines for at most `width` columns (None: as wide as it takes, every instant in full)."""
    for form in FORMS:
        headers = [header for header in HEADERS if header not in form.dropped]
        table = [cells(row, now, zone, form) for row in rows]
        if width is None or _width(headers, table) <= width:
            break
    else:
        assert width is not None  # None fits the first form
        table = _shorten(headers, table, width)
    notes = []
    if form.short:
        notes.append(f"Times: {zone.key}, {_now_offset(now, zone)} unless marked; --wide for ISO-8601.")
    if any(cell["STATE"].endswith(BREAKER) for cell in table):
        notes.append(f"{BREAKER} paused by the breaker: `show NAME` says why.")
    if form.dropped:
        notes.append(f"Left out to fit {width} columns: {', '.join(form.dropped)} (--wide shows them).")
    return Listing(_lines(headers, table), notes)


def _now_offset(now: datetime, zone: ZoneInfo) -> str:
    offset = now.astimezone(zone).utcoffset() or timedelta(0)
    return "UTC" + _offset(offset) if offset else "UTC"


def _shorten(headers: Sequence[str], rows: list[dict[str, str]], width: int) -> list[dict[str, str]]:
    """Cuts the longest NAME or SCHEDULE cells (never an instant) with '…' until the table fits, if it can."""
    rows = [dict(row) for row in rows]
    while _width(headers, rows) > width:
        column = max(SHORTENED, key=lambda name: _column_width(name, rows))
        size = _column_width(column, rows)
        if size <= max(len(column), 8):
            break  # nothing left worth cutting: a narrower terminal wraps
        for row in rows:
            if len(row[column]) >= size:
                row[column] = _cut(row[column], size - 1)
    return rows


# The zone marker a short schedule ends with, "(Buenos_Aires)": what the footer's "unless marked" means.
_MARKER = re.compile(r" \([^()]+\)$")


def _cut(cell: str, size: int) -> str:
    """`cell` in `size` characters, ending in "…" where it was cut; a schedule's zone marker is kept
    whole, and its expression cut instead: without it, its times would read as the node zone's."""
    marker = _MARKER.search(cell)
    kept = marker.group() if marker else ""
    text = cell[: len(cell) - len(kept)]
    room = max(size - len(kept) - 1, 1)
    return text[:room] + "…" + kept


def _column_width(header: str, rows: Sequence[Mapping[str, str]]) -> int:
    return max(len(header), *(len(row[header]) for row in rows)) if rows else len(header)


def _width(headers: Sequence[str], rows: Sequence[Mapping[str, str]]) -> int:
    return sum(_column_width(header, rows) for header in headers) + len(GAP) * (len(headers) - 1)


def _lines(headers: Sequence[str], rows: Sequence[Mapping[str, str]]) -> list[str]:
    widths = [_column_width(header, rows) for header in headers]
    table = [list(headers), *([row[header] for header in headers] for row in rows)]
    return [GAP.join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in table]
