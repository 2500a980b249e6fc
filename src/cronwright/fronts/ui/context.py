"""What a dashboard page works with: the `Dashboard` (the node's app, sessions, links) and the caller.

A page asks the protocol, as the caller, with `ask(request, action, **fields)`; it never reads the store
or the service directly, so it shows exactly what the protocol would answer that caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from cronwright.app import App
from cronwright.core.sources import Source
from cronwright.fronts.http.throttle import AuthFailures
from cronwright.fronts.ui.links import Links
from cronwright.fronts.ui.sessions import Session, Sessions

Reply = dict[str, Any]


@dataclass
class Dashboard:
    app: App
    # Picks the source of a bearer token, in constant time (the HTTP front's own check).
    token_source: Callable[[str | None], Source | None]
    # Failed logins, per client address: shared with the HTTP front's wrong tokens.
    failures: AuthFailures
    sessions: Sessions = field(default_factory=Sessions)
    links: Links = field(default_factory=Links)

    def now(self) -> datetime:
        return self.app.node.clock.now()


def dashboard(request: Request) -> Dashboard:
    found = request.app.state.dashboard
    assert isinstance(found, Dashboard)
    return found


def session(request: Request) -> Session:
    """The caller's session (the gate lets no page run without one)."""
    found = request.scope.get("cronwright.session")
    assert isinstance(found, Session), "the session gate runs before every page"
    return found


def caller(request: Request) -> Source:
    return session(request).source


async def ask(request: Request, action: str, **fields: Any) -> Reply:
    """The protocol's reply to `action` with `fields` (None values left out), asked as the caller."""
    message = {"action": action, **{k: v for k, v in fields.items() if v is not None}}
    protocol = dashboard(request).app.protocol
    return await run_in_threadpool(protocol.dispatch, message, caller(request))
