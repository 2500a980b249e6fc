"""A node's lease, kept on the monotonic clock and beaten on its own timer (DESIGN semantic 30).

A node with runs in flight must beat at least every `lease_beat`, or its peers take its runs for dead.
Beating from the scheduling pass alone fails two ways: a pass that takes longer than the lease (a burst of
thousands of settlements, a slow store) starves the beat, and a wall clock stepped back makes "is a beat
due?" answer no until the clock has caught up. So the keeper times beats on the monotonic clock, on a
thread of its own that no pass holds up, and sleeps without waking while nothing is in flight (an idle
node's beat rides on its passes, semantic 25).

The other side of a lease, the judging, never trusts one node's wall clock either: PostgreSQL judges on the
server's clock; on SQLite every process shares one host clock, and a node that sees its own wall clock
jump forward (`StepGuard`) holds off judging its peers for a lease, so that they beat again first.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

log = logging.getLogger("cronwright.lease")


class LeaseKeeper:
    """Beats through `beat` at least every `interval` seconds of monotonic time while `busy`."""

    def __init__(
        self,
        beat: Callable[[], None],
        interval: timedelta,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._beat = beat
        self._interval = interval.total_seconds()
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last: float | None = None
        self._beaten = False  # a beat since the pass last asked (`took_beat`)
        self._busy = False
        self._changed = threading.Event()
        self._beat_done = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def beat_if_due(self, force: bool = False) -> bool:
        """Beats now if a beat is due (or `force`), on the caller's thread; returns whether it beat.

        A failed beat raises (the store is down): the caller's pass fails, and the keeper tries again
        at its next turn."""
        with self._lock:
            now = self._monotonic()
            if not force and self._last is not None and now - self._last < self._interval:
                return False
            self._beat()
            self._last, self._beaten = now, True
            self._beat_done.set()
            return True

    def took_beat(self) -> bool:
        """Whether the lease was beaten since the last call: a pass reconciles its claims after a beat."""
        with self._lock:
            beaten, self._beaten = self._beaten, False
            return beaten

    def seconds_to_next_beat(self) -> float:
        with self._lock:
            if self._last is None:
                return 0.0
            return max(0.0, self._last + self._interval - self._monotonic())

    def busy(self, busy: bool) -> None:
        """Runs are in flight (the keeper beats on its timer) or none are (it sleeps, never waking)."""
        if busy != self._busy:
            self._busy = busy
            self._changed.set()

    def nudge(self) -> None:
        """Makes the keeper's thread look at its timer now (for an injected clock that moved)."""
        self._beat_done.clear()
        self._changed.set()

    def wait_for_beat(self, timeout: float) -> bool:
        """Whether a beat happened since the last `nudge`, waiting up to `timeout` seconds for one."""
        return self._beat_done.wait(timeout)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._keep, name="cronwright-lease", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._closed = True
        self._changed.set()
        if self._thread is not None:
            self._thread.join(5)

    def _keep(self) -> None:
        while not self._closed:
            # Idle: no timeout, so no wake-up until runs start. Busy: until the next beat is due.
            self._changed.wait(self.seconds_to_next_beat() if self._busy else None)
            self._changed.clear()
            if self._closed or not self._busy:
                continue
            try:
                self.beat_if_due()
            except Exception as error:
                # The store is down: the pass sees it too, and degrades; the keeper tries again in a
                # beat, and then a live node's lease is renewed as soon as the store answers.
                log.warning("the lease could not be renewed: %s", error)
                with self._lock:
                    self._last = self._monotonic()


class StepGuard:
    """Tells a wall clock that jumped forward from time that passed, by the monotonic clock beside it.

    After such a step, every peer's last beat looks old on this node's wall clock until each has beaten
    again: for one lease the guard says to hold off judging leases. A step back needs no guard: beats
    then look younger, never older, and the keeper goes on beating on the monotonic clock.
    """

    def __init__(self, ttl: timedelta, tolerance: timedelta) -> None:
        self._ttl = ttl.total_seconds()
        self._tolerance = tolerance.total_seconds()
        self._last: tuple[datetime, float] | None = None
        self._hold_until = float("-inf")

    def may_judge(self, wall: datetime, monotonic: float) -> bool:
        """Whether leases may be judged on `wall` now; notes a forward step of the wall clock."""
        if self._last is not None:
            last_wall, last_monotonic = self._last
            jumped = (wall - last_wall).total_seconds() - (monotonic - last_monotonic)
            if jumped > self._tolerance:
                log.warning(
                    "the wall clock jumped %.0fs ahead: peers' leases are judged again in %.0fs, once"
                    " they have beaten on the new time",
                    jumped,
                    self._ttl,
                )
                self._hold_until = monotonic + self._ttl
        self._last = (wall, monotonic)
        return monotonic >= self._hold_until
