"""Semantic 34 on PostgreSQL: overlap replace decided by one node stops the run another node holds.

The mark is durable on the row (`in_flight.cancel`); the holder sees it at its next lease beat, or at once
when the other node's write wakes it (LISTEN/NOTIFY). The waiting occurrence starts only after the stopped
run is recorded, so the two never run side by side.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pg
from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.store.postgres import PostgresStore


@contextmanager
def two_nodes() -> Iterator[tuple[Harness, Harness]]:
    with pg.scratch_url() as url:
        clock = ManualClock(at("2026-03-02T09:00:00+01:00"))
        holder = make_harness(PostgresStore(url), clock, node_id="holder")
        other = make_harness(PostgresStore(url), clock, node_id="other")
        try:
            yield holder, other
        finally:
            for node in (holder, other):
                node.runner.close()
                node.node.wait_for_runs(10)
                node.node.lease.close()
                node.node.store.close()


def _held_by(holder: Harness, other: Harness, woken: threading.Event | None = None) -> int:
    """A replace job every minute whose 09:01 run the holder runs (held), with 09:02 decided by the other."""
    holder.runner.hold["sync"] = threading.Event()
    job_id = int(holder.create("sync", {"every": "1m"}, overlap="replace")["id"])
    holder.clock.set(at("2026-03-02T09:01:00+01:00"))
    assert holder.node.run_pass().fired == [f"{job_id}-1"]
    assert holder.runner.started.wait(10)
    holder.clock.set(at("2026-03-02T09:01:55+01:00"))
    holder.node.run_pass()  # its beat falls here, before the mark: the next one is ten seconds off
    holder.clock.set(at("2026-03-02T09:02:00+01:00"))
    if woken is not None:
        woken.clear()
    assert other.node.run_pass().fired == []  # the other node marks the holder's run and waits
    assert other.runner.cancelled == [] and holder.runner.cancelled == []
    return job_id


def _ends_cancelled_then_the_new_one_runs(holder: Harness, other: Harness, job_id: int) -> None:
    holder.node.wait_for_runs()  # the stopped run ends and the holder records it
    fired = other.node.run_pass().fired + holder.node.run_pass().fired
    assert fired == [f"{job_id}-2"]  # started once, by whichever pass came first
    holder.runner.hold["sync"].set()
    for node in (holder, other):
        node.node.wait_for_runs()
    runs = holder.ok("history", name="sync")["runs"]
    assert [(run["fire_id"], run["outcome"], run["node"]) for run in runs][-1] == (
        f"{job_id}-1",
        "cancelled",
        "holder",
    )
    assert [run["fire_id"] for run in runs] == [f"{job_id}-2", f"{job_id}-1"]
    cancelled = next(run for run in runs if run["fire_id"] == f"{job_id}-1")
    second = next(run for run in runs if run["fire_id"] == f"{job_id}-2")
    assert second["started_at"] >= cancelled["finished_at"]
    assert holder.job("sync")["cancelled"] == 1


def test_the_holder_stops_a_run_another_node_replaced_at_its_next_beat() -> None:
    with two_nodes() as (holder, other):
        job_id = _held_by(holder, other)
        holder.node.run_pass()  # no beat due, no wake-up: it has not looked at its rows yet
        assert holder.runner.cancelled == []
        holder.clock.advance(timedelta(seconds=10))  # one lease beat
        holder.node.run_pass()
        assert holder.runner.cancelled == [f"{job_id}-1"]
        _ends_cancelled_then_the_new_one_runs(holder, other, job_id)


def test_the_other_nodes_write_wakes_the_holder_to_stop_its_run_at_once() -> None:
    with two_nodes() as (holder, other):
        woken = threading.Event()
        inner = holder.node.store.inner
        assert isinstance(inner, PostgresStore)

        def wake() -> None:
            holder.node.wake()
            woken.set()

        listener = inner.watch(wake)
        try:
            assert listener.listening.wait(10)
            job_id = _held_by(holder, other, woken)
            assert woken.wait(10)  # the other node's mark, by NOTIFY
            holder.node.run_pass()  # the same instant: no beat is due, the wake-up alone makes it look
            assert holder.runner.cancelled == [f"{job_id}-1"]
            _ends_cancelled_then_the_new_one_runs(holder, other, job_id)
        finally:
            listener()
