"""Per-source rate limits on mutations (`max_mutations_per_minute`): one token bucket per source.

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
class _Bucket:
    tokens: float
    at: datetime


class MutationLimiter:
    """A bucket per source holds up to a minute's worth of mutations and refills continuously, so a
    source may burst its whole minute at once, then goes on at its rate."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
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
                bucket = self._buckets[source.name] = _Bucket(float(per_minute), now)
            # A clock that stepped back refills nothing (and never drains the bucket).
            elapsed = max((now - bucket.at).total_seconds(), 0.0)
            bucket.tokens = min(float(per_minute), bucket.tokens + elapsed * per_second)
            bucket.at = max(now, bucket.at)
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return
            retry_after = max(1, math.ceil((1 - bucket.tokens) / per_second))
        raise RateLimited(
            f"source '{source.name}' made more than its {per_minute} changes a minute "
            f"(max_mutations_per_minute); retry after {retry_after} s",
            retry_after=retry_after,
            max_mutations_per_minute=per_minute,
        )
