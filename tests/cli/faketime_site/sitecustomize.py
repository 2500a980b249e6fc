"""Loaded (through PYTHONPATH) only by the cronwright processes that the black-box tests run under faketime.

The tests fake the wall clock and keep the monotonic clock real (FAKETIME_DONT_FAKE_MONOTONIC=1), so that
lock and queue timeouts, which Python waits for with sem_clockwait on CLOCK_MONOTONIC, behave. libfaketime
0.9.10 still rewrites clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ...), which time.sleep uses, into an
invalid request (EINVAL), so `time.sleep` (and subprocess's wait with a timeout, built on it) would fail.
This sleeps on a lock's timeout instead: the same real duration, and nothing else changes. Without the
monotonic clock left real, the lock timeouts hang instead.
"""

import threading
import time
from typing import SupportsIndex

_never_released = threading.Lock()
_never_released.acquire()


def _sleep(seconds: float | SupportsIndex) -> None:
    timeout = float(seconds)
    if timeout < 0:
        raise ValueError("sleep length must be non-negative")
    _never_released.acquire(timeout=timeout)


time.sleep = _sleep
