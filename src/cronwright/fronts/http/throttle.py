"""The throttle of failed logins and wrong bearer tokens, per client address, shared by every front that
takes a token (the API, MCP, the dashboard's logins), and its counter for /metrics.

The buckets live in this node's memory and read the node's clock (a ManualClock in tests).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, Metric
from starlette.types import Scope

from cronwright.clock import Clock
from cronwright.service.mutation_rate import Bucket
from cronwright.telemetry.logs import say


def client_address(scope: Scope) -> str:
    """The caller's address, as uvicorn saw it: the key of its bucket."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


# Where a token or a login can fail, and how it was answered: every series is there from the start.
AUTH_FRONTS = ("api", "mcp", "dashboard")
AUTH_ANSWERS = ("401", "429")

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
        self._buckets: dict[str, Bucket] = {}
        self._throttled: set[str] = set()
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def failed(self, client: str, front: str) -> int | None:
        """Counts one failure of `client` on `front` ("api", "mcp", "dashboard"). None while the client
        is within its allowance (answer 401); else the whole seconds until it may try again (answer 429
        with Retry-After)."""
        now = self._clock.now()
        with self._lock:
            bucket = self._buckets.pop(client, None) or Bucket(self._burst, now)
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


class AuthFailureCounts:
    """`cronwright_auth_failures_total`: wrong tokens and failed logins, by front and by answer (401
    within the client's allowance, 429 throttled). A rise alerts to someone guessing."""

    def __init__(self, failures: AuthFailures) -> None:
        self._failures = failures

    def collect(self) -> Iterable[Metric]:
        counts = self._failures.counts()
        family = CounterMetricFamily(
            "cronwright_auth_failures",
            "Wrong bearer tokens and failed dashboard logins, by front and answer (429: throttled).",
            labels=["front", "answer"],
        )
        for front in AUTH_FRONTS:
            for answer in AUTH_ANSWERS:
                family.add_metric([front, answer], counts.get((front, answer), 0))
        yield family
