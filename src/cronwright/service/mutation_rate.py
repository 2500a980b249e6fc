"""Token buckets: per-source rate limits on mutations (`max_mutations_per_minute`); the throttle of wrong
tokens (fronts/http/throttle.py) uses the same bucket.

The buckets live in this node's memory: each node limits what reaches it, so N nodes behind one
balancer let through up to N times the rate, and a restart refills every bucket. They read the node's
clock, never the wall clock, so tests drive them with a ManualClock.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import datetime

from cronwright.clock import Clock
from cronwright.core.sources import Source
from cronwright.errors import RateLimited

# What a bucket counts: every request that changes a job or starts a run.
MUTATIONS = frozenset({"create_job", "update", "delete", "pause", "resume", "run_now", "backfill"})


@dataclass(slots=True)
class Bucket:
    tokens: float
    at: datetime

    def refill(self, now: datetime, capacity: float, per_second: float) -> None:
        """Adds what the time since the last refill earned, up to `capacity`. A clock that stepped back
        refills nothing (and never drains the bucket)."""
        elapsed = max((now - self.at).total_seconds(), 0.0)
        self.tokens = min(capacity, self.tokens + elapsed * per_second)
        self.at = max(now, self.at)

    def wait(self, per_second: float) -> int:
        """The whole seconds, at least 1, until the bucket holds a token again."""
        return max(1, math.ceil((1 - self.tokens) / per_second))


class MutationLimiter:
    """A bucket per source holds up to a minute's worth of mutations and refills continuously, so a
    source may burst its whole minute at once, then goes on at its rate."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._buckets: dict[str, Bucket] = {}
        self._lock = threading.Lock()

    def take(self, source: Source) -> None:
        """Spends one token of the source's bucket, or refuses with `rate_limited` and `retry_after`,
        the whole seconds until the next token."""
        per_minute = source.max_mutations_per_minute
        if per_minute is None or source.operator:
            return
        now = self._clock.now()
        per_second = per_minute / 60
        with self._lock:
            bucket = self._buckets.get(source.name)
            if bucket is None:
                bucket = self._buckets[source.name] = Bucket(float(per_minute), now)
            bucket.refill(now, float(per_minute), per_second)
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return
            retry_after = bucket.wait(per_second)
        raise RateLimited(
            f"source '{source.name}' made more than its {per_minute} changes a minute "
            f"(max_mutations_per_minute); retry after {retry_after} s",
            retry_after=retry_after,
            max_mutations_per_minute=per_minute,
        )
