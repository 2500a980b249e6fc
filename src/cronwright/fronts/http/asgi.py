"""The HTTP API: an ASGI app over the protocol, for `cronwright serve`.

Routes: `POST /v1/call` (the protocol), `GET /v1/jobs`, `/v1/jobs/{name}`, `/v1/runs` and `/v1/status`
(reads), `GET /metrics` (Prometheus), `GET /healthz`, `GET /openapi.json`, MCP over streamable HTTP at
`/mcp`, and the dashboard at `/ui/` (fronts/ui). Every route but `/healthz` and the dashboard needs
`Authorization: Bearer <token>`: the token picks the configured source, and a missing or unknown one gets
401 with no body and RFC 6750's `WWW-Authenticate` (`error="invalid_token"` for a wrong one), or 429 for a
client past its allowance of wrong tokens. `/.well-known/...` (OAuth discovery) is 404: no OAuth here.
The dashboard has its own sessions, started by the same tokens (or the operator's one-time link).

Every reply is the protocol's JSON. A refusal keeps its shape (`ok: false`, `error`, `message`, ...) and
gets the status `STATUS` gives its code: 400 for a malformed request, 403 for what the source may not do,
404, 409 for a state conflict, 413 for a body over `max_message_bytes`, 429 at capacity, 503 when the
store failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.types import JSONRPCMessage
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import TypeAdapter, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cronwright.app import App
from cronwright.core.sources import Source, token_digest
from cronwright.errors import Invalid
from cronwright.fronts import mcp as mcp_front
from cronwright.fronts.http.call_route import CallRoute
from cronwright.fronts.http.listen import listening
from cronwright.fronts.http.read_route import READS, ReadRoute, query_of, read_fields
from cronwright.fronts.http.statuses import Reply, status_of
from cronwright.fronts.http.throttle import AuthFailureCounts, AuthFailures, client_address
from cronwright.fronts.openapi import document
from cronwright.notify.gauges import AlertGauges
from cronwright.telemetry.metrics import NodeGauges, NodeView

if TYPE_CHECKING:
    from cronwright.fronts.ui.links import Links

SOURCE_KEY = "cronwright.source"
# RFC 6750: a 401 names the scheme and realm; with a token that was wrong, also error="invalid_token", so
# an MCP client reports a wrong token instead of starting OAuth (section 3.1: no error when none was given).
REALM = 'Bearer realm="cronwright"'
# The node serves no OAuth (RFC 8414, RFC 9728, OpenID discovery): each of these answers 404 at once, with
# or without a path suffix, so an MCP client that looks for them learns there is none, not that it needs a
# token for the lookup.
WELL_KNOWN = "/.well-known/"
NO_OAUTH = (
    "this node serves no OAuth: give the MCP client the source's token as the header "
    "`Authorization: Bearer <token>` (docs/security.md, Giving an agent a source)"
)
OPEN_PATHS = frozenset({"/healthz", "/ui"})  # /ui: the router redirects it to /ui/
# The dashboard checks its own sessions (fronts/ui/site.py), which a bearer token or a link starts.
OPEN_PREFIXES = ("/ui/",)


# --- who is asking --------------------------------------------------------------------------------------


class Tokens:
    """Picks the source one of whose `token_sha256` values is the SHA-256 of a bearer token.

    The digest is compared with every digest of every source, each with `hmac.compare_digest` and
    without stopping at a match, so the time taken says nothing about which source, if any, matched, or
    how closely.
    """

    def __init__(self, sources: Iterable[Source]) -> None:
        self.replace(sources)

    def replace(self, sources: Iterable[Source]) -> None:
        """A reload's sources: one assignment, so a request checks against the old list or the new."""
        self._sources = [(s, digest.encode()) for s in sources for digest in s.token_sha256]

    def source(self, authorization: str | None) -> Source | None:
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        given = token_digest(token).encode()
        found: Source | None = None
        for source, expected in self._sources:
            if hmac.compare_digest(given, expected):
                found = source
        if scheme.lower() != "bearer" or not token:
            return None
        return found


class BearerAuth:
    """ASGI middleware: 401 with no detail unless the bearer token picks a source, which goes in the scope.

    A wrong token counts against its client's address (`AuthFailures`): past its allowance the client
    gets 429 with Retry-After instead. A token that picks a source is never throttled.

    A `POST /v1/call` that passed goes straight to `call` (call_route.py), and a GET of a read verb to
    `reads` (read_route.py), around Starlette's router and middlewares, which cost as much CPU as a create
    or a read itself; the rest (a GET of /v1/call too, which Starlette answers 405) goes to `app`."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Tokens,
        failures: AuthFailures,
        call: ASGIApp | None = None,
        reads: ReadRoute | None = None,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.failures = failures
        self.call = call
        self.reads = reads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        if path.startswith(WELL_KNOWN):
            refusal = {"ok": False, "error": "not_found", "message": NO_OAUTH}
            await JSONResponse(refusal, status_code=404)(scope, receive, send)
            return
        authorization = Headers(scope=scope).get("authorization")
        source = self.tokens.source(authorization)
        if source is None:
            await self._refuse(scope, authorization)(scope, receive, send)
            return
        scope[SOURCE_KEY] = source
        if self.call is not None and path == "/v1/call" and scope["method"] == "POST":
            await self.call(scope, receive, send)
            return
        if self.reads is not None and self.reads.handles(scope):
            await self.reads(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refuse(self, scope: Scope, authorization: str | None) -> Response:
        """401 as RFC 6750 says, or 429 for a client past its allowance of wrong tokens."""
        if not authorization:  # no token at all: nothing guessed, and no error code (RFC 6750, 3.1)
            return Response(status_code=401, headers={"WWW-Authenticate": REALM})
        front = "mcp" if scope.get("path") == "/mcp" else "api"
        retry_after = self.failures.failed(client_address(scope), front)
        if retry_after is not None:
            return Response(status_code=429, headers={"Retry-After": str(retry_after)})
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer":  # another scheme: no bearer token was given
            return Response(status_code=401, headers={"WWW-Authenticate": REALM})
        error = "invalid_token" if token.strip() else "invalid_request"
        return Response(status_code=401, headers={"WWW-Authenticate": f'{REALM}, error="{error}"'})


def source_of(request: object) -> Source | None:
    """The source the bearer token picked for this request (see BearerAuth)."""
    scope = getattr(request, "scope", None)
    found = scope.get(SOURCE_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, Source) else None


# --- the app --------------------------------------------------------------------------------------------


class _Api:
    def __init__(self, app: App, failures: AuthFailures, view: NodeView | None) -> None:
        self.app = app
        self.limit = app.protocol.max_message_bytes
        self.gauges = CollectorRegistry()
        gauges = NodeGauges(app.node, view)
        self.gauges.register(gauges)
        self.gauges.register(AuthFailureCounts(failures))
        node, limit = app.node, app.config.node.per_job_metrics
        store = node.store
        # Not in the registry: its per-job series are written by its own `render`, kept between scrapes.
        self.alerts = AlertGauges(store, lambda: gauges.view.last_pass_at, limit)

    async def dispatch(self, request: Request, fields: dict[str, Any]) -> JSONResponse:
        source = _source(request)
        reply = await run_in_threadpool(self.app.protocol.dispatch, fields, source)
        return _json(reply)

    async def jobs(self, request: Request) -> Response:
        return await self._read(request, "/v1/jobs")

    async def job(self, request: Request) -> Response:
        return await self.dispatch(request, {"action": "get", "name": request.path_params["name"]})

    async def runs(self, request: Request) -> Response:
        return await self._read(request, "/v1/runs")

    async def audit(self, request: Request) -> Response:
        return await self._read(request, "/v1/audit")

    async def status(self, request: Request) -> Response:
        return await self._read(request, "/v1/status")

    async def _read(self, request: Request, path: str) -> Response:
        # A GET comes through read_route.py; a HEAD comes here, and is read the same way.
        action, allowed = READS[path]
        try:
            fields = read_fields(action, allowed, query_of(request.scope))
        except Invalid as refusal:
            return _json(refusal.reply())
        return await self.dispatch(request, fields)

    async def metrics(self, request: Request) -> Response:
        def scrape() -> bytes:
            counted = generate_latest(self.app.metrics) if self.app.metrics is not None else b""
            return counted + generate_latest(self.gauges) + self.alerts.render()

        return Response(await run_in_threadpool(scrape), media_type=CONTENT_TYPE_LATEST)

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(document())


def create_app(
    app: App,
    sources: Sequence[Source] | None = None,
    host: str = "127.0.0.1",
    links: Links | None = None,
    view: NodeView | None = None,
) -> ASGIApp:
    """The ASGI app over `app`. `sources` default to the config's; `host` is where it will listen;
    `links` checks the operator's one-time dashboard links (serve publishes its key); `view` is how the
    firing node stands, for /metrics, when it is not `app.node` (serve's node runs in another process)."""
    from cronwright.fronts.ui.site import create_ui  # the dashboard's pages import this module

    if sources is None:
        tokens = Tokens(app.config.source(name) for name in app.config.sources)
        # ops hook (issue 38): a reload swaps the sources and their tokens; sessions stay as they are.
        app.on_reload.append(lambda config: tokens.replace(config.source(n) for n in config.sources))
    else:
        tokens = Tokens(sources)
    failures = AuthFailures(app.node.clock)
    dashboard, _ = create_ui(app, tokens.source, links, failures)
    api = _Api(app, failures, view)
    call = CallRoute(app.protocol.handle, api.limit, SOURCE_KEY)
    reads = ReadRoute(app.protocol.dispatch, SOURCE_KEY)
    mcp_server = mcp_front.build_server(app.protocol, source_of)
    # Stateless: each MCP request is checked on its own token, and no session outlives it.
    mcp_server.streamable_http_app(
        stateless_http=True, json_response=True, max_request_body_size=api.limit, host=host
    )
    manager = mcp_server.session_manager

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    starlette = Starlette(
        routes=[
            Route("/v1/call", call, methods=["POST"]),  # BearerAuth hands it its POSTs before Starlette
            _get("/v1/jobs", api.jobs),
            _get("/v1/jobs/{name}", api.job),
            _get("/v1/runs", api.runs),
            _get("/v1/audit", api.audit),
            _get("/v1/status", api.status),
            _get("/metrics", api.metrics),
            _get("/healthz", api.healthz),
            _get("/openapi.json", api.openapi),
            # POST only: a stateless server has no session to end (DELETE) and no stream of its own to
            # offer (GET), and the MCP specification lets it answer both 405, as the route then does.
            Route("/mcp", _TypedAnswers(StreamableHTTPASGIApp(manager), api.limit), methods=["POST"]),
            Mount("/ui", dashboard),
        ],
        exception_handlers={HTTPException: _http_error, Exception: _crash},
        lifespan=lifespan,
    )
    return BearerAuth(starlette, tokens, failures, call, reads)


_JSON_RPC_MESSAGE: TypeAdapter[JSONRPCMessage] = TypeAdapter(JSONRPCMessage)


class _TypedAnswers:
    """The MCP SDK's answers, each with the Content-Type its body has (as /openapi.json says): it sends
    some refusals as bare text with none, and its 202 with `application/json` and no body at all.
    (A class, not a function: Starlette calls a plain function as a request handler.)"""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, complete = await _read_body(receive, self.limit)
        if complete:
            # The document's schema is the SDK's models' own, held strictly here (the SDK is lenient).
            refusal = _json_rpc_problem(body)
            if refusal is not None:
                answer = JSONResponse({"jsonrpc": "2.0", "id": None, "error": refusal}, 400)
                await answer(scope, receive, send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": not complete}
            return await receive()

        start: Message | None = None

        async def send_typed(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message  # held until the first body part tells whether there is a body
                return
            if start is not None and message["type"] == "http.response.body":
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-type"]
                typed_as = dict(start.get("headers", [])).get(b"content-type")
                empty = not message.get("body") and not message.get("more_body")
                if not empty:
                    headers.append((b"content-type", typed_as or b"text/plain; charset=utf-8"))
                await send({**start, "headers": headers})
                start = None
            await send(message)

        await self.app(scope, replay, send_typed)


def _json_rpc_problem(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error for a body that is not one JSON-RPC message, held strictly to the SDK's models
    (which validate leniently: `"code": false` passes as 0); None for a message."""
    try:
        data = json.loads(body)
    except ValueError as error:
        return {"code": -32700, "message": f"Parse error: the body is not JSON: {error}"}
    try:
        _JSON_RPC_MESSAGE.validate_python(data, strict=True)
        return None
    except ValidationError as error:
        problems = error.errors(include_url=False)
    # Of the four shapes a message may have, the one its keys say it meant to be.
    keys = data if isinstance(data, dict) else {}
    meant = next((kind for key, kind in _MESSAGE_KINDS if key in keys), "JSONRPCNotification")
    problem = next((p for p in problems if p["loc"][:1] == (meant,)), problems[0])
    where = ".".join(str(part) for part in problem["loc"][1:]) or "the message"
    return {"code": -32600, "message": f"Invalid Request: {where}: {problem['msg']}"}


# Which shape a JSON-RPC message meant to have, by the first of these keys it holds.
_MESSAGE_KINDS = (("error", "JSONRPCError"), ("result", "JSONRPCResponse"), ("id", "JSONRPCRequest"))


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The request's body, and whether it is whole: reading stops past `limit` bytes (the app refuses it)."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), False
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if not message.get("more_body"):
            return b"".join(parts), True
        if size > limit:
            return b"".join(parts), False


def _get(path: str, endpoint: Callable[[Request], Awaitable[Response]]) -> Route:
    return Route(path, endpoint, methods=["GET"])


def _source(request: Request) -> Source:
    found = source_of(request)
    assert found is not None, "BearerAuth runs before every route that needs a source"
    return found


def _json(reply: Reply) -> JSONResponse:
    retry_after = reply.get("retry_after")
    headers = {"Retry-After": str(retry_after)} if isinstance(retry_after, int) else None
    return JSONResponse(reply, status_code=status_of(reply), headers=headers)


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    code = "not_found" if error.status_code == 404 else "invalid"
    headers = dict(error.headers or {})
    if error.status_code == 405 and "Allow" in headers:
        message = f"{request.method} is not served at {request.url.path}; it serves {headers['Allow']}"
    else:
        message = f"no route {request.method} {request.url.path}; /openapi.json lists the routes"
    # A 405 keeps Starlette's Allow header: the methods the route does serve.
    return JSONResponse(
        {"ok": False, "error": code, "message": message}, status_code=error.status_code, headers=headers
    )


async def _crash(request: Request, error: Exception) -> Response:
    # The traceback goes to the server's log, never to the client.
    return JSONResponse(
        {"ok": False, "error": "internal", "message": "the server failed on this request; see its log"},
        status_code=500,
    )


# --- serving --------------------------------------------------------------------------------------------


class Serving:
    """An ASGI app served by uvicorn on a thread, on a socket bound at construction, so that a bad or busy
    address fails at once, in the caller's thread (or on a listening socket it is given: `listening`).

    The server never ticks: uvicorn's own main loop wakes every 100 ms (to refresh its Date header and to
    look at `should_exit`), which would make an idle `serve` wake ten times a second (DESIGN semantic 25).
    Here its loop waits on an event that `stop` sets, and the Date header is stamped on each response.
    """

    def __init__(
        self, asgi: ASGIApp, listen: str | socket.socket, on_exit: Callable[[], None] | None = None
    ) -> None:
        self._socket = listen if isinstance(listen, socket.socket) else listening(listen)
        config = uvicorn.Config(
            DateHeader(asgi),
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=5,
            date_header=False,
            # The client's address is the TCP peer's, never a header it sets itself: trusting loopback's
            # X-Forwarded-For would let any local caller pick a fresh address per wrong token.
            proxy_headers=False,
        )
        self._server = _Uvicorn(config)
        self._on_exit = on_exit
        self._thread = threading.Thread(target=self._run, name="cronwright-http", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self, timeout: float = 30.0) -> None:
        """Starts serving; returns once the server accepts requests, or raises if it could not start."""
        self._thread.start()
        self._server.up.wait(timeout)
        if not self._server.started:
            self.stop()
            raise RuntimeError(f"the HTTP server on {self.url} did not start; see the log")

    def stop(self, timeout: float = 30.0) -> None:
        """Stops accepting, lets requests in progress finish (at most 5 s), and closes the socket."""
        self._server.exit_soon()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._socket.close()

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._server.up.set()
            if self._on_exit is not None:
                self._on_exit()


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, which tells when it is up instead of being polled, and whose main loop sleeps
    until it is told to exit instead of ticking."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.up = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exit: asyncio.Event | None = None
        self._lock = threading.Lock()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        with self._lock:
            self._loop, self._exit = asyncio.get_running_loop(), asyncio.Event()
            if self.should_exit:
                self._exit.set()
        await super().startup(sockets)
        self.up.set()

    async def main_loop(self) -> None:
        # uvicorn's loop also counts requests against limit_max_requests and calls callback_notify, once a
        # tick; neither is configured here, so waiting for the exit event is all that is left of it.
        assert self._exit is not None
        await self._exit.wait()

    def exit_soon(self) -> None:
        """Asks the server to stop, from any thread: it wakes the loop, which is otherwise asleep."""
        with self._lock:
            self.should_exit = True
            if self._loop is not None and self._exit is not None:
                with contextlib.suppress(RuntimeError):  # the loop has already closed
                    self._loop.call_soon_threadsafe(self._exit.set)


class DateHeader:
    """Stamps each response with its `Date` header (RFC 9110 asks an origin server with a clock for one),
    which uvicorn would otherwise refresh on a timer once a second."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._second = -1
        self._value = b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def send_dated(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [(b"date", self._now()), *message.get("headers", [])]}
            await send(message)

        await self._app(scope, receive, send_dated)

    def _now(self) -> bytes:
        second = int(time.time())
        if second != self._second:
            self._second, self._value = second, formatdate(second, usegmt=True).encode()
        return self._value
