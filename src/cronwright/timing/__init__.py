"""Pure time math: cron on cronsim, the `every` grid, durations, lifetimes, zones and ISO-8601.

Nothing here reads a clock: every function takes `now` or `after`. Every instant returned is aware UTC.
"""

from cronwright.timing.cron import HORIZON, MACROS, CronExpression
from cronwright.timing.durations import MAX_DURATION, format_duration, parse_duration
from cronwright.timing.every import count_on_grid, latest_on_grid, next_on_grid
from cronwright.timing.iso import as_utc, parse_instant, render, wall_to_utc
from cronwright.timing.lifetime import resolve_end
from cronwright.timing.preview import MAX_COUNT, preview
from cronwright.timing.zones import system_zone_name, zone

__all__ = [
    "HORIZON",
    "MACROS",
    "MAX_COUNT",
    "MAX_DURATION",
    "CronExpression",
    "as_utc",
    "count_on_grid",
    "format_duration",
    "latest_on_grid",
    "next_on_grid",
    "parse_duration",
    "parse_instant",
    "preview",
    "render",
    "resolve_end",
    "system_zone_name",
    "wall_to_utc",
    "zone",
]
