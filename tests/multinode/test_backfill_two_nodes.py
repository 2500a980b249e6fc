"""Semantic 35 on PostgreSQL: two nodes backfilling one range at once, several times over, queue each
occurrence once, and their passes, racing too, run each once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pg
from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.sources import operator
from cronwright.store.postgres import PostgresStore

CALLS = 4  # backfills per node, all released at once


def _backfill(node: Harness, barrier: threading.Barrier) -> int:
    barrier.wait(30)
    request = {
        "action": "backfill",
        "name": "hourly",
        "from": "2026-03-01T00:00:00+01:00",
        "to": "2026-03-02T13:30:00+01:00",
    }
    reply = node.protocol.dispatch(request, operator())
    assert reply["ok"], reply
    queued = reply["queued"]
    assert isinstance(queued, int)
    return queued


def test_concurrent_backfills_on_two_nodes_run_each_occurrence_once() -> None:
    with pg.scratch_url() as url:
        clock = ManualClock(at("2026-03-02T13:30:00+01:00"))
        first = make_harness(PostgresStore(url), clock)
        second = make_harness(PostgresStore(url), clock, node_id="second")
        try:
            first.create("hourly", {"cron": "0 * * * *"})  # made now: the day and a half before never ran
            nodes = [first, second] * CALLS
            barrier = threading.Barrier(len(nodes))
            with ThreadPoolExecutor(len(nodes)) as pool:
                queued = list(pool.map(lambda node: _backfill(node, barrier), nodes))
            expected = 24 + 14  # 1 March 00:00 to 23:00, and 2 March 00:00 to 13:00
            assert sum(queued) == expected and sorted(queued)[-1] == expected, queued

            with ThreadPoolExecutor(2) as pool:
                for _ in range(3):
                    list(pool.map(lambda node: node.tick(), (first, second)))
            calls = first.runner.calls + second.runner.calls
            scheduled = [call.scheduled_for for call in calls]
            assert len(scheduled) == expected and len(set(scheduled)) == expected
            assert len({call.fire_id for call in calls}) == expected
            shown = first.job("hourly")
            assert (shown["backfilled"], shown["backfill_queued"]) == (expected, 0)
        finally:
            first.runner.close()
            second.runner.close()
            first.node.store.close()
            second.node.store.close()
