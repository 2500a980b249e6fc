"""The read verbs over HTTP as a bare ASGI app, as `POST /v1/call` is (call_route.py): `GET /v1/status`,
`/v1/jobs`, `/v1/jobs/{name}`, `/v1/runs` and `/v1/audit`. An agent that polls sends these most, and
Starlette's router, its two exception middlewares, a Request and a JSONResponse cost a read as much of the
fronts' CPU as the read itself. The replies are the same, byte for byte (`call_route.rendered`).

Only an exact GET of one of these paths comes here (BearerAuth hands it over once the token picked a
source); Starlette still answers the rest as before: a HEAD, a trailing slash (redirected), a name with a
slash in it (404), another method (405). The query's fields are read here for both (`read_fields`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import Receive, Scope, Send

from cronwright.core.sources import Source
from cronwright.errors import Invalid
from cronwright.fronts.http.call_route import POOL, respond
from cronwright.fronts.http.statuses import Reply

# Each read path: the protocol's action, and the query parameters it takes.
READS: dict[str, tuple[str, frozenset[str]]] = {
    "/v1/jobs": ("list", frozenset({"state", "target", "source", "limit", "after_name"})),
    "/v1/runs": ("history", frozenset({"name", "job_id", "limit", "before"})),
    "/v1/audit": ("audit", frozenset({"name", "job_id", "source", "limit", "before"})),
    "/v1/status": ("status", frozenset()),
}
JOB_PREFIX = "/v1/jobs/"
_NUMBERS = ("job_id", "limit", "before")

Dispatch = Callable[[dict[str, Any], Source], Reply]


def read_fields(action: str, allowed: frozenset[str], query: dict[str, str]) -> dict[str, Any]:
    """The protocol request a read's query makes; Invalid for a parameter it does not take."""
    unknown = sorted(set(query) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise Invalid(unknown[0], f"unknown query parameter '{unknown[0]}'; known: {known}")
    fields: dict[str, Any] = {k: _number(v) if k in _NUMBERS else v for k, v in query.items()}
    return {"action": action, **fields}


def query_of(scope: Scope) -> dict[str, str]:
    """The query's parameters as Starlette's `dict(request.query_params)` has them: blank values kept, and
    of a name given twice, the last."""
    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))


def _number(text: str) -> int | str:
    """A query parameter that must be a whole number; anything else goes on, to be refused by name."""
    # Any length the model can bound: past 2**62 it is refused as out of range, not as "not a number".
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 40 else text


class ReadRoute:
    """Answers the read verbs for the source found in the scope under `source_key`."""

    def __init__(self, dispatch: Dispatch, source_key: str) -> None:
        self._dispatch = dispatch
        self._source_key = source_key

    def handles(self, scope: Scope) -> bool:
        path = scope.get("path", "")
        if scope.get("method") != "GET":
            return False
        if path in READS:
            return True
        name = path[len(JOB_PREFIX) :] if path.startswith(JOB_PREFIX) else ""
        return bool(name) and "/" not in name

    def _request(self, scope: Scope) -> dict[str, Any]:
        path = scope["path"]
        if path in READS:
            action, allowed = READS[path]
            return read_fields(action, allowed, query_of(scope))
        return {"action": "get", "name": path[len(JOB_PREFIX) :]}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        source = scope.get(self._source_key)
        assert isinstance(source, Source), "BearerAuth runs before this route"
        await respond(send, lambda: self._reply(scope, source))

    async def _reply(self, scope: Scope, source: Source) -> Reply:
        try:
            request = self._request(scope)
        except Invalid as refusal:
            return refusal.reply()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(POOL, self._dispatch, request, source)
