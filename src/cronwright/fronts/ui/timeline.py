"""The coming firings of many schedules on one timeline, as server-rendered SVG and as a table.

Pure: the caller gives the window, the lanes (one a schedule: its firings, jittered and nominal, those a
calendar excludes, and the dates its calendars take out) and the zones' offset changes (`transitions`
computes them from zoneinfo). The SVG has a `<title>` on every mark, a DST change is a labelled line across
the lanes, an excluded date is a shaded band, an excluded occurrence a cross. Every text is escaped here.
The table says the same in words, for screen readers and for a page read without images.

No inline style (a strict Content Security Policy forbids it): presentation attributes, and classes the
dashboard's stylesheet may restyle (.cw-firing, .cw-nominal, .cw-excluded, .cw-excluded-day, .cw-dst).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from cronwright.fronts.render import counted
from cronwright.fronts.ui.svg import esc
from cronwright.timing.iso import render

# Geometry, in the SVG's own units (it scales to the page's width).
WIDTH = 1000
LABEL = 220  # the lane names' column
TOP = 44  # the axis and the DST labels
LANE = 30
PLOT = WIDTH - LABEL - 10
# A lane with more firings than this in the window is drawn as one band (a mark each would be a smear).
MAX_MARKS = 300
# The table lists this many firings a lane, then says how many more.
TABLE_ROWS = 12


@dataclass(frozen=True, slots=True)
class Window:
    """[start, end), aware instants."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None or self.end <= self.start:
            raise ValueError("a window is two aware instants, the end after the start")

    def holds(self, instant: datetime) -> bool:
        return self.start <= instant < self.end

    def x(self, instant: datetime) -> float:
        """Where `instant` is drawn, clamped to the plot."""
        share = (instant - self.start) / (self.end - self.start)
        return round(LABEL + PLOT * min(1.0, max(0.0, share)), 2)


@dataclass(frozen=True, slots=True)
class Firing:
    """One occurrence: `at` when it fires (jitter included), `nominal` its timetable instant, and why a
    calendar excludes it (it will not fire), if one does."""

    at: datetime
    nominal: datetime
    excluded: str | None = None


@dataclass(frozen=True, slots=True)
class ExcludedDay:
    """A date a schedule's calendars take out, as the instants [start, end) of that date in its zone."""

    start: datetime
    end: datetime
    reason: str


@dataclass(frozen=True, slots=True)
class Lane:
    name: str
    zone: str
    firings: tuple[Firing, ...]
    excluded_days: tuple[ExcludedDay, ...] = ()
    # Where the lane's name links to (the schedule's page), if anywhere.
    href: str | None = None
    # True when the firings were cut at the feed's cap: there are more in the window than listed.
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Transition:
    """A zone's offset change: from `before` to `after` at the instant `at`."""

    zone: str
    at: datetime
    before: timedelta
    after: timedelta

    @property
    def label(self) -> str:
        """'Europe/Berlin: clocks go forward 1 hour (+01:00 to +02:00)'."""
        shift = self.after - self.before
        way = "forward" if shift > timedelta(0) else "back"
        amount = _amount(abs(shift))
        return f"{self.zone}: clocks go {way} {amount} ({_offset(self.before)} to {_offset(self.after)})"


def _amount(shift: timedelta) -> str:
    minutes = int(shift.total_seconds() // 60)
    hours, rest = divmod(minutes, 60)
    if rest == 0:
        return f"{hours} hour" + ("" if hours == 1 else "s")
    if hours == 0:
        return f"{rest} minutes"
    return f"{hours} h {rest} min"


def _offset(offset: timedelta) -> str:
    sign = "-" if offset < timedelta(0) else "+"
    minutes = int(abs(offset).total_seconds() // 60)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


# -- the zones' offset changes -------------------------------------------------------------------


def transitions(zones: Iterable[str], window: Window) -> tuple[Transition, ...]:
    """Every offset change of `zones` inside `window`, oldest first, found by zoneinfo alone.

    The window is walked hour by hour (no zone has changed its offset twice within an hour) and each change
    found is narrowed to the second by bisection.
    """
    found: list[Transition] = []
    for name in sorted(set(zones)):
        zone = ZoneInfo(name)
        at = window.start.astimezone(UTC)
        end = window.end.astimezone(UTC)
        while at < end:
            step = min(at + timedelta(hours=1), end)
            before, after = _utcoffset(at, zone), _utcoffset(step, zone)
            if before != after:
                found.append(Transition(name, _bisect(at, step, zone), before, after))
            at = step
    return tuple(sorted(found, key=lambda change: (change.at, change.zone)))


def _utcoffset(instant: datetime, zone: ZoneInfo) -> timedelta:
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None  # an aware instant in a ZoneInfo always has one
    return offset


def _bisect(low: datetime, high: datetime, zone: ZoneInfo) -> datetime:
    """The first second in (low, high] at which the offset is high's: the change's instant."""
    first = _utcoffset(low, zone)
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        middle = middle.replace(microsecond=0)
        if middle <= low:
            break
        if _utcoffset(middle, zone) == first:
            low = middle
        else:
            high = middle
    return high


def excluded_days(
    window: Window, zone: ZoneInfo, reason_of: Callable[[date], str | None]
) -> tuple[ExcludedDay, ...]:
    """The dates of `zone` that overlap `window` and that `reason_of` excludes, as instants."""
    day = window.start.astimezone(zone).date()
    last = window.end.astimezone(zone).date()
    spans: list[ExcludedDay] = []
    while day <= last:
        why = reason_of(day)
        if why is not None:
            start = datetime.combine(day, time(0), zone).astimezone(UTC)
            end = datetime.combine(day + timedelta(days=1), time(0), zone).astimezone(UTC)
            if start < window.end and end > window.start:
                spans.append(ExcludedDay(start, end, why))
        day += timedelta(days=1)
    return tuple(spans)


# -- the SVG ----------------------------------------------------------------------------------------


def svg(lanes: Sequence[Lane], window: Window, changes: Sequence[Transition], shown_in: ZoneInfo) -> str:
    """The timeline as one `<svg>` element; `shown_in` is the zone of the axis."""
    height = TOP + LANE * max(1, len(lanes)) + 10
    span = f"{render(window.start, shown_in)} to {render(window.end, shown_in)}"
    parts = [
        f'<svg class="cw-timeline" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" role="img" aria-labelledby="cw-timeline-title cw-timeline-desc">',
        f'<title id="cw-timeline-title">Coming firings, {esc(span)}</title>',
        f'<desc id="cw-timeline-desc">{esc(_description(lanes, changes))}</desc>',
    ]
    parts += _axis(window, shown_in, height)
    for index, lane in enumerate(lanes):
        parts += _lane(lane, window, TOP + LANE * index)
    for change in changes:
        parts += _dst_line(change, window, height)
    if not lanes:
        parts.append(
            f'<text x="{LABEL}" y="{TOP + 20}" fill="currentColor">No schedules fire in this window.</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _description(lanes: Sequence[Lane], changes: Sequence[Transition]) -> str:
    firing = sum(len(lane.firings) for lane in lanes)
    said = f"{counted(len(lanes), 'schedule')}, {counted(firing, 'occurrence')}"
    if changes:
        said += "; " + "; ".join(
            f"{change.label} at {render(change.at, ZoneInfo(change.zone))}" for change in changes
        )
    return said + ". The table below lists them."


def _axis(window: Window, zone: ZoneInfo, height: int) -> list[str]:
    parts = [f'<line x1="{LABEL}" y1="{TOP - 4}" x2="{LABEL + PLOT}" y2="{TOP - 4}" stroke="currentColor"/>']
    for tick, label in _ticks(window, zone):
        x = window.x(tick)
        parts.append(
            f'<line class="cw-tick" x1="{x}" y1="{TOP - 8}" x2="{x}" y2="{height - 10}" stroke="#8888" '
            f'stroke-width="0.5"/><text x="{x}" y="{TOP - 12}" font-size="10" text-anchor="middle" '
            f'fill="currentColor">{esc(label)}</text>'
        )
    return parts


def _ticks(window: Window, zone: ZoneInfo) -> list[tuple[datetime, str]]:
    """Local midnights for a window of days, every third local hour for a shorter one."""
    longer = window.end - window.start > timedelta(days=2)
    step = timedelta(days=1) if longer else timedelta(hours=3)
    wall = window.start.astimezone(zone).replace(minute=0, second=0, microsecond=0, tzinfo=None)
    wall = wall.replace(hour=0) if longer else wall.replace(hour=wall.hour - wall.hour % 3)
    ticks: list[tuple[datetime, str]] = []
    while True:
        instant = wall.replace(tzinfo=zone).astimezone(UTC)
        if instant >= window.end:
            return ticks
        if instant >= window.start:
            ticks.append((instant, wall.strftime("%a %d %b") if longer else wall.strftime("%H:%M")))
        wall += step


def _lane(lane: Lane, window: Window, top: int) -> list[str]:
    middle = top + LANE // 2
    name = esc(lane.name)
    label = (
        f'<text x="4" y="{middle + 4}" font-size="12" fill="currentColor">{name}'
        f"<title>{name} ({esc(lane.zone)})</title></text>"
    )
    # No link here: a role="img" is one picture to assistive technology, and a focusable link inside it is
    # unreachable to some and announced twice by others (axe: nested-interactive). The table below links.
    parts = [
        f'<g class="cw-lane"><line x1="{LABEL}" y1="{middle}" x2="{LABEL + PLOT}" y2="{middle}" '
        f'stroke="#8886" stroke-width="0.5"/>',
        label,
    ]
    for day in lane.excluded_days:
        x1, x2 = window.x(day.start), window.x(day.end)
        parts.append(
            f'<rect class="cw-excluded-day" x="{x1}" y="{top + 2}" width="{round(x2 - x1, 2)}" '
            f'height="{LANE - 4}" fill="#d9a400" fill-opacity="0.18"><title>{esc(lane.name)}: '
            f"excluded date, {esc(day.reason)}</title></rect>"
        )
    shown = [firing for firing in lane.firings if window.holds(firing.at) or window.holds(firing.nominal)]
    if len(shown) > MAX_MARKS:
        parts.append(_band(lane, shown, window, top))
    else:
        parts += [_mark(lane, firing, window, middle) for firing in shown]
    parts.append("</g>")
    return parts


def _band(lane: Lane, shown: Sequence[Firing], window: Window, top: int) -> str:
    x1, x2 = window.x(shown[0].at), window.x(shown[-1].at)
    more = " or more" if lane.truncated else ""
    return (
        f'<rect class="cw-firing cw-band" x="{x1}" y="{top + 9}" width="{max(1.0, round(x2 - x1, 2))}" '
        f'height="{LANE - 18}" fill="#2a6fdb"><title>{esc(lane.name)}: {len(shown)}{more} firings, '
        f"too many to draw one by one</title></rect>"
    )


def _mark(lane: Lane, firing: Firing, window: Window, middle: int) -> str:
    zone = ZoneInfo(lane.zone)
    x, nominal_x = window.x(firing.at), window.x(firing.nominal)
    when = render(firing.at, zone)
    if firing.excluded is not None:
        title = f"{lane.name}: {render(firing.nominal, zone)} excluded, {firing.excluded}"
        return (
            f'<g class="cw-excluded"><title>{esc(title)}</title><path d="M{nominal_x - 4} {middle - 4}l8 8'
            f'm0 -8l-8 8" stroke="#c0392b" stroke-width="2"/></g>'
        )
    parts = [f'<g class="cw-firing"><title>{esc(_firing_title(lane.name, firing, zone))}</title>']
    if firing.at != firing.nominal:
        parts.append(
            f'<line class="cw-nominal" x1="{nominal_x}" y1="{middle - 7}" x2="{nominal_x}" y2="{middle + 7}" '
            f'stroke="currentColor" stroke-width="1"/><line x1="{nominal_x}" y1="{middle}" x2="{x}" '
            f'y2="{middle}" stroke="#2a6fdb" stroke-width="1"/>'
        )
    parts.append(f'<circle cx="{x}" cy="{middle}" r="4" fill="#2a6fdb" data-at="{esc(when)}"/></g>')
    return "".join(parts)


def _firing_title(name: str, firing: Firing, zone: ZoneInfo) -> str:
    said = f"{name}: fires at {render(firing.at, zone)}"
    if firing.at != firing.nominal:
        said += f" (nominal {render(firing.nominal, zone)}, jittered)"
    return said


def _dst_line(change: Transition, window: Window, height: int) -> list[str]:
    x = window.x(change.at)
    when = render(change.at, ZoneInfo(change.zone))
    return [
        f'<g class="cw-dst"><title>{esc(change.label)} at {esc(when)}</title>'
        f'<line x1="{x}" y1="{TOP - 30}" x2="{x}" y2="{height - 6}" stroke="#8e44ad" stroke-width="2" '
        f'stroke-dasharray="5 3"/><text x="{x + 3}" y="{TOP - 30}" font-size="10" fill="currentColor">'
        f"DST {esc(change.zone)} {esc(_offset(change.before))} → {esc(_offset(change.after))}</text></g>"
    ]


# -- the table --------------------------------------------------------------------------------------


def table(lanes: Sequence[Lane], window: Window, changes: Sequence[Transition]) -> str:
    """The same content as a table (and a list of the DST changes), for screen readers and no images."""
    parts: list[str] = []
    if changes:
        parts.append('<ul class="cw-dst-list">')
        for change in changes:
            when = render(change.at, ZoneInfo(change.zone))
            parts.append(f"<li>DST change: {esc(change.label)} at <time>{esc(when)}</time></li>")
        parts.append("</ul>")
    parts.append(
        '<table class="cw-timeline-table rows"><caption>Coming firings, by schedule</caption><thead><tr>'
        '<th scope="col">Schedule</th><th scope="col">Fires at</th><th scope="col">Nominal</th>'
        '<th scope="col">Note</th></tr></thead><tbody>'
    )
    for lane in lanes:
        parts += _table_lane(lane, window)
    parts.append("</tbody></table>")
    return "".join(parts)


def _table_lane(lane: Lane, window: Window) -> list[str]:
    zone = ZoneInfo(lane.zone)
    shown = [firing for firing in lane.firings if window.holds(firing.at) or window.holds(firing.nominal)]
    name = esc(lane.name)
    head = f'<a href="{esc(lane.href)}">{name}</a>' if lane.href is not None else name
    rows: list[str] = []
    for firing in shown[:TABLE_ROWS]:
        note = f"excluded: {firing.excluded}" if firing.excluded else ""
        if not note and firing.at != firing.nominal:
            note = "jittered"
        at = "" if firing.excluded else render(firing.at, zone)
        rows.append(
            f'<tr><th scope="row">{head}</th><td data-label="Fires at"><time>{esc(at)}</time></td>'
            f'<td data-label="Nominal"><time>{esc(render(firing.nominal, zone))}</time></td>'
            f'<td data-label="Note">{esc(note)}</td></tr>'
        )
    for day in lane.excluded_days:
        rows.append(
            f'<tr><th scope="row">{head}</th><td></td>'
            f"<td><time>{esc(render(day.start, zone)[:10])}</time></td>"
            f"<td>excluded date: {esc(day.reason)}</td></tr>"
        )
    rest = len(shown) - TABLE_ROWS
    if rest > 0 or lane.truncated:
        more = f"{rest}{' or more' if lane.truncated else ''} more firings in this window"
        rows.append(f'<tr><th scope="row">{head}</th><td colspan="3">{esc(more)}</td></tr>')
    if not rows:
        rows.append(f'<tr><th scope="row">{head}</th><td colspan="3">no firing in this window</td></tr>')
    return rows
