"""LISTEN on a store's channel and wake the node: how a change made on one node reaches the others at once.

Every transaction that changes a job sends `NOTIFY channel, token` (PostgreSQL delivers it at commit,
once per transaction, and never after a rollback). A listener holds one dedicated connection that does
nothing but wait for those, and calls `wake` for each that another store sent; a node's own changes
need no wake-up, since the node already knows of them.

Nothing here polls the database. The connection idles until a notification arrives; TCP keepalives find
a silently dead server. When the connection is lost, the listener reconnects with exponential backoff,
and wakes the node once it is back, because changes made meanwhile were not announced to it. Until then
the node's own safety interval still brings it to the store once a minute. The first LISTEN wakes the
node once too: a change committed between the node's first read of the store and that LISTEN would
otherwise wait for the safety interval.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger("cronwright.store")

_BACKOFF_FIRST = 0.5
_BACKOFF_MAX = 30.0
# How long `stop` waits for the listening thread to end. The thread never waits on a timer: it sleeps
# in select() on the connection and on a pipe that `stop` writes to (psycopg's own `notifies()` would
# wake every 100 ms to look for Ctrl-C), so an idle node does not wake (DESIGN semantic 25).
_STOP_JOIN = 7.0
_STOP = ":stop"


class Listener:
    def __init__(
        self,
        conninfo: str,
        kwargs: dict[str, Any],
        channel: str,
        token: str,
        wake: Callable[[], None],
        poke: Callable[[str], None],
        forget: Callable[[Listener], None],
    ) -> None:
        self._conninfo = conninfo
        self._kwargs = kwargs
        self._channel = channel
        self._token = token
        self._wake = wake
        self._poke = poke
        self._forget = forget
        self._stopping = threading.Event()
        self._stop_r, self._stop_w = os.pipe()
        self.listening = threading.Event()
        self.trouble: tuple[datetime, str] | None = None
        self._thread = threading.Thread(target=self._run, name="cronwright-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stops listening and closes the connection (waiting a few seconds at most)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        os.write(self._stop_w, b"x")
        self._poke(self._token + _STOP)
        self._thread.join(_STOP_JOIN)
        self._forget(self)
        if not self._thread.is_alive():
            os.close(self._stop_r)
            os.close(self._stop_w)

    __call__ = stop

    def _run(self) -> None:
        delay = _BACKOFF_FIRST
        # Changes made before the LISTEN took effect were announced to nobody: those of the moments
        # after the node's first pass read the store (it passes as this thread connects), and those made
        # while a lost connection was down. Each LISTEN that succeeds wakes the node once for them.
        missed = True
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, **self._kwargs) as connection:
                    connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
                    self._back(missed)
                    delay, missed = _BACKOFF_FIRST, False
                    self._listen(connection)
            except psycopg.Error as error:
                missed = True
                self.listening.clear()
                if self._stopping.is_set():
                    break
                if self.trouble is None:
                    self.trouble = (datetime.now(UTC).replace(microsecond=0), " ".join(str(error).split()))
                    log.warning("lost the connection that listens for changes; retrying: %s", error)
                self._stopping.wait(delay)
                delay = min(delay * 2, _BACKOFF_MAX)
        self.listening.clear()

    def _back(self, missed: bool) -> None:
        if self.trouble is not None:
            log.warning("listening for changes again")
        self.trouble = None
        self.listening.set()
        if missed:
            self._wake()

    def _listen(self, connection: psycopg.Connection[Any]) -> None:
        while not self._stopping.is_set():
            # What has arrived (and what LISTEN's reply brought along) first, without waiting; then sleep
            # until the server sends more, or `stop` writes to the pipe. A dead connection reads as ready,
            # and the next `notifies` raises, which reconnects.
            for notice in connection.notifies(timeout=0):
                if self._stopping.is_set():
                    return
                if not notice.payload.startswith(self._token) and not notice.payload.endswith(_STOP):
                    self._wake()
            select.select([connection.fileno(), self._stop_r], [], [])
