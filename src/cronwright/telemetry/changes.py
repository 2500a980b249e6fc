"""A signal that something a reader may show has changed: a job was written, a run was recorded, a
notification was written, or another process or node said so (SIGUSR1, PostgreSQL NOTIFY).

It carries no detail, so a listener learns nothing it could not read through the protocol: it only knows
to read again. With no listener it costs a lock and an empty loop, and it never starts a timer, so an idle
`serve` with no dashboard open stays asleep (DESIGN semantic 25).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from cronwright.core.events import Event


class Changes:
    """Listeners called, on the thread that saw the change, each time something may have changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self.closed = False

    def changed(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def emit(self, event: Event) -> None:
        """As an event sink: every event of the node (a run recorded, a skip, an expiry) is a change."""
        self.changed()

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Adds `listener`; returns the function that removes it. A listener must be quick and must not
        raise: it runs on the node's threads."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def close(self) -> None:
        """The process is stopping: listeners are called once more, and find `closed` set."""
        self.closed = True
        self.changed()

    @property
    def listening(self) -> int:
        with self._lock:
            return len(self._listeners)
