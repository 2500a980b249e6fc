"""The fronts' wake-ups of the serving node, folded together under a burst of changes.

Each change the fronts make (a create, a pause, ...) wakes the node with SIGUSR1, and each wake-up costs
the node a whole scheduling pass (due jobs, orphans, its next wake, its lease, the state it relays back).
Under a burst of creates that pass, repeated per create, took more CPU than the create itself. Here the
first change after a quiet spell still signals at once (leading edge), so a lone create that is due now
fires as promptly as before; changes within `WINDOW` of a signal are folded into one trailing signal at
the window's end. Every change is followed by a signal sent after it, so none waits for the node's next
safety wake-up; the most a change waits for its signal is `WINDOW`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# The longest a change waits for the node to be woken for it, and so the most a create due now can fire
# late, and only when it came within WINDOW of another change. 10 ms is below what a run's own start
# takes (a fork-server start, a worker's reply) and what the node promises for a due firing, yet folds
# a burst of creates at 500 a second into about one pass per five creates (100 passes a second at most).
WINDOW = 0.010

Timer = Callable[[float, Callable[[], None]], None]


class CoalescedWake:
    """Calls `signal` for changes, at most once per `window` (see the module's docstring).

    `clock` (seconds, monotonic) and `timer` (runs a callable after a delay, on some other thread) are
    injectable so that tests can drive the window without waiting for it."""

    def __init__(
        self,
        signal: Callable[[], None],
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
        timer: Timer | None = None,
    ) -> None:
        self._signal = signal
        self._window = window
        self._clock = clock
        self._timer: Timer = timer if timer is not None else _TimerThread().call_after
        self._lock = threading.Lock()
        self._quiet_from = float("-inf")  # no signal before this instant, or a trailing one is due
        self._trailing = False  # a trailing signal is scheduled and not yet sent: it covers new changes

    def changed(self) -> None:
        """A change was made (committed): the node is signalled now, or at the end of the window."""
        with self._lock:
            if self._trailing:
                return  # the trailing signal is sent after this change: it covers it
            now = self._clock()
            if now < self._quiet_from:
                self._trailing = True
                self._timer(self._quiet_from - now, self._send_trailing)
                return
            self._quiet_from = now + self._window
        self._signal()

    def _send_trailing(self) -> None:
        with self._lock:
            # Cleared before the signal goes: a change made from here on is not covered by it (it may
            # have missed the node's read), so it schedules a signal of its own.
            self._trailing = False
            self._quiet_from = self._clock() + self._window
        self._signal()


class _TimerThread:
    """One daemon thread that runs a callable after a delay; it sleeps without a timeout while nothing is
    scheduled, so an idle serve is not woken by it (semantic 25). A thread is started on first use."""

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._due: list[tuple[float, Callable[[], None]]] = []
        self._thread: threading.Thread | None = None

    def call_after(self, delay: float, action: Callable[[], None]) -> None:
        with self._ready:
            self._due.append((time.monotonic() + delay, action))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cronwright-wake", daemon=True)
                self._thread.start()
            self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._due:
                    self._ready.wait()
                at, action = min(self._due, key=lambda due: due[0])
                left = at - time.monotonic()
                if left > 0:
                    self._ready.wait(left)
                    continue  # woken early (a new entry) or on time: look again
                self._due.remove((at, action))
            action()
