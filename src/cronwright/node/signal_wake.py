"""Waking the node from a signal handler (SIGUSR1: a change made by serve's fronts' process or a CLI)
without taking a lock in the handler.

A signal handler runs on the main thread between two bytecodes, whatever that thread holds, and a second
signal can land inside the first handler. `Node.wake` takes locks (its wake-up event's, the relay's), so a
handler that called it could wait on a lock the node's thread holds and be interrupted there by the next
signal, one level deeper each time, until the process died of a RecursionError (a burst of creates through
HTTP did it). The handler here only writes a byte to a pipe, a system call that takes no Python lock; a
thread blocked on the pipe's other end calls `wake` once for however many bytes it finds. Idle, that thread
sleeps in `read` and never wakes (semantic 25).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

_log = logging.getLogger("cronwright.node")


class SignalWake:
    """Calls `wake` on a thread of its own after each burst of `signum`."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # a full pipe already holds a pending wake-up: drop, never wait
        self._thread = threading.Thread(target=self._run, name="cronwright-wake", daemon=True)

    def install(self, signum: int) -> None:
        """From the main thread (Python's rule for signal handlers)."""
        self._thread.start()
        signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):  # BlockingIOError: full, so a wake-up is pending anyway
            os.write(self._write, b"\0")

    def _run(self) -> None:
        while True:
            try:
                if not os.read(self._read, 4096):
                    return
            except OSError:
                return
            try:
                self._wake()
            except Exception:  # a wake that failed must not end the thread that delivers the next one
                _log.exception("waking the node failed")
