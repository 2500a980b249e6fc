"""Shared test fixtures: a manual clock, a scriptable runner, and a node with its service on a real store."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronwright.clock import ManualClock
from cronwright.core.calendars import NO_CALENDARS, Calendars
from cronwright.core.events import MemorySink
from cronwright.core.model import Job, Occurrence, Outcome, Result
from cronwright.core.sources import operator
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.notify.alerting import Alerting
from cronwright.protocol import RequestHandler
from cronwright.service.operations import Limits, Service
from cronwright.store.base import Backend
from cronwright.store.memory import MemoryStore
from cronwright.targets.allowlist import StaticAllowlist

# The `live` fixture (a real HTTP server) for tests/http and tests/mcp, which have no conftest of their own:
# without an __init__.py there (a package named `http` or `mcp` would shadow the stdlib and the SDK), a
# second conftest.py would take this module's name.
pytest_plugins = ["serving", "dashboard_site"]

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture(autouse=True, scope="session")
def _own_data_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The default store and the dashboard's keys live under $XDG_DATA_HOME: a test that uses the
    defaults, and every process it starts, writes to a folder of the run's own, never to the user's."""
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before


def at(text: str) -> datetime:
    """A literal ISO instant with its offset."""
    parsed = datetime.fromisoformat(text)
    assert parsed.tzinfo is not None, "tests use aware instants only"
    return parsed


@dataclass
class ScriptedRunner:
    """Runs nothing: answers each attempt with the outcome scripted for its job, and remembers it.

    A job whose name is in `hold` blocks until released, so a test can keep a run in flight without
    sleeping; `cancel` ends a held run `cancelled` at once, as a real runner stops its target.
    """

    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)
    calls: list[Occurrence] = field(default_factory=list)
    hold: dict[str, threading.Event] = field(default_factory=dict)
    started: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The fire_ids `cancel` was asked to stop, in order, and the stop of each held run in flight.
    cancelled: list[str] = field(default_factory=list)
    stops: dict[tuple[str, int], threading.Event] = field(default_factory=dict)

    def run(self, job: Job, occurrence: Occurrence) -> Result:
        stop = threading.Event()
        with self.lock:
            self.calls.append(occurrence)
            script = self.outcomes.get(job.name)
            outcome = script.pop(0) if script else Outcome.OK
            self.stops[(occurrence.fire_id, occurrence.attempt)] = stop
        self.started.set()
        gate = self.hold.get(job.name)
        try:
            if gate is not None:
                # Either event ends the wait: a bounded wait for an observable state, not for time to pass.
                deadline = 3000
                while not gate.is_set() and not stop.wait(0.01) and deadline:
                    deadline -= 1
        finally:
            with self.lock:
                self.stops.pop((occurrence.fire_id, occurrence.attempt), None)
        if stop.is_set():
            return Result(Outcome.CANCELLED, f"cancelled {occurrence.fire_id}", 1)
        return Result(outcome, f"{outcome.value} for {occurrence.fire_id}", 1)

    def cancel(self, occurrence: Occurrence) -> None:
        with self.lock:
            self.cancelled.append(occurrence.fire_id)
            stop = self.stops.get((occurrence.fire_id, occurrence.attempt))
        if stop is not None:
            stop.set()

    def close(self) -> None:
        for gate in self.hold.values():
            gate.set()

    def fire_ids(self) -> list[str]:
        return [call.fire_id for call in self.calls]


ALLOWED = StaticAllowlist(
    {
        "reports": {"daily": {"type": "object"}, "weekly": {"type": "object"}},
        "backup": {
            "nightly": {
                "type": "object",
                "properties": {"dest": {"type": "string"}},
                "required": ["dest"],
            }
        },
    }
)


@dataclass
class Harness:
    clock: ManualClock
    runner: ScriptedRunner
    events: MemorySink
    node: Node
    service: Service
    protocol: RequestHandler
    raw_store: Backend

    def call(self, action: str, **fields: Any) -> dict[str, Any]:
        reply = self.protocol.dispatch({"action": action, **fields}, operator())
        return reply

    def ok(self, action: str, **fields: Any) -> dict[str, Any]:
        reply = self.call(action, **fields)
        assert reply["ok"], reply
        return reply

    def create(self, name: str, schedule: dict[str, Any] | None = None, **job: Any) -> dict[str, Any]:
        spec: dict[str, Any] = {"name": name, "target": "reports", "action": "daily", **job}
        if schedule is not None:
            spec["schedule"] = schedule
        created: dict[str, Any] = self.ok("create_job", job=spec)["job"]
        return created

    def job(self, name: str) -> dict[str, Any]:
        shown: dict[str, Any] = self.ok("get", name=name)["job"]
        return shown

    def tick(self) -> dict[str, Any]:
        """One pass at the clock's now, then wait for its runs (as `cronwright tick` does)."""
        return self.ok("tick")

    def restart(self, **settings: Any) -> Harness:
        """A new node process on the same store (the old one is simply abandoned, as if it died: its
        lease keeper, which would beat for its runs in flight, stops, and nothing drives it again)."""
        self.node.lease.close()
        return make_harness(self.raw_store, self.clock, ScriptedRunner(), **settings)


def make_harness(
    store: Backend,
    clock: ManualClock,
    runner: ScriptedRunner | None = None,
    zone: ZoneInfo = BERLIN,
    grace: timedelta = timedelta(seconds=60),
    max_concurrency: int = 16,
    boot: bool = True,
    alerting: Alerting | None = None,
    node_id: str | None = None,
    calendars: Calendars = NO_CALENDARS,
) -> Harness:
    runner = runner or ScriptedRunner()
    events = MemorySink()
    settings = NodeSettings(
        misfire_grace=grace, max_concurrency=max_concurrency, zone=zone, calendars=calendars
    )
    node = Node(store, runner, clock, events, settings, node_id=node_id, alerting=alerting)
    service = Service(node, ALLOWED, Limits(zone, misfire_grace=grace))
    harness = Harness(clock, runner, events, node, service, RequestHandler(service), store)
    if boot:
        node.boot()
    return harness


StoreFactory = Callable[[], Backend]


@pytest.fixture(params=["memory", "sqlite"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    if request.param == "memory":
        return MemoryStore
    from cronwright.store.sqlite import SqliteStore

    return lambda: SqliteStore(tmp_path / "cronwright.db")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(at("2026-03-02T09:00:00+01:00"))


@pytest.fixture
def harness(clock: ManualClock, tmp_path: Path) -> Iterator[Harness]:
    from cronwright.store.sqlite import SqliteStore

    made = make_harness(SqliteStore(tmp_path / "cronwright.db"), clock)
    yield made
    made.runner.close()
