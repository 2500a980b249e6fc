"""The wait of serve's main thread until it must stop, woken by a signal whatever thread the kernel gave it.

A signal sent to a process goes to any one of its threads that does not block it, and Python runs the
handler on the main thread only, when that thread next runs Python code. A main thread blocked in a lock's
wait (`threading.Event.wait`) runs again only if the signal came to it: one that came to another thread
(serve's node loop, say) was left for the next signal to find. A SIGTERM went unheeded that way, and serve
did not stop, in a CI run of a test that had just stopped and continued it (SIGSTOP, SIGCONT). So the main
thread waits in a read of the pipe Python's own C handler writes to, from whatever thread the signal came
to (`signal.set_wakeup_fd`): the read returns, the handlers run on the main thread, and it looks again.
Idle, it sleeps in that read and never wakes (semantic 25).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading


class MainWait:
    """`set` from any thread or a signal handler; `wait` on the main thread, after `install` there."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # a full pipe holds a wake-up already: never wait to write one

    def install(self) -> None:
        """From the main thread (Python's rule for the wake-up fd), before the signals it waits for come."""
        signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)

    def set(self) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):  # BlockingIOError: full, so the reader wakes anyway
            os.write(self._write, b"\0")

    def is_set(self) -> bool:
        return self._stopped.is_set()

    def wait(self) -> None:
        """Until `set`. A wake-up by another signal (SIGUSR1, SIGHUP) runs its handler and reads on."""
        while not self._stopped.is_set():
            # The handlers of the signals that woke the read run before the loop looks again (at its jump
            # back, where the interpreter runs pending signal handlers), so a `set` by a handler is seen.
            os.read(self._read, 512)
