"""The pages that read: each asks the protocol as the caller and renders what it answers.

A refusal the protocol gives (a schedule another source owns is `not_found` to this one) becomes the
page's status: 404, 409, ... with the protocol's message as text.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from cronwright.fronts.http.statuses import status_of
from cronwright.fronts.ui import plugins, timeline_page
from cronwright.fronts.ui.context import Reply, ask, caller
from cronwright.fronts.ui.views import page

PAGE = 50  # schedules a page
NOTICES = 200  # the newest notifications a schedule's page looks through for its own
STATES = ("pending", "active", "paused", "running", "expired", "done", "failed")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def routes() -> list[BaseRoute]:
    return [
        Route("/", schedules, methods=["GET"], name="schedules"),
        Route("/schedules/{name:path}", schedule, methods=["GET"], name="schedule"),
        Route("/history", history, methods=["GET"], name="history"),
        Route("/timeline", timeline_page.timeline, methods=["GET"], name="timeline"),
        Route("/notifications", notifications, methods=["GET"], name="notifications"),
        Route("/approvals", approvals, methods=["GET"], name="approvals"),
        Route("/nodes", nodes, methods=["GET"], name="nodes"),
    ]


def refused(request: Request, reply: Reply) -> Response:
    """The page for a refusal, with the status the HTTP API gives its code."""
    return page(request, "refused.html", status_of(reply), why=reply.get("message", ""), reply=reply)


async def schedules(request: Request) -> Response:
    """Like `list`: by state and target, a name search (schedules whose name starts with it), a page of
    PAGE at a time, after a cursor (the last name of the page before)."""
    query = request.query_params
    state = query.get("state") or None
    target = query.get("target") or None
    made_by = query.get("source") or None
    search = query.get("q") or ""
    after = query.get("after") or None
    if search and not set(search) <= _NAME_CHARS:
        return page(
            request, "schedules.html", jobs=[], next_after=None, filters=_filters(query), states=STATES
        )
    if search and after is None:
        after = _just_before(search)
    reply = await ask(
        request, "list", state=state, target=target, source=made_by, limit=PAGE, after_name=after
    )
    if not reply.get("ok"):
        return refused(request, reply)
    jobs: list[dict[str, Any]] = reply["jobs"]
    next_after = reply.get("next_after_name")
    if search:
        matching = [job for job in jobs if job["name"].startswith(search)]
        next_after = next_after if len(matching) == len(jobs) else None
        jobs = matching
    return page(
        request,
        "schedules.html",
        jobs=jobs,
        next_after=next_after,
        filters=_filters(query),
        states=STATES,
        unreadable=reply.get("unreadable", []),
    )


def _filters(query: Any) -> dict[str, str]:
    return {key: query.get(key, "") for key in ("state", "target", "source", "q")}


def _just_before(prefix: str) -> str:
    """A name that sorts just before every name starting with `prefix` (names sort bytewise)."""
    return prefix[:-1] + chr(ord(prefix[-1]) - 1) + "~" * 100


async def schedule(request: Request) -> Response:
    name = request.path_params["name"]
    got = await ask(request, "get", name=name)
    if not got.get("ok"):
        return refused(request, got)
    job = got["job"]
    runs = await ask(request, "history", job_id=job["id"], limit=20)
    audit = await ask(request, "audit", job_id=job["id"], limit=20)
    # The protocol's notifications are not asked by job: this schedule's among the newest NOTICES.
    notes = await ask(request, "notifications", limit=NOTICES)
    alerts = [d for d in notes.get("deliveries", []) if (d.get("job") or {}).get("id") == job["id"]]
    return page(
        request,
        "schedule.html",
        job=job,
        firings=got.get("next_firings", []),
        runs=runs.get("runs", []),
        entries=audit.get("entries", []),
        alerts=alerts,
        words=plugins.describe(job),
        chart=plugins.runs_chart(runs.get("runs", [])),
    )


async def history(request: Request) -> Response:
    before = _whole(request.query_params.get("before"))
    reply = await ask(request, "history", limit=50, before=before)
    if not reply.get("ok"):
        return refused(request, reply)
    return page(request, "history.html", runs=reply["runs"], next_before=reply.get("next_before"))


async def notifications(request: Request) -> Response:
    before = request.query_params.get("before") or None
    reply = await ask(request, "notifications", limit=50, before=before)
    if not reply.get("ok"):
        return refused(request, reply)
    return page(
        request, "notifications.html", deliveries=reply["deliveries"], next_before=reply.get("next_before")
    )


async def approvals(request: Request) -> Response:
    if not caller(request).operator:
        return page(request, "refused.html", 403, why="Only the operator approves or rejects schedules.")
    reply = await ask(request, "list", state="pending", limit=200)
    if not reply.get("ok"):
        return refused(request, reply)
    return page(request, "approvals.html", jobs=reply["jobs"])


async def nodes(request: Request) -> Response:
    if not caller(request).operator:
        return page(request, "refused.html", 403, why="Only the operator sees the nodes and the store.")
    reply = await ask(request, "status")
    if not reply.get("ok"):
        return refused(request, reply)
    flying = await ask(request, "list", state="running", limit=PAGE)
    return page(
        request,
        "nodes.html",
        node=reply["node"],
        counts=reply["counts"],
        running=reply["running"],
        in_flight=flying.get("jobs", []),
    )


def _whole(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() and len(text) < 19 else None
