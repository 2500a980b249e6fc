"""The timeline page: the caller's active schedules over the next 24 hours or 7 days, a page of lanes a time.

Everything on it is asked through the protocol as the caller (`status` for the node's zone and clock,
`list`, then `get` and `preview` per lane: see timeline_feed.py), drawn by timeline.py as SVG and as a table.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from cronwright.fronts.http.statuses import status_of
from cronwright.fronts.ui import timeline as drawing
from cronwright.fronts.ui.context import Reply, ask
from cronwright.fronts.ui.timeline_feed import lanes
from cronwright.fronts.ui.views import page
from cronwright.timing.iso import parse_instant

# The windows the page offers, by their query value.
SPANS = {"24h": timedelta(hours=24), "7d": timedelta(days=7)}
LANES = 40  # schedules a page


async def timeline(request: Request) -> Response:
    span = request.query_params.get("span", "24h")
    span = span if span in SPANS else "24h"
    after = request.query_params.get("after") or None
    status = await ask(request, "status")
    if not status.get("ok"):
        return _refused(request, status)
    zone = ZoneInfo(status["node"]["zone"])
    now = parse_instant(status["node"]["now"], zone)
    window = drawing.Window(now, now + SPANS[span])
    listed = await ask(request, "list", state="active", limit=LANES, after_name=after)
    if not listed.get("ok"):
        return _refused(request, listed)

    async def asking(action: str, **fields: Any) -> Reply:
        return await ask(request, action, **fields)

    found = await lanes(asking, listed["jobs"], window, zone)
    found = [replace(lane, href=str(request.url_for("schedule", name=lane.name).path)) for lane in found]
    changes = drawing.transitions({zone.key, *(lane.zone for lane in found)}, window)
    return page(
        request,
        "timeline.html",
        drawing=Markup(drawing.svg(found, window, changes, zone)),
        table=Markup(drawing.table(found, window, changes)),
        span=span,
        spans=list(SPANS),
        after=after,
        next_after=listed.get("next_after_name"),
        zone=zone.key,
        lanes=len(found),
        changes=changes,
    )


def _refused(request: Request, reply: Reply) -> Response:
    return page(request, "refused.html", status_of(reply), why=reply.get("message", ""), reply=reply)
