"""`POST /v1/call`, the protocol over HTTP, as a bare ASGI app: every create, pause and run_now an agent
sends comes this way, so it skips what a Starlette route costs per request (its router, its two exception
middlewares, a Request, a JSONResponse, anyio's thread hand-off), which took as much of the fronts' CPU
as the create itself. The reply is the same, byte for byte, as JSONResponse would render it.

The bearer token was checked before (asgi.py's BearerAuth put the source in the scope); the protocol's
work, which waits on the store, runs on a thread of this route's pool, never on the event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from cronwright.core.sources import Source
from cronwright.errors import MessageTooLarge
from cronwright.fronts.http.statuses import Reply, status_of

# As many protocol calls at once as anyio's default thread limiter let through before. One pool for the
# process, however many apps it builds (the tests build hundreds): its threads start as calls need them,
# and an idle one sleeps in its queue without a timeout (semantic 25).
THREADS = 40
POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="cronwright-call")

Handle = Callable[[bytes, Source], "dict[str, Any] | None"]


class CallRoute:
    """Answers `POST /v1/call` for the source found in the scope under `source_key`."""

    def __init__(self, handle: Handle, limit: int, source_key: str) -> None:
        self._handle = handle
        self._limit = limit
        self._source_key = source_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        source = scope.get(self._source_key)
        assert isinstance(source, Source), "BearerAuth runs before this route"
        await respond(send, lambda: self._reply(scope, receive, source))

    async def _reply(self, scope: Scope, receive: Receive, source: Source) -> Reply | None:
        body = await _read_capped(scope, receive, self._limit)
        if body is None:
            return MessageTooLarge(
                f"the message is larger than the limit of {self._limit} bytes (max_message_bytes)"
            ).reply()
        if body is _DISCONNECTED:
            return None  # the client left: nobody to answer
        loop = asyncio.get_running_loop()
        reply = await loop.run_in_executor(POOL, self._handle, body, source)
        assert reply is not None  # BearerAuth let only known sources through
        return reply


async def respond(send: Send, reply_of: Callable[[], Awaitable[Reply | None]]) -> None:
    """Sends the reply `reply_of` makes (None: there is no one to answer). If making it raised, the client
    gets a bare 500, as from the app's other routes (asgi.py's _crash), and the error goes on to uvicorn,
    which logs its traceback; an error while sending goes on alone."""
    try:
        reply = await reply_of()
    except Exception:
        await answer(send, _CRASH, 500)
        raise
    if reply is not None:
        await answer(send, reply)


async def answer(send: Send, reply: Reply, status: int | None = None) -> None:
    """Sends `reply` as the whole response."""
    code, headers, body = rendered(reply, status)
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def rendered(reply: Reply, status: int | None = None) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The status, headers and body JSONResponse would send for `reply` (asgi.py's `_json`)."""
    body = json.dumps(reply, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()
    headers: list[tuple[bytes, bytes]] = []
    retry_after = reply.get("retry_after")
    if isinstance(retry_after, int):
        headers.append((b"retry-after", str(retry_after).encode("latin-1")))
    headers.append((b"content-length", str(len(body)).encode("latin-1")))
    headers.append((b"content-type", b"application/json"))
    return status if status is not None else status_of(reply), headers, body


_CRASH = {"ok": False, "error": "internal", "message": "the server failed on this request; see its log"}
_DISCONNECTED = b"\0disconnected"  # a sentinel: compared by identity, never a real body


async def _read_capped(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The body, or None as soon as it is known to exceed `limit` (from Content-Length, or while reading);
    `_DISCONNECTED` if the client went away first."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            return None
    body = bytearray()
    while True:
        message: Message = await receive()
        if message["type"] != "http.request":
            return _DISCONNECTED
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(body)
