"""The changes: each a form POSTed from a dashboard page, checked for its origin and CSRF token, then made
through the protocol as the caller, which writes the audit entry it writes for any front."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from cronwright.fronts.ui.context import ask, session
from cronwright.fronts.ui.guard import form, same_origin
from cronwright.fronts.ui.pages import refused
from cronwright.fronts.ui.views import NOTES, job_url, page

VERBS = ("pause", "resume", "run_now", "approve", "reject", "delete")  # the verbs a button may post


def routes() -> list[BaseRoute]:
    return [
        Route("/actions/{verb}", act, methods=["POST"], name="act"),
        Route("/delete/{name:path}", confirm_delete, methods=["GET"], name="confirm_delete"),
    ]


async def checked_form(request: Request) -> dict[str, str] | Response:
    """The form of a change, or the refusal of one that is not from this dashboard's page of this
    session: a foreign (or missing) Origin, or a missing or wrong CSRF token, gets 403."""
    if not same_origin(request):
        return page(request, "refused.html", 403, why="This change was not sent from this dashboard's page.")
    fields = await form(request)
    if fields is None or not session(request).csrf_ok(fields.get("csrf")):
        return page(request, "refused.html", 403, why="This change has no valid CSRF token: reload the page.")
    return fields


async def act(request: Request) -> Response:
    verb = request.path_params["verb"]
    if verb not in VERBS:
        return page(request, "refused.html", 404, why=f"There is no action {verb!r}.")
    fields = await checked_form(request)
    if isinstance(fields, Response):
        return fields
    if verb == "delete" and fields.get("confirm") != "yes":
        return page(request, "refused.html", 400, why="A delete needs its confirmation.")
    note = (fields.get("note") or None) if NOTES.get(verb) else None
    reply = await ask(request, verb, name=fields.get("name", ""), note=note)
    if not reply.get("ok"):
        return refused(request, reply)
    if verb in ("delete", "reject"):
        return RedirectResponse(request.url_for("schedules").path, status_code=303)
    return RedirectResponse(job_url(request, "schedule", reply["job"]["name"]), status_code=303)


async def confirm_delete(request: Request) -> Response:
    got = await ask(request, "get", name=request.path_params["name"])
    if not got.get("ok"):
        return refused(request, got)
    return page(request, "delete.html", job=got["job"])
