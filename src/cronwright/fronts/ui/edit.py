"""Creating and editing a schedule, with a preview of its firings.

The form works with JavaScript off: its Preview button posts it, and the page comes back with the firings
the protocol's dry run gives (every check made, nothing written), or its refusal. With JavaScript,
preview.js asks `GET /preview` as a cron expression is typed: the protocol's `preview`, a read, so typing
never spends a source's mutations. Save posts the real create_job or update, which writes its audit entry.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from cronwright.fronts.http.statuses import status_of
from cronwright.fronts.ui import forms
from cronwright.fronts.ui.actions import checked_form
from cronwright.fronts.ui.context import Reply, ask
from cronwright.fronts.ui.pages import refused
from cronwright.fronts.ui.views import job_url, page

PREVIEW_COUNT = 10


def routes() -> list[BaseRoute]:
    return [
        Route("/new", new_schedule, methods=["GET"], name="new_schedule"),
        Route("/new", create_schedule, methods=["POST"], name="create_schedule"),
        Route("/edit/{name:path}", edit_schedule, methods=["GET"], name="edit_schedule"),
        Route("/edit/{name:path}", save_schedule, methods=["POST"], name="save_schedule"),
        Route("/preview", preview, methods=["GET"], name="preview"),
    ]


async def new_schedule(request: Request) -> Response:
    return await _form(request, forms.blank(), None)


async def edit_schedule(request: Request) -> Response:
    got = await ask(request, "get", name=request.path_params["name"])
    if not got.get("ok"):
        return refused(request, got)
    return await _form(request, forms.form_of(got["job"]), got["job"])


async def create_schedule(request: Request) -> Response:
    fields = await checked_form(request)
    if isinstance(fields, Response):
        return fields
    shown = {key: fields.get(key, "") for key in forms.FIELDS}
    dry = fields.get("intent") != "save"
    try:
        job = forms.job_of(shown)
    except forms.FormProblem as problem:
        return await _form(
            request, shown, None, {"ok": False, "field": problem.field, "message": str(problem)}
        )
    reply = await ask(request, "create_job", job=job, dry_run=True if dry else None)
    if dry or not reply.get("ok"):
        return await _form(request, shown, None, reply)
    return RedirectResponse(job_url(request, "schedule", reply["job"]["name"]), status_code=303)


async def save_schedule(request: Request) -> Response:
    fields = await checked_form(request)
    if isinstance(fields, Response):
        return fields
    got = await ask(request, "get", name=request.path_params["name"])
    if not got.get("ok"):
        return refused(request, got)
    row = got["job"]
    shown = {key: fields.get(key, "") for key in forms.FIELDS}
    dry = fields.get("intent") != "save"
    try:
        changes = forms.changes_of(shown, row)
    except forms.FormProblem as problem:
        return await _form(
            request, shown, row, {"ok": False, "field": problem.field, "message": str(problem)}
        )
    if not changes:
        if dry:
            return await _form(request, shown, row, {"ok": True, "firings": got.get("next_firings", [])})
        return RedirectResponse(job_url(request, "schedule", row["name"]), status_code=303)
    reply = await ask(request, "update", job_id=row["id"], changes=changes, dry_run=True if dry else None)
    if dry or not reply.get("ok"):
        return await _form(request, shown, row, reply)
    return RedirectResponse(job_url(request, "schedule", reply["job"]["name"]), status_code=303)


async def preview(request: Request) -> Response:
    """The firings of the cron expressions in the query (`cron`, one a line; `tz`; `exclude`), as the
    fragment the form shows under its schedule."""
    query = request.query_params
    lines = forms.expressions(query.get("cron", ""))
    if not lines:
        return page(request, "_preview.html", result=None)
    reply = await ask(
        request,
        "preview",
        expression=lines[0] if len(lines) == 1 else lines,
        tz=query.get("tz") or None,
        exclude=forms.calendars(query.get("exclude", "")) or None,
        count=PREVIEW_COUNT,
    )
    return page(request, "_preview.html", status_code=status_of(reply), result=_as_result(reply))


def _as_result(reply: Reply) -> dict[str, Any]:
    """A preview reply in the shape the form's result shows: firings as `{at}` rows, excluded ones marked."""
    if not reply.get("ok"):
        return reply
    excluded = {row["at"]: row["reason"] for row in reply.get("excluded", [])}
    firings = [
        {"at": at, **({"excluded": excluded[at]} if at in excluded else {})} for at in reply["firings"]
    ]
    return {"ok": True, "firings": firings, "explanation": reply.get("explanation")}


async def _form(
    request: Request, shown: dict[str, str], row: dict[str, Any] | None, result: Reply | None = None
) -> Response:
    targets = await ask(request, "targets")
    pairs = [f"{t['target']}.{a['action']}" for t in targets.get("targets", []) for a in t["actions"]]
    status = 200 if result is None or result.get("ok") else status_of(result)
    return page(request, "form.html", status, form=shown, row=row, targets=pairs, result=result)
