"""Token buckets: per-source rate limits on mutations (`max_mutations_per_minute`), and the throttle of
failed logins and wrong tokens per client address.

The buckets live in this node's memory: each node limits what reaches it, so N nodes behind one
balancer let through up to N times the rate, and a restart refills every bucket. They read the node's
clock, never the wall clock, so tests drive them with a ManualClock.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from cronwright.clock import Clock
from cronwright.errors import RateLimited
from cronwright.logs import say
from cronwright.sources import Source

# What a bucket counts: every request that changes a job or starts a run.
MUTATIONS = frozenset({"create_job", "update", "delete", "pause", "resume", "run_now", "backfill"})


@dataclass(slots=True)
class _Bucket:
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


# A client may get a token wrong this many times in a row (a typo, a rotated token, a retry loop), then
# once every 60 / FAILURES_PER_MINUTE seconds: a guesser gets 10 tries a minute, not thousands a second.
FAILURE_BURST = 10
FAILURES_PER_MINUTE = 10
# The addresses remembered at most, so a caller with many addresses costs bounded memory.
MAX_CLIENTS = 10_000
_log = logging.getLogger("cronwright.auth")


class AuthFailures:
    """Failed logins and wrong bearer tokens, one bucket per client address, shared by every front.

    Only failures spend: a token that picks a source is never throttled, wherever it comes from, so a
    hostile caller can neither lock out the real one nor slow it. The throttle is per address, not per
    source: a wrong token names no source (it is a digest that matches none), so which source it was
    meant for cannot be told.
    """

    def __init__(
        self,
        clock: Clock,
        burst: int = FAILURE_BURST,
        per_minute: int = FAILURES_PER_MINUTE,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self._clock = clock
        self._burst = float(burst)
        self._per_second = per_minute / 60
        self._max_clients = max_clients
        self._buckets: dict[str, _Bucket] = {}
        self._throttled: set[str] = set()
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def failed(self, client: str, front: str) -> int | None:
        """Counts one failure of `client` on `front` ("api", "mcp", "dashboard"). None while the client
        is within its allowance (answer 401); else the whole seconds until it may try again (answer 429
        with Retry-After)."""
        now = self._clock.now()
        with self._lock:
            bucket = self._buckets.pop(client, None) or _Bucket(self._burst, now)
            self._buckets[client] = bucket  # the most recent last, for _forget
            bucket.refill(now, self._burst, self._per_second)
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                retry_after = None
                self._throttled.discard(client)
            else:
                retry_after = bucket.wait(self._per_second)
            # Said as the client turns throttled, not at every refusal: a flood stays a line or two a minute.
            turned = retry_after is not None and client not in self._throttled
            if turned:
                self._throttled.add(client)
            self._counts[(front, "401" if retry_after is None else "429")] += 1
            self._forget()
        if retry_after is None:
            say(_log, f"a wrong token from {client} ({front})", logging.WARNING, client=client, front=front)
        elif turned:
            say(
                _log,
                f"{client} is throttled: too many wrong tokens ({front}); retry after {retry_after} s",
                logging.WARNING,
                client=client,
                front=front,
                retry_after=retry_after,
            )
        return retry_after

    def counts(self) -> dict[tuple[str, str], int]:
        """How many failures so far, by (front, answer "401" or "429"), for /metrics."""
        with self._lock:
            return dict(self._counts)

    def _forget(self) -> None:
        """Over MAX_CLIENTS, forgets the tenth that failed least recently (a fresh allowance for them)."""
        if len(self._buckets) <= self._max_clients:
            return
        for client in list(self._buckets)[: max(1, self._max_clients // 10)]:
            del self._buckets[client]
            self._throttled.discard(client)
