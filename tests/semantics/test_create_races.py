"""Creates racing from two processes on one store: a dedupe key and a source's max_schedules hold.

Each "process" is a node and service of its own on its own handle of one SQLite file or PostgreSQL
schema (the service's in-process lock is not shared), and the store pauses each create between its
checks and its insert until the other create has reached the same point, or half a second has passed.
Without the store's exclusive section both creates pass their checks before either inserts.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import pg
from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.sources import Source
from cronwright.store.base import Backend
from cronwright.store.sqlite import SqliteStore

WAIT = 0.5  # how long a create waits for its rival at the checks (a bounded wait, never a clock step)


class Interleaving:
    """Store handles whose writes (`insert` for creates, `save` for renewals) stop after their checks, to
    meet the other handle's write. `armed` says when they stop: always for inserts, and for saves only
    once the race starts (the node's own saves before it must not wait)."""

    def __init__(self, make: Callable[[], Backend], method: str = "insert") -> None:
        self._make = make
        self._method = method
        self._meeting = threading.Barrier(2)
        self.armed = threading.Event()
        if method == "insert":
            self.armed.set()

    def open(self) -> Backend:
        store = self._make()
        write = getattr(store, self._method)

        def meet_then_write(*args: Any, **kwargs: Any) -> Any:
            # A broken meeting: the rival is held outside the section, so it cannot have checked yet.
            if self.armed.is_set():
                with contextlib.suppress(threading.BrokenBarrierError):
                    self._meeting.wait(WAIT)
            return write(*args, **kwargs)

        setattr(store, self._method, meet_then_write)
        return store


@contextlib.contextmanager
def processes(backend: str, tmp_path: Path, method: str) -> Iterator[tuple[Interleaving, Harness, Harness]]:
    clock = ManualClock(at("2026-03-02T09:00:00+01:00"))
    with contextlib.ExitStack() as cleanup:
        if backend == "sqlite":
            handles = Interleaving(lambda: SqliteStore(tmp_path / "cronwright.db"), method)
        else:
            from cronwright.store.postgres import PostgresStore

            url = cleanup.enter_context(pg.scratch_url())
            handles = Interleaving(lambda: PostgresStore(url), method)
        made = (make_harness(handles.open(), clock), make_harness(handles.open(), clock))
        yield handles, *made
        for harness in made:
            harness.node.stop()
            harness.raw_store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def two_processes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Harness, Harness]]:
    with processes(request.param, tmp_path, "insert") as (_, *made):
        yield made[0], made[1]


@pytest.fixture(params=["sqlite", "postgres"])
def two_renewing_processes(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Interleaving, Harness, Harness]]:
    with processes(request.param, tmp_path, "save") as made:
        yield made


def race(harnesses: tuple[Harness, Harness], make: Any) -> list[dict[str, Any]]:
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(make, harnesses, range(2)))


def test_one_dedupe_key_created_from_two_processes_at_once_makes_one_job(
    two_processes: tuple[Harness, Harness],
) -> None:
    harnesses = two_processes

    def create(harness: Harness, index: int) -> dict[str, Any]:
        job = {"name": f"report-{index}", "target": "reports", "action": "daily",
               "schedule": {"every": "1h"}, "dedupe_key": "monthly-report"}  # fmt: skip
        return harness.call("create_job", job=job)

    replies = race(harnesses, create)

    assert all(reply["ok"] for reply in replies), replies
    assert sorted(bool(reply.get("deduped")) for reply in replies) == [False, True]
    assert replies[0]["job"]["id"] == replies[1]["job"]["id"]
    assert [job.name for job, _ in harnesses[0].raw_store.with_dedupe_key("monthly-report")] == [
        replies[0]["job"]["name"]
    ]


def test_a_source_at_its_limit_less_one_admits_one_of_two_racing_creates(
    two_processes: tuple[Harness, Harness],
) -> None:
    harnesses = two_processes
    agent = Source("agent", targets=("reports.*",), max_schedules=1)

    def create(harness: Harness, index: int) -> dict[str, Any]:
        job = {"name": f"agent-{index}", "target": "reports", "action": "daily", "schedule": {"every": "1h"}}
        return harness.protocol.dispatch({"action": "create_job", "job": job}, agent)

    replies = race(harnesses, create)

    assert sorted(reply.get("error", "ok") for reply in replies) == ["ok", "quota_exceeded"], replies
    assert harnesses[0].raw_store.count_live("agent") == 1


def test_a_source_at_its_limit_less_one_renews_one_of_two_expired_jobs_at_once(
    two_renewing_processes: tuple[Interleaving, Harness, Harness],
) -> None:
    """A renewal brings an expired job back to life, so it counts against max_schedules like a create,
    and is checked and written in the same exclusive section."""
    handles, *harnesses = two_renewing_processes
    creator = Source("agent", targets=("reports.*",), max_schedules=2)
    for index in range(2):
        job = {"name": f"agent-{index}", "target": "reports", "action": "daily", "schedule": {"every": "1h"},
               "lifetime": "2h"}  # fmt: skip
        assert harnesses[0].protocol.dispatch({"action": "create_job", "job": job}, creator)["ok"]
    harnesses[0].clock.set(at("2026-03-02T12:00:00+01:00"))
    harnesses[0].tick()
    assert harnesses[0].raw_store.count_live("agent") == 0  # both expired
    agent = Source("agent", targets=("reports.*",), max_schedules=1)

    def renew(harness: Harness, index: int) -> dict[str, Any]:
        request = {"action": "update", "name": f"agent-{index}", "changes": {"lifetime": "1d"}}
        return harness.protocol.dispatch(request, agent)

    handles.armed.set()
    replies = race((harnesses[0], harnesses[1]), renew)

    assert sorted(reply.get("error", "ok") for reply in replies) == ["ok", "quota_exceeded"], replies
    assert harnesses[0].raw_store.count_live("agent") == 1
