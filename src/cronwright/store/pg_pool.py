"""The PostgreSQL store's connections: opened on demand, reused, and no thread of their own.

psycopg_pool keeps a scheduler thread and three worker threads per pool, and its scheduler wakes at least
every ten minutes even with nothing to do (and shrinks the pool on that timer): an idle `serve` would wake
for it (DESIGN semantic 25). This pool does its work in the caller's thread, when a connection is taken
or given back, and sleeps nowhere but in a caller waiting for a connection while every one is in use.

Health. A connection that came back broken is dropped. One taken from the pool is checked without a
round trip: an idle connection has nothing to read, so one whose socket is readable holds the server's
goodbye (a restart, a terminated backend) or an unexpected message, and only then is it asked (an empty
statement) whether it still works; one that does not is replaced. A server that vanished without a word
is found by the TCP keepalives, or by the statement that meets it, which fails with StoreError; the next
call gets a new connection. A connection that cannot be opened is tried again, with backoff, until the
pool's timeout: a short outage (a restart) delays a call, and only a longer one fails it.

Connections left idle longer than IDLE_CLOSE are closed when the pool is next used (keeping one), so a
burst's extra connections do not stay open for ever, without a timer to do it.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from psycopg import pq

IDLE_CLOSE = 600.0
# A connection that cannot be opened is tried again after 0.25 s, 0.5, 1, 2, 2, ... until the timeout.
_RETRY_FIRST = 0.25
_RETRY_MAX = 2.0

Connection = psycopg.Connection[Any]


class PoolTimeout(psycopg.OperationalError):
    """No connection came free in time (every one was in use)."""


class PoolClosed(psycopg.OperationalError):
    """The pool was closed."""


class Pool:
    def __init__(self, connect: Callable[[], Connection], size: int, timeout: float) -> None:
        self._connect = connect
        self._size = max(1, size)
        self._timeout = timeout
        self._lock = threading.Condition()
        # Idle connections with the monotonic instant each was given back; the newest last (taken first).
        self._idle: list[tuple[Connection, float]] = []
        self._opened = 0  # idle, in use, or being opened
        self._closed = False

    def open(self) -> None:
        """Opens a first connection now: raises psycopg.Error if the server cannot be reached."""
        with self.connection():
            pass

    @contextlib.contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Connection]:
        connection = self._take(self._timeout if timeout is None else timeout)
        try:
            yield connection
        finally:
            self._give_back(connection)

    def _take(self, timeout: float) -> Connection:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                stale = self._stale()
                connection = self._idle.pop()[0] if self._idle else None
                opening = connection is None and self._opened < self._size and not self._closed
                if opening:
                    self._opened += 1
                elif connection is None:
                    left = deadline - time.monotonic()
                    if self._closed:
                        raise PoolClosed("the pool is closed")
                    if left <= 0:
                        raise PoolTimeout(f"no connection came free in {timeout:.1f} s")
                    self._lock.wait(left)
                    continue
            for old in stale:
                _close(old)
            if opening:
                try:
                    return self._open(deadline)
                except BaseException:
                    self._lost()
                    raise
            assert connection is not None
            if _healthy(connection):
                return connection
            _close(connection)
            self._lost()

    def _open(self, deadline: float) -> Connection:
        """A new connection, tried again with backoff until `deadline` (the server may be restarting, or
        a login briefly refused): a short outage delays a call, and only a longer one fails it."""
        delay = _RETRY_FIRST
        while True:
            try:
                return self._connect()
            except psycopg.Error:
                if self._closed or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX)

    def _stale(self) -> list[Connection]:
        """Removes (under the lock) the idle connections unused for IDLE_CLOSE, keeping one; returns them."""
        cutoff = time.monotonic() - IDLE_CLOSE
        stale = [connection for connection, since in self._idle[:-1] if since < cutoff]
        if stale:
            self._idle = [entry for entry in self._idle if entry[0] not in stale]
            self._opened -= len(stale)
        return stale

    def _give_back(self, connection: Connection) -> None:
        status = connection.pgconn.transaction_status
        if status == pq.TransactionStatus.INTRANS or status == pq.TransactionStatus.INERROR:
            with contextlib.suppress(psycopg.Error):
                connection.rollback()
        usable = not connection.closed and connection.pgconn.transaction_status == pq.TransactionStatus.IDLE
        with self._lock:
            if usable and not self._closed:
                self._idle.append((connection, time.monotonic()))
                self._lock.notify()
                return
        _close(connection)
        self._lost()

    def _lost(self) -> None:
        with self._lock:
            self._opened -= 1
            self._lock.notify()

    def close(self) -> None:
        """Closes the idle connections now, and each one in use when it is given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._opened -= len(idle)
            self._lock.notify_all()
        for connection, _ in idle:
            _close(connection)


def _healthy(connection: Connection) -> bool:
    if connection.closed or connection.broken:
        return False
    try:
        poll = select.poll()
        poll.register(connection.fileno(), select.POLLIN)
        if poll.poll(0):
            connection.execute("")  # a goodbye, or an unexpected message: ask
    except (psycopg.Error, OSError, ValueError):
        return False
    return True


def _close(connection: Connection) -> None:
    with contextlib.suppress(psycopg.Error, OSError):
        connection.close()
