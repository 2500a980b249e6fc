"""The cost of a `/metrics` scrape's gauges, in process, on a SQLite store of N schedules (SQL copies of one
made through the protocol): what the fronts' process does for each scrape, without HTTP. Run it with
PYTHONPATH set to the code under test; with `render` (the code since session 3) the per-job series are
written by `AlertGauges.render`, as /metrics does; else by prometheus_client from the collector.

    python bench/bench_metrics_scrape.py N [N ...] [--scrapes 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "semantics")]


def main() -> None:
    import test_requests_bounded as crowd  # its store of N schedules, and its copies in SQL
    from prometheus_client import CollectorRegistry, generate_latest

    from conftest import at, make_harness
    from cronwright.clock import ManualClock
    from cronwright.notify.gauges import AlertGauges
    from cronwright.store.sqlite import SqliteStore
    from cronwright.telemetry.metrics import NodeGauges

    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--scrapes", type=int, default=10)
    options = parser.parse_args()
    found = []
    for size in options.sizes:
        store = SqliteStore(Path(tempfile.mkdtemp(prefix="bench-metrics-")) / "cw.db")
        harness = make_harness(store, ManualClock(at("2026-03-02T09:00:00+01:00")))
        job = {"name": "agent-job", "target": "reports", "action": "daily", "schedule": crowd.HOURLY}
        harness.protocol.dispatch({"action": "create_job", "job": job}, crowd.AGENT)
        crowd._copy_sqlite(store, "agent-job", size - 1)
        node = harness.node
        registry = CollectorRegistry()
        registry.register(NodeGauges(node))
        gauges = AlertGauges(node.store, lambda node=node: node.last_pass_at, 10_000)
        render = getattr(gauges, "render", None)
        if render is None:
            registry.register(gauges)
        times, size_bytes = [], 0
        for _ in range(options.scrapes):
            began = time.perf_counter()
            text = generate_latest(registry) + (render() if render is not None else b"")
            times.append(time.perf_counter() - began)
            size_bytes = len(text)
        row = {
            "schedules": size,
            "path": "render" if render is not None else "collect",
            "first_ms": round(times[0] * 1000, 1),
            "rest_median_ms": round(statistics.median(times[1:]) * 1000, 2),
            "rest_max_ms": round(max(times[1:]) * 1000, 2),
            "bytes": size_bytes,
            "load": os.getloadavg(),
        }
        print(json.dumps(row), flush=True)
        found.append(row)
        harness.runner.close()
        harness.node.lease.close()
        store.close()


if __name__ == "__main__":
    main()
