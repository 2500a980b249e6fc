"""Live updates: a server-sent event stream that says "changed" when the node learns of a change.

The stream waits on the app's `Changes` (woken by the node's own mutations, runs and notifications, by a
CLI's SIGUSR1 and by PostgreSQL's NOTIFY); it never looks on a timer of its own. A burst of changes makes
one event. The event names nothing: the page reads itself again through the protocol, as its caller.
sse-starlette's keep-alive comment every PING seconds is the only other thing it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from cronwright.fronts.ui.context import dashboard, session

PING = 30  # seconds between keep-alive comments, while a page is open
SETTLE = 0.2  # seconds a burst of changes gets to end before the one event it makes


def routes() -> list[BaseRoute]:
    return [Route("/events", events, methods=["GET"], name="events")]


class _Stream(EventSourceResponse):
    """sse-starlette's response without its shutdown watcher, which polls twice a second, forever, on
    the loop of the first stream it served: an idle serve that once had a dashboard open would never
    sleep again (semantic 25). uvicorn's graceful shutdown ends the streams instead."""

    async def _listen_for_exit_signal_with_grace(self) -> None:
        await asyncio.Event().wait()


async def events(request: Request) -> Response:
    return _Stream(_changes(request), ping=PING)


async def _changes(request: Request) -> AsyncIterator[dict[str, str]]:
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()

    def wake() -> None:  # on the node's thread; the loop may have closed meanwhile
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(woken.set)

    board = dashboard(request)
    changes = board.app.changes
    stop = changes.listen(wake)
    try:
        yield {"event": "ready", "data": "listening"}
        count = 0
        while True:
            await woken.wait()
            if changes.closed:
                return  # serve is stopping: the page's EventSource will try again, elsewhere or later
            await asyncio.sleep(SETTLE)
            woken.clear()
            if board.sessions.find(session(request).id, board.now()) is None:
                return  # logged out, or ended: the stream ends with its session
            count += 1
            yield {"event": "changed", "data": str(count)}
    finally:
        stop()
