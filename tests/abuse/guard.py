"""Limits for abuse tests: a wall-clock limit on a block, and the checks every reply must pass.

Not named `conftest`, so it never shadows tests/conftest.py.
"""

from __future__ import annotations

import faulthandler
import json
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any


class Hang(Exception):
    """A block ran past its time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fails the block with `Hang` once it has run `seconds` (SIGALRM, so: POSIX, main thread).

    The alarm interrupts Python code. Should the block be stuck where no Python runs (inside one C
    call), faulthandler is the backstop: at twice the limit it prints every thread's stack and ends the
    process, so CI reports a hang instead of waiting for its own timeout.
    """

    def expire(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(seconds * 2, exit=True)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)


def check_reply(reply: object) -> dict[str, Any]:
    """Every reply is an object with a bool `ok`, and is JSON any client can read back (strict: no NaN,
    and UTF-8 encodable, so no lone surrogate either). Returns it, typed."""
    assert isinstance(reply, dict), reply
    assert isinstance(reply.get("ok"), bool), reply
    text = json.dumps(reply, allow_nan=False, ensure_ascii=False)
    assert json.loads(text.encode("utf-8")) == reply
    if not reply["ok"]:
        assert isinstance(reply.get("error"), str) and isinstance(reply.get("message"), str), reply
    return reply


@dataclass
class Meter:
    """Counts the inputs thrown, and keeps the slowest one, for the report and the bound."""

    limit: float
    count: int = 0
    slowest: float = 0.0
    codes: dict[str, int] = field(default_factory=dict)

    def call(self, send: Callable[[], object]) -> dict[str, Any]:
        start = time.perf_counter()
        reply = send()
        took = time.perf_counter() - start
        self.count += 1
        self.slowest = max(self.slowest, took)
        assert took < self.limit, f"one input took {took:.2f} s (bound {self.limit} s)"
        checked = check_reply(reply)
        code = "ok" if checked["ok"] else str(checked["error"])
        self.codes[code] = self.codes.get(code, 0) + 1
        return checked
