"""Hostile input thrown at the protocol: over 100,000 messages, and a few huge ones.

Every input goes through `RequestHandler.handle` (raw bytes) or `RequestHandler.dispatch` (a decoded
object, as the HTTP and MCP fronts pass it). For each: no exception escapes, it returns within a bound, the
reply is an object with a bool `ok` that strict JSON can carry, and a refused request leaves the store as it
was.
The node runs on a real SQLite store, so what reaches the store is really written, and really encoded.

Memory is bounded: each huge input (10 MB strings, 100,000 levels of nesting, 100,000-digit numbers) may
allocate at most 8 times its own size plus 16 MB while it is handled (tracemalloc peak), and the cheap
inputs, sampled, at most 4 MB each. Time is bounded: 2 s for a cheap input, 10 s for a huge one (each
takes milliseconds), and each test runs under an alarm (guard.time_limit) that fails it if it hangs.

The inputs: requests mutated from valid ones (so they reach deep into validation, and some succeed),
random fields under every action, arbitrary JSON values, and damaged bytes (invalid UTF-8, cut tokens,
NaN, lone surrogates). Hypothesis draws them, derandomized, so CI always throws the same ones.
"""

from __future__ import annotations

import json
import random
import sqlite3
import tracemalloc
from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.model import Persistence
from cronwright.core.sources import Source, operator
from cronwright.protocol import ACTIONS, RequestHandler
from cronwright.store.sqlite import SqliteStore

from .guard import Meter, time_limit

OPERATOR = operator()
AGENT = Source("agent", targets=("reports.*",), max_schedules=3, min_period=timedelta(minutes=5))
SOURCES = (OPERATOR, AGENT)
CHEAP_BOUND = 2.0  # seconds for one cheap input (they take well under a millisecond)
HUGE_BOUND = 10.0  # seconds for one huge input (they take well under a second)

# Requests that succeed as written; mutations of them reach deep into validation.
VALID: list[dict[str, Any]] = [
    {
        "action": "create_job",
        "job": {
            "name": "made",
            "target": "reports",
            "action": "daily",
            "args": {"team": "ops"},
            "schedule": {"cron": "0 7 * * *", "tz": "Europe/Berlin"},
            "lifetime": "30d",
            "misfire": "coalesce",
            "max_attempts": 3,
            "retry_backoff_ms": 100,
            "breaker_threshold": 2,
            "dedupe_key": "made",
            "origin": {"via": "abuse"},
        },
    },
    {
        "action": "create_job",
        "job": {
            "name": "shot",
            "target": "backup",
            "action": "nightly",
            "args": {"dest": "/x"},
            "run_at": "2026-03-03T10:00:00+01:00",
        },
    },
    {
        "action": "create_job",
        "job": {
            "name": "often",
            "target": "reports",
            "action": "weekly",
            "schedule": {"every": "10m"},
            "once": True,
            "dedupe_key": "often",
        },
    },
    {
        "action": "update",
        "name": "daily",
        "changes": {
            "schedule": {"cron": "30 7 * * *"},
            "args": {"x": 1},
            "lifetime": "10d",
            "misfire": "skip",
        },
    },
    {"action": "get", "name": "daily"},
    {"action": "get", "job_id": 1},
    {"action": "list", "state": "active", "target": "reports"},
    {"action": "pause", "name": "every"},
    {"action": "resume", "name": "every"},
    {"action": "run_now", "name": "daily"},
    {"action": "delete", "name": "made"},
    {"action": "history", "name": "daily", "limit": 10},
    {"action": "status"},
    {
        "action": "preview",
        "expression": "0 7 * * MON-FRI",
        "tz": "Europe/Berlin",
        "count": 3,
        "after": "2026-03-02T09:00:00+01:00",
    },
    {"action": "targets"},
    {"action": "interface"},
    {"action": "tick"},
]
KEYS = [
    "action",
    "request_id",
    "job",
    "job_id",
    "name",
    "changes",
    "state",
    "target",
    "limit",
    "expression",
    "tz",
    "after",
    "count",
    "schedule",
    "run_at",
    "lifetime",
    "misfire",
    "max_attempts",
    "retry_backoff_ms",
    "breaker_threshold",
    "dedupe_key",
    "once",
    "origin",
    "args",
    "cron",
    "every",
    "every_ms",
    "at",
    "id",
]
NASTY: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**63,
    -(2**63),
    10**40,
    1.5,
    -0.0,
    1e308,
    5e-324,
    float("nan"),
    float("inf"),
    float("-inf"),
    "",
    " ",
    "\x00",
    "\ud800",
    "a\udfffb",
    "\u202e",
    "日本",
    "daily",
    "every",
    "made",
    "reports",
    "backup",
    "nightly",
    "weekly",
    "0 10 * * *",
    "*/5 * * * *",
    "@daily",
    "@reboot",
    "0 0 30 2 *",
    "* * * * * *",
    "L W # / -",
    "0 0 L * 5#6",
    "5m",
    "0s",
    "-5m",
    "30d",
    "P30D",
    "P1000Y",
    "99999999999d",
    "2026-03-02T10:00:00+01:00",
    "9999-12-31T23:59:59+14:00",
    "0001-01-01T00:00:00-14:00",
    "2026-03-02",
    "Europe/Berlin",
    "UTC",
    "../../etc/passwd",
    "x" * 300,
    "é" * 150,
    [],
    {},
    [1, [2, [3]]],
    {"cron": "0 1 * * *"},
    {"every": "1h"},
    {"at": "2026-03-02T11:00+01:00"},
    "skip",
    "coalesce",
    "active",
    "paused",
    "running",
    "cron",
    "at",
    "interface",
    "agent",
    "cli",
]

NASTY_TEXT = [value for value in NASTY if isinstance(value, str)]


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    return found


def _mutate(template: dict[str, Any], changes: list[tuple[tuple[str, ...], Any, bool]]) -> Any:
    request = json.loads(json.dumps(template))
    for path, value, delete in changes:
        holder = request
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict):
            continue
        if delete:
            holder.pop(path[-1], None)
        else:
            holder[path[-1]] = value
    return request


def huge_integer() -> int:
    """10**5000: too long for Python to print (4300 digits), so only an in-process caller can send it."""
    return 10**5000


scalars = st.one_of(
    st.integers(0, len(NASTY) - 1).map(NASTY.__getitem__),  # not sampled_from: its repr would be huge
    st.builds(huge_integer),
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=30),
    st.text(st.characters(categories=["Cs", "Co", "Cc", "Zl", "Mn"]), max_size=5),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    template = draw(st.sampled_from(VALID))
    paths = _paths(template) + [(key,) for key in KEYS] + [("job", key) for key in KEYS]
    change = st.tuples(st.sampled_from(paths), values, st.booleans())
    return _mutate(template, draw(st.lists(change, max_size=3)))


requests = st.one_of(
    mutated(),
    mutated(),
    st.fixed_dictionaries({"action": st.sampled_from([*ACTIONS, "interface"])}).flatmap(
        lambda base: st.dictionaries(st.sampled_from(KEYS), values, max_size=4).map(
            lambda more: {**more, **base}
        )
    ),
    values,
)


@st.composite
def damaged_bytes(draw: st.DrawFn) -> bytes:
    """A valid message, then bytes overwritten, cut or inserted; or bytes from nowhere."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=200))
    raw = bytearray(json.dumps(draw(st.sampled_from(VALID))).encode())
    for _ in range(draw(st.integers(1, 4))):
        at_ = draw(st.integers(0, len(raw)))
        junk = draw(
            st.sampled_from(
                [
                    b"\xff",
                    b"\xc0\xaf",
                    b"\xed\xa0\x80",
                    b"\\ud800",
                    b"\x00",
                    b"{",
                    b"]",
                    b'"',
                    b"NaN",
                    b"1e999",
                    b"-",
                    b"9" * 30,
                    b"\\",
                    b"\xe2\x80\xae",
                ]
            )
            | st.binary(max_size=3)
        )
        cut = draw(st.integers(0, 3))
        raw[at_ : at_ + cut] = junk
    return bytes(raw)


# --- the node under attack ----------------------------------------------------------------------------


class Target:
    """A node on a SQLite file with a few jobs, and a way to see whether a request changed the store."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "cronwright.db"
        self.harness: Harness = make_harness(
            SqliteStore(self.path), ManualClock(at("2026-03-02T09:00:00+01:00"))
        )
        self.harness.create("daily", {"cron": "0 10 * * *"})
        self.harness.create("every", {"every": "5m"})
        self.harness.create("later", run_at="2026-03-02T12:00:00+01:00")
        self.harness.ok("pause", name="later")
        self.protocol = self.harness.protocol
        # A second connection: its data_version moves whenever the store's connection commits a change.
        self._watch = sqlite3.connect(self.path)
        self.meter = Meter(CHEAP_BOUND)
        self.changes = 0  # accepted requests that changed the store: proof that the watch sees changes
        self._seen: int | None = None  # the data_version at which `_rows` were read
        self._rows: tuple[list[Any], ...] = ()

    def version(self) -> tuple[int, Persistence]:
        (data_version,) = self._watch.execute("PRAGMA data_version").fetchone()
        return data_version, self.harness.node.store.persistence

    def contents(self) -> tuple[list[Any], ...]:
        """What a request can change: the jobs, the history and the audit trail, row by row. (The nodes'
        beats and the outbox have writers of their own, off the request's thread.)"""
        return tuple(
            self._watch.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for table in ("jobs", "runs", "audit")
        )

    def send(self, request: Any, source: Source, raw: bool) -> dict[str, Any]:
        """Sends one request; a refused one must leave the store exactly as it was: nothing waits in
        memory for a save (the node is not `degraded`), and no commit reached the file (its
        data_version, seen from another connection, is unchanged), or, where another thread of the
        node committed meanwhile, the jobs, runs and audit entries are row for row as they were."""
        before = self.version()
        if before[0] != self._seen:  # read again only once a commit has moved the file on
            self._rows, self._seen = self.contents(), before[0]
        if raw:
            reply = self.meter.call(lambda: self.protocol.handle(request, source))
        else:
            reply = self.meter.call(lambda: self.protocol.dispatch(request, source))
        after = self.version()
        if reply["ok"]:
            self.changes += after != before
        else:
            assert after[1] == before[1], (request, reply)
            assert after == before or self.contents() == self._rows, (request, reply)
        return reply

    def close(self) -> None:
        self._watch.close()
        self.harness.node.stop()
        self.harness.raw_store.close()


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Target]:
    made = Target(tmp_path)
    yield made
    made.close()


# --- many cheap inputs --------------------------------------------------------------------------------


class Fuzzer:
    """Hostile requests from a grammar, fast: hypothesis strategies cost milliseconds a request, too slow
    for 100,000, so hypothesis draws the seed (and shrinks over it) and this draws the requests."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def value(self, depth: int = 0) -> Any:
        rng = self.rng
        roll = rng.random()
        if depth < 3 and roll < 0.12:
            return {self.key(): self.value(depth + 1) for _ in range(rng.randint(0, 4))}
        if depth < 3 and roll < 0.18:
            return [self.value(depth + 1) for _ in range(rng.randint(0, 4))]
        if roll < 0.25:
            return rng.choice((rng.randint(-(2**70), 2**70), rng.uniform(-1e9, 1e9), rng.randint(-3, 3)))
        if roll < 0.32:
            return "".join(
                chr(
                    rng.choice(
                        (rng.randint(0, 0x7F), rng.randint(0x80, 0xFFFF), rng.randint(0x10000, 0x10FFFF))
                    )
                )
                for _ in range(rng.randint(0, 12))
            )
        if roll < 0.34:
            return huge_integer()
        return rng.choice(NASTY)

    def key(self) -> str:
        return self.rng.choice(KEYS) if self.rng.random() < 0.9 else self.rng.choice(NASTY_TEXT)

    def request(self) -> Any:
        rng = self.rng
        roll = rng.random()
        if roll < 0.7:
            request = json.loads(json.dumps(rng.choice(VALID)))
            for _ in range(rng.randint(0, 3)):
                self._mutate(request)
            return request
        if roll < 0.95:
            action = rng.choice([*ACTIONS, "interface"])
            return {**{self.key(): self.value() for _ in range(rng.randint(0, 4))}, "action": action}
        return self.value()

    def _mutate(self, request: dict[str, Any]) -> None:
        holder: Any = request
        while isinstance(holder, dict) and holder and self.rng.random() < 0.5:
            inner = holder[self.rng.choice(list(holder))]
            if not isinstance(inner, dict) or not inner:
                break
            holder = inner
        if not isinstance(holder, dict):
            return
        if holder and self.rng.random() < 0.25:
            del holder[self.rng.choice(list(holder))]
        else:
            key = self.rng.choice(list(holder)) if holder and self.rng.random() < 0.7 else self.key()
            holder[key] = self.value()

    def damaged(self, request: Any) -> bytes:
        """The request as bytes, with a few bytes overwritten, cut or inserted."""
        try:
            raw = bytearray(json.dumps(request, allow_nan=True).encode("utf-8", "surrogatepass"))
        except ValueError:
            raw = bytearray(b'{"action": "list"}')
        for _ in range(self.rng.randint(1, 3)):
            where = self.rng.randint(0, len(raw))
            raw[where : where + self.rng.randint(0, 3)] = self.rng.choice(JUNK)
        return bytes(raw)


JUNK = [
    b"",
    b"\xff",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\\ud800",
    b"\x00",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b",",
    b":",
    b"NaN",
    b"-Infinity",
    b"1e999",
    b"-",
    b"9" * 40,
    b"\\",
    b"\xe2\x80\xae",
    b"\xf0\x9f\x98",
    b"null",
    b"true",
    b'"action"',
    b'"\\u0000"',
]

FUZZ_EXAMPLES = 1450
PER_EXAMPLE = 25  # requests, each sent decoded and as bytes, plus as many damaged byte messages
SAMPLE_EVERY = 50  # examples whose inputs are also measured for memory
CHEAP_MEMORY = 4 * 2**20


def test_a_hundred_thousand_hostile_requests_get_replies_and_change_nothing_when_refused(
    target: Target,
) -> None:
    examples = 0

    @settings(
        max_examples=FUZZ_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.integers(0, 2**64 - 1))
    def throw(seed: int) -> None:
        nonlocal examples
        examples += 1
        sample = examples % SAMPLE_EVERY == 0
        fuzzer = Fuzzer(random.Random(seed))
        for index in range(PER_EXAMPLE):
            request = fuzzer.request()
            source = SOURCES[index % 2]
            sends = [(request, False), (fuzzer.damaged(request), True)]
            if _encodable(request):
                sends.append((json.dumps(request).encode(), True))
            for message, raw in sends:
                if sample:
                    tracemalloc.start()
                    base, _ = tracemalloc.get_traced_memory()
                target.send(message, source, raw)
                if sample:
                    _, peak = tracemalloc.get_traced_memory()
                    tracemalloc.stop()
                    assert peak - base < CHEAP_MEMORY, (message, peak - base)
        target.harness.clock.advance(timedelta(minutes=1))  # so that ticks have something to do

    with time_limit(240):
        throw()
    target.harness.node.wait_for_runs(30)
    meter = target.meter
    assert meter.count >= 100_000, meter
    # Deep, not only at the door: many requests reach the service, and some succeed.
    assert meter.codes["ok"] > 5_000 and meter.codes["invalid"] > 5_000, meter.codes
    assert meter.slowest < CHEAP_BOUND
    # Most changes come from valid requests with a few keys mutated; since an unknown field is refused
    # wherever it appears (the request's top level too), fewer of those are accepted than before.
    assert target.changes > 500


def _encodable(request: Any) -> bool:
    try:
        json.dumps(request)
    except ValueError:  # an integer too long to print, say: no client could send it as JSON
        return False
    return True


def test_requests_drawn_by_hypothesis_strategies_get_replies_and_change_nothing_when_refused(
    target: Target,
) -> None:
    """The same properties over hypothesis's own values (its edge-case floats, texts of every Unicode
    category), which it shrinks to a minimal failing request if one ever fails."""

    @settings(
        max_examples=150,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(requests, min_size=10, max_size=10), st.lists(damaged_bytes(), min_size=5, max_size=5))
    def throw(batch: list[Any], damaged: list[bytes]) -> None:
        for index, request in enumerate(batch):
            target.send(request, SOURCES[index % 2], raw=False)
            if _encodable(request):
                target.send(json.dumps(request).encode(), SOURCES[index % 2], raw=True)
        for index, message in enumerate(damaged):
            target.send(message, SOURCES[index % 2], raw=True)

    with time_limit(120):
        throw()
    assert target.meter.count >= 150 * 15


# --- a few huge inputs --------------------------------------------------------------------------------

SIZE = 10 * 2**20
TEN_MB = "x" * SIZE
DEEP = 100_000


def deep_list(levels: int) -> Any:
    nested: Any = []
    for _ in range(levels):
        nested = [nested]
    return nested


def deep_object(levels: int) -> Any:
    nested: Any = {}
    for _ in range(levels):
        nested = {"a": nested}
    return nested


def job(**fields: Any) -> dict[str, Any]:
    return {
        "action": "create_job",
        "request_id": "r1",
        "job": {"name": "big", "target": "reports", "action": "daily", "schedule": {"every": "5m"}, **fields},
    }


# (sent as bytes to `handle` or as an object to `dispatch`, the message, its size in bytes for the
# memory bound, the error it must get)
HUGE: dict[str, tuple[str, Any, int, str]] = {
    "nesting 1e5 deep, as bytes": (
        "bytes",
        b'{"action":"list","x":' + b"[" * DEEP + b"]" * DEEP + b"}",
        2 * DEEP,
        "invalid_json",
    ),
    "objects 1e5 deep, as bytes": ("bytes", b'{"a":' * DEEP + b"1" + b"}" * DEEP, 6 * DEEP, "invalid_json"),
    "nesting 1e5 deep, unclosed": ("bytes", b"[" * DEEP, DEEP, "invalid_json"),
    "nesting 1e5 deep, decoded": (
        "object",
        {"action": "list", "request_id": "r1", "x": deep_list(DEEP)},
        0,
        "invalid_json",
    ),
    "objects 1e5 deep, decoded": ("object", {"action": "get", "name": deep_object(DEEP)}, 0, "invalid_json"),
    "an integer of 1e5 digits, as text": (
        "bytes",
        b'{"action":"history","limit":' + b"9" * DEEP + b"}",
        DEEP,
        "invalid_json",
    ),
    "an integer of 1e5 digits, decoded": (
        "object",
        {"action": "history", "limit": 10**DEEP},
        0,
        "invalid_json",
    ),
    "an integer of 1e5 digits in args": ("object", job(args={"n": -(10**DEEP)}), 0, "invalid_json"),
    "a float of 1e5 digits": (
        "bytes",
        b'{"action":"history","limit":1' + b"0" * DEEP + b".5}",
        DEEP,
        "invalid_json",
    ),
    "an exponent past any float": ("bytes", b'{"action":"history","limit":1e999999999}', 0, "invalid_json"),
    "NaN": ("bytes", b'{"action":"history","limit":NaN}', 0, "invalid_json"),
    "-Infinity": (
        "bytes",
        b'{"action":"preview","expression":"* * * * *","count":-Infinity}',
        0,
        "invalid_json",
    ),
    "NaN, decoded": ("object", job(args={"n": float("nan")}), 0, "invalid_json"),
    "Infinity in origin, decoded": ("object", job(origin={"n": float("inf")}), 0, "invalid_json"),
    "invalid UTF-8": ("bytes", b'{"action":"get","name":"\xff\xfe\xc3("}', 0, "invalid_json"),
    "overlong UTF-8": ("bytes", b'{"action":"get","name":"\xc0\xaf"}', 0, "invalid_json"),
    "an encoded surrogate": ("bytes", b'{"action":"get","name":"\xed\xa0\x80"}', 0, "invalid_json"),
    "a lone surrogate escape": (
        "bytes",
        b'{"action":"create_job","job":{"name":"\\udc00"}}',
        0,
        "invalid_json",
    ),
    "a lone surrogate, decoded": ("object", job(args={"\ud800": "x"}), 0, "invalid_json"),
    "10 MB over max_message_bytes": (
        "bytes",
        b'{"action":"get","name":"' + TEN_MB.encode() + b'"}',
        SIZE,
        "message_too_large",
    ),
    "10 MB within a larger limit": (
        "bytes",
        b'{"action":"get","name":"' + TEN_MB.encode() + b'"}',
        SIZE,
        "invalid",
    ),
    "10 MB args within a larger limit": (
        "bytes",
        json.dumps(job(args={"x": TEN_MB})).encode(),
        SIZE,
        "invalid",
    ),
    "10 MB action": ("object", {"action": TEN_MB}, SIZE, "unknown_action"),
    "10 MB request_id": ("object", {"action": "list", "request_id": TEN_MB}, SIZE, "invalid"),
    "10 MB name": ("object", {"action": "get", "name": TEN_MB}, SIZE, "invalid"),
    "10 MB expression": ("object", {"action": "preview", "expression": TEN_MB}, SIZE, "invalid"),
    "10 MB zone": ("object", {"action": "preview", "expression": "* * * * *", "tz": TEN_MB}, SIZE, "invalid"),
    "10 MB arg": ("object", job(args={"x": TEN_MB}), SIZE, "invalid"),
    "10 MB arg name": ("object", job(args={TEN_MB: 1}), SIZE, "invalid"),
    "10 MB origin": ("object", job(origin={"via": TEN_MB}), SIZE, "invalid"),
    "10 MB lifetime": ("object", job(lifetime=TEN_MB), SIZE, "invalid"),
    "10 MB cron": ("object", job(schedule={"cron": TEN_MB}), SIZE, "invalid"),
    "10 MB run_at": ("object", job(schedule=None, run_at=TEN_MB), SIZE, "invalid"),
    "10 MB dedupe_key": ("object", job(dedupe_key=TEN_MB), SIZE, "invalid"),
    "10 MB update": (
        "object",
        {"action": "update", "name": "daily", "changes": {"args": {"x": TEN_MB}}},
        SIZE,
        "invalid",
    ),
}


def test_huge_inputs_are_refused_quickly_in_bounded_memory_and_change_nothing(target: Target) -> None:
    large = RequestHandler(target.harness.service, max_message_bytes=64 * 2**20)
    meter = Meter(HUGE_BOUND)
    with time_limit(120):
        for name, (how, message, size, error) in HUGE.items():
            before = target.version()
            tracemalloc.start()
            base, _ = tracemalloc.get_traced_memory()
            if how == "object":
                reply = meter.call(partial(target.protocol.dispatch, message, OPERATOR))
            else:
                # Past the 64 KB default only to show that limit; else past the decoder, to attack it.
                protocol = target.protocol if error == "message_too_large" else large
                reply = meter.call(partial(protocol.handle, message, OPERATOR))
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert (reply["ok"], reply["error"]) == (False, error), (name, reply)
            assert len(reply["message"]) < 1000, name  # a refusal names the problem; it never echoes it
            if isinstance(message, dict) and message.get("request_id") == "r1":
                assert reply["request_id"] == "r1", name
            assert peak - base < 8 * size + 16 * 2**20, (name, peak - base)
            assert target.version() == before, name
    assert meter.count == len(HUGE)
    assert [job["name"] for job in target.harness.ok("list")["jobs"]] == ["daily", "every", "later"]
