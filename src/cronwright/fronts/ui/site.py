"""The dashboard's ASGI app: its routes, the session gate and the security headers (see __init__)."""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from cronwright.app import App
from cronwright.core.sources import Source
from cronwright.fronts.http.throttle import AuthFailures
from cronwright.fronts.ui import actions, edit, live, login, pages
from cronwright.fronts.ui.context import Dashboard
from cronwright.fronts.ui.guard import SecurityHeaders
from cronwright.fronts.ui.links import Links
from cronwright.fronts.ui.sessions import COOKIE
from cronwright.fronts.ui.views import HERE

# Reached without a session: the login pages and the static files.
OPEN = ("/login", "/static/")


def create_ui(
    app: App,
    token_source: Callable[[str | None], Source | None],
    links: Links | None = None,
    failures: AuthFailures | None = None,
) -> tuple[ASGIApp, Dashboard]:
    """The dashboard over `app`, to be mounted at /ui; `token_source` picks a bearer token's source;
    `links` checks the operator's one-time links (a new key by default); `failures` throttles failed
    logins (the HTTP front shares its own, so a guesser's count is one across fronts)."""
    board = Dashboard(app, token_source, failures or AuthFailures(app.node.clock), links=links or Links())
    site = Starlette(
        routes=[
            *login.routes(),
            *pages.routes(),
            *actions.routes(),
            *edit.routes(),
            *live.routes(),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        exception_handlers={404: _not_found},
    )
    site.state.dashboard = board
    return SecurityHeaders(SessionGate(site, board)), board


class SessionGate:
    """Every route but OPEN needs a live session: a page without one goes to the login form, anything
    else gets 401."""

    def __init__(self, app: Starlette, board: Dashboard) -> None:
        self.app = app
        self.board = board

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Route names (url_for) are the dashboard's own, and its URLs start where it is mounted.
        scope["router"] = self.app.router
        scope["app_root_path"] = scope.get("root_path", "")
        request = Request(scope)
        inner = scope["path"][len(scope.get("root_path", "")) :]
        if not inner.startswith(OPEN):
            found = self.board.sessions.find(request.cookies.get(COOKIE), self.board.now())
            if found is None:
                await _login_first(request)(scope, receive, send)
                return
            scope["cronwright.session"] = found
        await self.app(scope, receive, send)


def _login_first(request: Request) -> Response:
    if request.method in ("GET", "HEAD") and request.headers.get("accept", "").find("text/event-stream") < 0:
        return RedirectResponse(f"{request.scope.get('root_path', '')}/login", status_code=303)
    return PlainTextResponse("log in first", status_code=401)


async def _not_found(request: Request, error: Exception) -> Response:
    return PlainTextResponse("not found", status_code=404)
