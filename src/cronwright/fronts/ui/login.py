"""Logging in and out: a source by its bearer token (a form), the local operator by the one-time link
that `cronwright dashboard` prints. Either way the caller gets a session cookie, HttpOnly and
SameSite=Strict, and Secure when the page came over HTTPS."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from cronwright.core.sources import operator
from cronwright.fronts.http.throttle import client_address
from cronwright.fronts.ui.context import dashboard
from cronwright.fronts.ui.guard import form, same_origin
from cronwright.fronts.ui.sessions import COOKIE, LIFETIME, Session
from cronwright.fronts.ui.views import bare


def routes() -> list[BaseRoute]:
    return [
        Route("/login", show_login, methods=["GET"], name="login"),
        Route("/login", token_login, methods=["POST"], name="token_login"),
        Route("/login/link", show_link, methods=["GET"], name="link"),
        Route("/login/link", link_login, methods=["POST"], name="link_login"),
        Route("/logout", logout, methods=["POST"], name="logout"),
    ]


async def show_login(request: Request) -> Response:
    return bare(request, "login.html")


async def token_login(request: Request) -> Response:
    if not same_origin(request):
        return bare(request, "refused.html", 403, why="This form was not sent from this dashboard's page.")
    fields = await form(request) or {}
    board = dashboard(request)
    token = fields.get("token", "")
    # The HTTP front's own check: compared in constant time with every configured digest.
    source = board.token_source(f"Bearer {token}")
    if source is None:
        return _failed(request, "login.html", guessed=bool(token.strip()))
    return _logged_in(request, board.sessions.start(source, board.now(), "token"))


async def show_link(request: Request) -> Response:
    # Showing the link's page spends nothing: a link preview or a prefetch cannot use it up. The button
    # posts it back, from this origin, and that spends it.
    return bare(request, "link.html", token=request.query_params.get("token", ""))


async def link_login(request: Request) -> Response:
    if not same_origin(request):
        return bare(request, "refused.html", 403, why="This form was not sent from this dashboard's page.")
    fields = await form(request) or {}
    board = dashboard(request)
    if not board.links.redeem(fields.get("token", ""), board.now()):
        return _failed(request, "link.html", guessed=bool(fields.get("token")), token="")
    return _logged_in(request, board.sessions.start(operator(), board.now(), "link"))


async def logout(request: Request) -> Response:
    board = dashboard(request)
    found = board.sessions.find(request.cookies.get(COOKIE), board.now())
    fields = await form(request) or {}
    if found is None or not same_origin(request) or not found.csrf_ok(fields.get("csrf")):
        return bare(request, "refused.html", 403, why="Log out from the dashboard's own page.")
    board.sessions.end(found.id)
    answer = RedirectResponse(request.url_for("login").path, status_code=303)
    answer.delete_cookie(COOKIE, path=_cookie_path(request), httponly=True, samesite="strict")
    return answer


def _failed(request: Request, template: str, guessed: bool, **context: str) -> Response:
    """A failed login: 401 and the form again, or, past the client's allowance of failures, 429 with
    Retry-After. An empty form guesses nothing and is not counted."""
    board = dashboard(request)
    retry_after = board.failures.failed(client_address(request.scope), "dashboard") if guessed else None
    if retry_after is None:
        return bare(request, template, 401, failed=True, **context)
    answer = bare(request, template, 429, throttled=retry_after, **context)
    answer.headers["Retry-After"] = str(retry_after)
    return answer


def _logged_in(request: Request, session: Session) -> Response:
    answer = RedirectResponse(request.url_for("schedules").path, status_code=303)
    answer.set_cookie(
        COOKIE,
        session.id,
        max_age=int(LIFETIME.total_seconds()),
        path=_cookie_path(request),
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return answer


def _cookie_path(request: Request) -> str:
    return f"{request.scope.get('root_path', '')}/"
