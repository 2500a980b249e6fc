"""Agents of a `cronwright serve`, reached only over HTTP: sources with tokens in its config, clients that
time each request, creates spread over a few connections, and a paced mixed load.

Everything here talks to serve as an agent does (`POST /v1/call`, `GET /v1/...` with a bearer token), so it
measures serve as a black box, whichever processes serve runs inside.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import itertools
import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from product import World, family, rss_mb

# A schedule that stays quiet for the whole run: 03:00 on 1 January (weeks away), within the default
# lifetime, so the store holds many schedules and none of them comes due.
QUIET_CRON = "0 3 1 1 *"
CONNECTIONS = 4


def token(source: str) -> str:
    return f"bench-token-{source}"


def add_sources(world: World, sources: dict[str, dict[str, Any]]) -> None:
    """Appends `[sources.NAME]` to the world's config: each may schedule the python target `py`, with its
    token's digest and any further keys given (`max_schedules`, ...)."""
    lines = []
    for name, extra in sources.items():
        digest = hashlib.sha256(token(name).encode()).hexdigest()
        lines += ["", f"[sources.{name}]", f'token_sha256 = "{digest}"', 'targets = ["py.*"]']
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    with world.config.open("a") as config:
        config.write("\n".join(lines) + "\n")


class Refused(RuntimeError):
    pass


class Agent:
    """One source's HTTP client (one keep-alive connection); every request can be timed.

    A lean client on the standard library's http.client, as a load generator such as wrk is: httpx cost
    1.3 ms of CPU a request on the 2-core machine, as much as the server's own work for a read, and the
    client shares the cores with the serve it measures. The requests are the same: the method, path,
    bearer token and JSON body (compact, as httpx encodes it)."""

    def __init__(self, url: str, source: str) -> None:
        self.source = source
        where = urlsplit(url)
        self.http = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=600)
        self.headers = {"Authorization": f"Bearer {token(source)}"}
        self.posting = {**self.headers, "Content-Type": "application/json"}

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode()
        status, text = self._exchange("POST", "/v1/call", body, self.posting)
        return self._answer(status, text, request.get("action", ""))

    def read(self, path: str, **params: Any) -> dict[str, Any]:
        query = f"{path}?{urlencode(params)}" if params else path
        status, text = self._exchange("GET", query, None, self.headers)
        return self._answer(status, text, path)

    def scrape(self, path: str) -> str:
        """A GET whose reply is not the protocol's JSON (`/metrics`)."""
        status, body = self._exchange("GET", path, None, self.headers)
        text = body.decode("utf-8", "replace")
        if status != 200:
            raise Refused(f"{self.source}: {path} answered {status}: {text[:200]}")
        return text

    def _exchange(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        """One request on the kept connection; once more on a fresh one if the server had closed it idle."""
        for attempt in (1, 2):
            try:
                self.http.request(method, path, body, headers)
                response = self.http.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.http.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _answer(self, status: int, body: bytes, what: str) -> dict[str, Any]:
        try:
            reply: dict[str, Any] = json.loads(body)
        except ValueError:
            reply = {"ok": False, "error": f"{status}", "message": body.decode("utf-8", "replace")[:200]}
        if not isinstance(reply, dict) or not reply.get("ok"):
            raise Refused(f"{self.source}: {what} refused: {json.dumps(reply)[:300]}")
        return reply

    def timed(self, action: Callable[[Agent], Any]) -> float:
        """Seconds from the request to the last byte of its reply."""
        began = time.perf_counter()
        action(self)
        return time.perf_counter() - began

    def close(self) -> None:
        self.http.close()


def job(name: str, schedule: dict[str, Any] | None = None, run_at: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "target": "py", "action": "noop"}
    if run_at is not None:
        body["run_at"] = run_at
    else:
        body["schedule"] = schedule or {"cron": QUIET_CRON}
    return {"action": "create_job", "job": body}


def create_all(
    url: str, source: str, requests: Sequence[dict[str, Any]], connections: int = CONNECTIONS
) -> list[float]:
    """Sends every create over `connections` connections at once; the perf_counter instant each finished,
    in order. Any refusal stops the lot and is raised."""
    pending: Iterator[dict[str, Any]] = iter(requests)
    lock = threading.Lock()
    finished: list[float] = []
    failures: list[BaseException] = []

    def work() -> None:
        agent = Agent(url, source)
        try:
            while not failures:
                with lock:
                    request = next(pending, None)
                if request is None:
                    return
                agent.call(request)
                now = time.perf_counter()
                with lock:
                    finished.append(now)
        except BaseException as error:  # handed to the caller's thread
            failures.append(error)
        finally:
            agent.close()

    threads = [threading.Thread(target=work) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return sorted(finished)


def serve_rss_mb(pid: int) -> float:
    """The resident memory of all of a serve's processes together (its node, its fronts, its workers)."""
    total = 0.0
    for member in family(pid):
        with contextlib.suppress(OSError):  # a process that ended between the listing and the read
            total += rss_mb(member)
    return total


def rounded(samples: Sequence[float]) -> list[float]:
    """Samples in seconds to the microsecond, for the results file."""
    return [round(value, 6) for value in samples]


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- a paced mixed load -------------------------------------------------------------------------------------


@dataclass
class Load:
    """`clients` threads, each with its own connection, sending `rate` requests a second between them:
    `creates` of them creates, the rest status, list (a page of 50), get and history in turn. A thread that
    falls behind its pace does not burst to catch up; what was achieved is in `summary()`."""

    url: str
    source: str
    names: Sequence[str]
    rate: float = 200.0
    creates: float = 20.0
    clients: int = CONNECTIONS
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _began: float = 0.0
    _ended: float = 0.0
    _serial: Iterator[int] = field(default_factory=itertools.count)

    READS = ("status", "list", "get", "history")

    def start(self) -> None:
        self._began = time.perf_counter()
        for number in range(self.clients):
            thread = threading.Thread(target=self._client, args=(number,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
        self._ended = time.perf_counter()

    def _request(self, verb: str, agent: Agent, pick: random.Random) -> None:
        name = pick.choice(self.names)
        if verb == "status":
            agent.read("/v1/status")
        elif verb == "list":
            agent.read("/v1/jobs", limit=50, after_name=name)
        elif verb == "get":
            agent.read(f"/v1/jobs/{name}")
        elif verb == "history":
            agent.read("/v1/runs", name=name, limit=20)
        else:
            with self._lock:
                serial = next(self._serial)
            agent.call(job(f"load-{self.source}-{serial:07d}"))

    def _client(self, number: int) -> None:
        agent = Agent(self.url, self.source)
        pick = random.Random(number)
        pace = self.rate / self.clients
        every_create = max(1, round(self.rate / self.creates)) if self.creates else 0
        reads = itertools.cycle(self.READS[number % 4 :] + self.READS[: number % 4])
        began, sent = time.perf_counter(), 0
        try:
            for slot in itertools.count():
                if self._stop.is_set():
                    return
                due = began + sent / pace
                ahead = due - time.perf_counter()
                if ahead > 0:
                    if self._stop.wait(ahead):
                        return
                elif ahead < -0.5:  # far behind: start the pace again rather than burst
                    began, sent = time.perf_counter(), 0
                verb = "create" if every_create and slot % every_create == number % every_create else ""
                verb = verb or next(reads)
                started = time.perf_counter()
                try:
                    self._request(verb, agent, pick)
                    took = time.perf_counter() - started
                    with self._lock:
                        self.latencies.setdefault(verb, []).append(took)
                except (Refused, http.client.HTTPException, OSError) as error:
                    with self._lock:
                        key = f"{verb}: {str(error)[:120]}"
                        self.errors[key] = self.errors.get(key, 0) + 1
                sent += 1
        finally:
            agent.close()

    def summary(self) -> dict[str, Any]:
        seconds = (self._ended or time.perf_counter()) - self._began
        done = sum(map(len, self.latencies.values()))
        return {
            "seconds": seconds,
            "requests": done,
            "requests_per_second": done / seconds if seconds else 0.0,
            "creates_per_second": len(self.latencies.get("create", [])) / seconds if seconds else 0.0,
            "errors": dict(self.errors),
            "latencies_s": {verb: sorted(values) for verb, values in self.latencies.items()},
        }
