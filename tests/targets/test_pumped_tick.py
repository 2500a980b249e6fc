"""A tick, and a serving node's loop, wait for their python runs' replies on their own thread
(Dispatcher.pumped, Replies.pumping): no reply thread, no GIL hand-off per run, and nothing they wait for
is missed: a run on a thread of its own (a command) wakes the wait, as does a wake-up from another thread,
and a call past its deadline is still stopped.

The python runs a pass starts take one look at their module's files between them (Registry.one_look).

Real store, real registry and TargetRunner, real worker processes; the clock is manual.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronwright.clock import ManualClock
from cronwright.core.events import FanOut, MemorySink
from cronwright.core.sources import operator
from cronwright.node import drive
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.protocol import RequestHandler
from cronwright.service.operations import Limits, Service
from cronwright.store.sqlite import SqliteStore
from cronwright.targets import registry as registry_module
from cronwright.targets import specs as specs_module
from cronwright.targets.executor import TargetRunner
from cronwright.targets.registry import build_registry
from cronwright.targets.secrets import Secrets
from cronwright.targets.specs import Fingerprint
from pump_actions import OK_AND_HANG

from .conftest import PYTHON, config, write_module

BERLIN = ZoneInfo("Europe/Berlin")


# A tick's lease beats come this far apart: a wait that only a beat ended would outlast the test's join.
LONG_BEAT = timedelta(hours=1)


@dataclass
class Ticking:
    clock: ManualClock
    node: Node
    protocol: RequestHandler
    runner: TargetRunner

    def create(self, name: str, target: str, action: str) -> None:
        job = {"name": name, "target": target, "action": action, "schedule": {"cron": "0 10 * * *"}}
        reply = self.protocol.dispatch({"action": "create_job", "job": job}, operator())
        assert reply["ok"], reply

    def tick_at(self, instant: str) -> list[dict[str, Any]]:
        """The node's tick at `instant`, on a thread that must end well within a beat; the runs it made."""
        self.clock.set(datetime.fromisoformat(instant))
        ended: list[object] = []
        ticking = threading.Thread(target=lambda: ended.append(drive.tick(self.node)))
        ticking.start()
        ticking.join(120)
        assert ended, "the tick still waits: something it waited for never woke it"
        reply = self.protocol.dispatch({"action": "history"}, operator())
        runs: list[dict[str, Any]] = reply["runs"]
        return runs


@pytest.fixture
def ticking(tmp_path: Path) -> Iterator[Ticking]:
    write_module(tmp_path / "scripts", "acts", OK_AND_HANG)
    targets = {
        "acts": {"kind": "python", "module": "acts", "path": ["scripts"]},
        "sh": {"kind": "command", "actions": {"true": {"argv": [PYTHON, "-c", "pass"]}}},
    }
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    runner = TargetRunner(registry, Secrets(environ={}), zone=BERLIN)
    clock = ManualClock(datetime.fromisoformat("2026-03-02T09:00:00+01:00"))
    store = SqliteStore(tmp_path / "cronwright.db")
    settings = NodeSettings(
        shutdown_grace=timedelta(seconds=5), lease_beat=LONG_BEAT, lease_ttl=4 * LONG_BEAT
    )
    node = Node(store, runner, clock, FanOut([MemorySink()]), settings)
    service = Service(node, registry, Limits(BERLIN))
    node.boot()
    yield Ticking(clock, node, RequestHandler(service), runner)
    node.stop()
    node.store.close()


def test_a_ticks_python_replies_come_on_its_own_thread(ticking: Ticking) -> None:
    for n in range(4):
        ticking.create(f"py-{n}", "acts", "ok")
    # The first tick starts the workers (each run on a thread that starts one); the second finds them
    # warm, and begins its runs without a thread: their replies are what the tick pumps.
    ticking.tick_at("2026-03-02T10:00:00+01:00")
    runs = ticking.tick_at("2026-03-03T10:00:00+01:00")

    assert [run["outcome"] for run in runs] == ["ok"] * 8
    assert ticking.runner.pool.idle(ticking.runner.registry.python_workers()[0]) == 4
    # Without the pump, the pool's reply thread would have ended them (it parks while a thread pumps).
    assert ticking.runner.pool._replies.ended_on_thread == 0


def test_a_run_on_a_thread_of_its_own_wakes_the_ticks_wait(ticking: Ticking) -> None:
    """A command runs on a pool thread, not on a reply pipe: its end must wake the pumping tick, which
    would otherwise wait for its next lease beat, an hour away here."""
    ticking.create("cmd", "sh", "true")
    runs = ticking.tick_at("2026-03-02T10:00:00+01:00")

    assert [(run["schedule"], run["outcome"]) for run in runs] == [("cmd", "ok")]


def test_a_pumping_tick_still_stops_a_call_past_its_deadline(ticking: Ticking) -> None:
    ticking.create("warm-up", "acts", "ok")
    ticking.tick_at("2026-03-02T10:00:00+01:00")  # a warm worker, so that `hang` is begun and pumped
    ticking.create("stuck", "acts", "hang")
    runs = ticking.tick_at("2026-03-03T10:00:00+01:00")

    stuck = [run for run in runs if run["schedule"] == "stuck"]
    assert [(run["outcome"], run["message"]) for run in stuck] == [
        ("timeout", "ran past its deadline of 1s; the worker was killed")
    ]


def test_the_python_runs_of_one_pass_take_one_look_at_their_modules_files(
    ticking: Ticking, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(4):
        ticking.create(f"py-{n}", "acts", "ok")
    ticking.tick_at("2026-03-02T10:00:00+01:00")  # starts the workers
    looks: list[object] = []
    real = specs_module.fingerprint  # what the registry module holds as `fingerprint`

    def looked(files: Iterable[str]) -> Fingerprint:
        looks.append(files)
        return real(files)

    monkeypatch.setattr(registry_module, "fingerprint", looked)

    runs = ticking.tick_at("2026-03-03T10:00:00+01:00")

    assert [run["outcome"] for run in runs] == ["ok"] * 8
    # One pass claimed all four (a stat of the module for each, before); the passes after it started none.
    assert len(looks) == 1


@contextlib.contextmanager
def serving(ticking: Ticking) -> Iterator[threading.Thread]:
    """The node's serve loop on a thread of its own (as `cronwright serve` runs it), stopped after."""
    loop = threading.Thread(target=drive.serve_forever, args=(ticking.node,), name="serve-loop")
    loop.start()
    try:
        yield loop
    finally:
        ticking.node.stop()
        loop.join(30)
        assert not loop.is_alive(), "the serve loop did not end when the node stopped"


def runs_of(ticking: Ticking) -> list[dict[str, Any]]:
    reply = ticking.protocol.dispatch({"action": "history"}, operator())
    runs: list[dict[str, Any]] = reply["runs"]
    return runs


def until(what: str, check: Callable[[], bool]) -> None:
    """Waits (in real time: the loop runs on a thread) for what another thread does, failing after 60 s."""
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.01)


def test_a_serving_loops_python_replies_come_on_its_own_thread(ticking: Ticking) -> None:
    """serve pumps its replies as a tick does, while it waits between passes: none on the reply thread."""
    for n in range(4):
        ticking.create(f"py-{n}", "acts", "ok")
    ticking.tick_at("2026-03-02T10:00:00+01:00")  # starts the workers, so the served runs are begun
    with serving(ticking):
        ticking.clock.set(datetime.fromisoformat("2026-03-03T10:00:00+01:00"))
        ticking.node.wake()
        until("the day's four runs", lambda: len(runs_of(ticking)) == 8)
        assert ticking.runner.pool._replies.ended_on_thread == 0

    assert [run["outcome"] for run in runs_of(ticking)] == ["ok"] * 8


def test_a_serving_loop_held_in_the_store_still_stops_a_call_past_its_deadline(
    ticking: Ticking, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop keeps its runs' deadlines while it waits in the pump; a loop held in a store call (a store
    that hangs) waits nowhere, and the parked reply thread keeps them instead: the call past its 1 s
    deadline is stopped while the loop is still held, not once the store lets go."""
    ticking.create("warm-up", "acts", "ok")
    ticking.tick_at("2026-03-02T10:00:00+01:00")  # a warm worker, so that `hang` is begun and pumped
    paused = ticking.protocol.dispatch({"action": "pause", "name": "warm-up"}, operator())
    assert paused["ok"], paused  # `stuck` alone comes due, on the warm worker
    ticking.create("stuck", "acts", "hang")
    replies = ticking.runner.pool._replies
    store = ticking.node.store
    real_due = store.due
    hold, holding, release = threading.Event(), threading.Event(), threading.Event()

    def due(*args: Any, **kwargs: Any) -> Any:
        if hold.is_set():
            holding.set()
            release.wait(60)
        return real_due(*args, **kwargs)

    monkeypatch.setattr(store, "due", due)
    with serving(ticking):
        ticking.clock.set(datetime.fromisoformat("2026-03-03T10:00:00+01:00"))
        ticking.node.wake()
        until("the stuck call to be watched", lambda: len(replies._watched) == 1)
        hold.set()
        ticking.node.wake()
        until("the loop to be held in the store", holding.is_set)
        until("the call past its deadline to be stopped", lambda: replies.ended_on_thread == 1)
        assert not release.is_set()  # stopped while the loop was still held
        release.set()
        until("its run to be recorded", lambda: len(runs_of(ticking)) == 2)

    stuck = [run for run in runs_of(ticking) if run["schedule"] == "stuck"]
    assert [(run["outcome"], run["message"]) for run in stuck] == [
        ("timeout", "ran past its deadline of 1s; the worker was killed")
    ]


def test_a_wake_from_another_thread_ends_the_serving_loops_pumped_wait(ticking: Ticking) -> None:
    """The loop waits in the pump (its next pass a day away by the clock); a wake-up from another thread
    (a front's change, SIGUSR1) must end that wait, or the job due now would wait for the next pass."""
    ticking.create("py", "acts", "ok")
    with serving(ticking):
        until("the loop's wait", lambda: ticking.runner.pool._replies._pumps == 1)
        ticking.clock.set(datetime.fromisoformat("2026-03-02T10:00:00+01:00"))
        ticking.node.wake()
        until("the run due now", lambda: len(runs_of(ticking)) == 1)

    assert [run["outcome"] for run in runs_of(ticking)] == ["ok"]
