"""One thread that waits for the replies of every python worker running a call begun without a thread of
its own (`Pool.begin`).

Why: a thread per call, blocked on its worker's pipe, costs the node's process a wake-up and a handful of
GIL hand-offs per call, on threads that fight the scheduling pass for the one GIL: about 100 us of CPU a
call, against about 15 us for one thread that polls every worker's pipe at once (a component figure:
16 warm workers running a no-op). The thread sleeps in poll() while nothing is watched, and ends when its
pool closes and the last call it watched has ended.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Literal, Protocol

log = logging.getLogger("cronwright.targets")

# How a watched call ended: its reply, its worker's end of file (or garbage), or its deadline.
Event = dict[str, Any] | Literal["died", "late"]


class Watched(Protocol):
    def fileno(self) -> int:
        """The pipe its replies come on."""
        ...

    def receive(self) -> dict[str, Any] | Literal["died"] | None:
        """Reads what is there (the pipe is readable): the reply once it came, "died", or None for more."""
        ...


class Replies:
    """Thread-safe: `watch` from any thread; each `ended` callback runs on the replies' thread, once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, tuple[Watched, float, Callable[[Event], None]]] = {}
        self._thread: threading.Thread | None = None
        self._closed = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        # Closed with the object, never before: a wake-up written late must never hit a reused fd.
        weakref.finalize(self, _close_all, self._wake_read, self._wake_write)

    def watch(self, watched: Watched, deadline: float, ended: Callable[[Event], None]) -> None:
        """Calls `ended` when `watched` has replied or died, or at `deadline` (monotonic) if neither."""
        with self._lock:
            self._watched[watched.fileno()] = (watched, deadline, ended)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="cronwright-replies", daemon=True)
                self._thread.start()
        self._wake()

    def close(self) -> None:
        """The thread ends once the calls it watches have ended (their workers killed by the pool)."""
        with self._lock:
            self._closed = True
        self._wake()

    def _loop(self) -> None:
        poller = select.poll()
        poller.register(self._wake_read, select.POLLIN)
        registered: set[int] = set()
        while True:
            with self._lock:
                watched = dict(self._watched)
                if self._closed and not watched:
                    self._thread = None
                    return
            for fd in watched.keys() - registered:
                poller.register(fd, select.POLLIN)
            for fd in registered - watched.keys():
                poller.unregister(fd)
            registered = set(watched)
            first = min((deadline for _, deadline, _ in watched.values()), default=None)
            timeout = None if first is None else max(0, int((first - time.monotonic()) * 1000) + 1)
            for fd, _ in poller.poll(timeout):
                if fd == self._wake_read:
                    self._drain()
                elif fd in watched:
                    self._receive(fd, *watched[fd])
            now = time.monotonic()
            for fd, (_, deadline, ended) in watched.items():
                if deadline <= now:
                    self._end(fd, ended, "late")

    def _receive(self, fd: int, watched: Watched, _deadline: float, ended: Callable[[Event], None]) -> None:
        try:
            event = watched.receive()
        except OSError:
            event = "died"
        if event is not None:
            self._end(fd, ended, event)

    def _end(self, fd: int, ended: Callable[[Event], None], event: Event) -> None:
        with self._lock:
            if self._watched.get(fd, (None, 0.0, None))[2] is not ended:
                return  # ended already (a reply and its deadline in one round)
            del self._watched[fd]
        try:
            ended(event)
        except Exception:  # a bug in one call's ending must not stop the replies of the others
            log.exception("the end of a python call could not be handled")

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_read, 4096):
                pass

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # the pipe is full of wake-ups already
            os.write(self._wake_write, b".")


def _close_all(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
