"""LISTEN on a store's channel and wake the node: how a change made on one node reaches the others at once.

Every transaction that changes a job sends `NOTIFY channel, token` (PostgreSQL delivers it at commit,
once per transaction, and never after a rollback). A listener holds one dedicated connection that does
nothing but wait for those, and calls `wake` for each that another store sent; a node's own changes
need no wake-up, since the node already knows of them.

Nothing here polls the database. The connection idles until a notification arrives; TCP keepalives find
a silently dead server. When the connection is lost, the listener reconnects with exponential backoff,
and wakes the node once it is back, because changes made meanwhile were not announced to it. Until then
the node's own safety interval still brings it to the store once a minute.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger("cronwright.store")

_BACKOFF_FIRST = 0.5
_BACKOFF_MAX = 30.0
# How long one wait for notifications lasts before the loop checks whether it should stop. `stop`
# normally ends the wait at once with a notification of its own; this only bounds a stop while the
# server cannot be reached. It is a local timer: no query goes to the server when it expires.
_WAIT = 5.0
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
        self._poke(self._token + _STOP)
        self._thread.join(_WAIT + 2.0)
        self._forget(self)

    __call__ = stop

    def _run(self) -> None:
        delay = _BACKOFF_FIRST
        missed = False
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
            self._wake()  # changes made while the connection was down were announced to nobody

    def _listen(self, connection: psycopg.Connection[Any]) -> None:
        while not self._stopping.is_set():
            for notice in connection.notifies(timeout=_WAIT):
                if self._stopping.is_set():
                    return
                if not notice.payload.startswith(self._token) and not notice.payload.endswith(_STOP):
                    self._wake()
