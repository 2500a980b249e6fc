"""The one clock. Only the node and the fronts read it; everything below takes `now`."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that only moves on, whatever the wall clock does: leases are timed on it."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told: tests drive time with it and never sleep.

    It has a wall side and a monotonic side. `set` and `advance` let time pass (forward, both sides move;
    `set` back is a step of the wall clock alone), and `step` moves the wall clock alone, as an operator
    or a bad NTP server does.
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._monotonic = 1000.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._monotonic

    def set(self, instant: datetime) -> None:
        with self._lock:
            instant = instant.astimezone(UTC)
            self._monotonic += max(0.0, (instant - self._now).total_seconds())
            self._now = instant

    def advance(self, delta: timedelta) -> None:
        self.set(self.now() + delta)

    def step(self, delta: timedelta) -> None:
        """Steps the wall clock by `delta`, forward or back; no time passes on the monotonic side."""
        with self._lock:
            self._now += delta
