"""Semantic 32 on PostgreSQL: two nodes on one store fire a jittered schedule at the same instants.

Each node computes the next jittered instant after the occurrence it fired; the instants the history
records, fired by the two nodes in turn, are the ones the first node planned before any of them ran.
"""

from __future__ import annotations

from datetime import timedelta

import pg
from conftest import at, make_harness
from cronwright.clock import ManualClock
from cronwright.store.postgres import PostgresStore


def test_two_nodes_compute_the_same_jittered_instants() -> None:
    with pg.scratch_url() as url:
        clock = ManualClock(at("2026-10-24T23:00:00+02:00"))
        first = make_harness(PostgresStore(url), clock)
        second = make_harness(PostgresStore(url), clock)
        try:
            first.create("spread", {"every": "30m", "jitter": "10m"})
            planned = first.ok("get", name="spread")["next_firings"]
            assert second.ok("get", name="spread")["next_firings"] == planned
            nodes = [second, first, second, first]
            for firing, node in zip(planned[:4], nodes, strict=True):
                due = at(firing["at"])
                clock.set(due - timedelta(seconds=1))
                assert first.tick()["fired"] == 0 and second.tick()["fired"] == 0
                clock.set(due + timedelta(seconds=1))
                assert node.tick()["fired"] == 1
                other = first if node is second else second
                assert other.tick()["fired"] == 0
            runs = first.ok("history", name="spread")["runs"]
            assert [run["scheduled_for"] for run in reversed(runs)] == [f["at"] for f in planned[:4]]
            assert {run["node"] for run in runs} == {first.node.id, second.node.id}
        finally:
            first.runner.close()
            second.runner.close()
            first.node.store.close()
            second.node.store.close()
