"""The templates: jinja2 with autoescape on for every template, so any text a row holds (a name, a note,
args, a run's output) is shown as text, never as markup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, pass_context
from jinja2.runtime import Context
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from cronwright.declare.requests import MODELS
from cronwright.fronts import render
from cronwright.fronts.ui.context import session

HERE = Path(__file__).parent

_environment = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)
_environment.filters["schedule_text"] = render.schedule_text
_environment.filters["firing_text"] = render.firing_text
_environment.filters["main_changes"] = lambda entry: main_changes(entry)
_environment.filters["as_json"] = lambda value: json.dumps(
    value, indent=1, sort_keys=True, ensure_ascii=False
)[:20000]
templates = Jinja2Templates(env=_environment)
_NAME = "__name__"


def job_url(request: Request, route: str, name: str) -> str:
    """The path of `route` for the schedule `name`, whatever it holds: a name hand-edited into a row
    (a slash, a `?`) is quoted, never a route's error."""
    return request.url_for(route, name=_NAME).path.replace(_NAME, quote(name, safe=""))


@pass_context
def _job_url(context: Context, route: str, name: str) -> str:
    return job_url(context["request"], route, name)


_environment.globals["job_url"] = _job_url

# The fields an audit entry shows first, as `cronwright audit` does; the rest behind "Every field".
_MAIN_FIELDS = ("state", "schedule", "args", "name", "next_run_at", "ends_at", "paused_by", "pause_note")


def main_changes(entry: Any) -> list[tuple[str, Any]]:
    """The changes of an audit entry worth a line: a create's or delete's state and schedule, or the
    main fields an update changed (every field when it changed none of them)."""
    changes = entry.get("changes") or {}
    whole = entry.get("action") in ("create", "delete", "reject") or "id" in changes
    wanted = ("state", "schedule") if whole else _MAIN_FIELDS
    shown = [(name, changes[name]) for name in wanted if name in changes]
    return shown or list(changes.items())


# Which verbs take a note: those whose protocol request declares one.
NOTES = {verb: "note" in MODELS[verb].model_fields for verb in ("pause", "resume", "approve", "reject")}

# The pages in the nav, in its order: (route name, label, operator only).
NAV = (
    ("schedules", "Schedules", False),
    ("timeline", "Timeline", False),
    ("history", "History", False),
    ("notifications", "Notifications", False),
    ("approvals", "Approvals", True),
    ("nodes", "Nodes", True),
)


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """`template` rendered for the logged-in caller, with the nav, the caller and their CSRF token."""
    current = session(request)
    nav = [(name, label) for name, label, operator in NAV if current.source.operator or not operator]
    context = {"nav": nav, "caller": current.source, "csrf": current.csrf, "notes": NOTES, **context}
    return templates.TemplateResponse(request, template, context, status_code=status_code)


def bare(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """`template` for a caller not logged in (the login pages)."""
    return templates.TemplateResponse(
        request, template, {"nav": [], "caller": None, "csrf": "", **context}, status_code=status_code
    )
