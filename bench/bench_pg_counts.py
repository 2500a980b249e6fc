"""A source's counts on PostgreSQL at 10,000 and 100,000 jobs (issue 34): `counts(created_by=)` and
`count_live`, timed in process against the store, medians of many reads.

The store is filled by SQL copies of one created job (fast, not through the API): nine in ten rows are
the source's, one in ten another's. A run prints one JSON line per size; `--out` writes them too.

    CRONWRIGHT_TEST_POSTGRES=postgresql://postgres@127.0.0.1:5432/test \
        python bench/bench_pg_counts.py --sizes 10000 100000 --reads 200
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from cronwright.core.model import AtSchedule, Job
from cronwright.store import postgres
from cronwright.store.postgres import PostgresStore

# (Read so, this file also measures the code from before the count rows: its store has no FOLD_AFTER.)
FOLD_AFTER: int = getattr(postgres, "FOLD_AFTER", 0)

COPY = (
    "INSERT INTO {}.jobs (name, state, deleted, target, wake_at, version, data, created_by) "
    "SELECT j.name || '-' || %s || i, j.state, false, j.target, j.wake_at, 1, "
    "jsonb_set(j.data::jsonb, '{{name}}', to_jsonb(j.name || '-' || %s || i))::json, %s "
    "FROM generate_series(1, %s) AS i, {}.jobs AS j WHERE j.name = 'template'"
)


def _timed(read: Any, reads: int) -> float:
    """The median of `reads` calls of `read`, in milliseconds."""
    read()
    spans = []
    for _ in range(reads):
        start = time.perf_counter()
        read()
        spans.append(time.perf_counter() - start)
    return statistics.median(spans) * 1000


def _write_cost(url: str, schema: str, rows: int = 5_000, repeats: int = 7) -> float:
    """What a change of state costs a write, triggers included: the median of `repeats` updates of `rows`
    of the source's jobs (each flips their state), per row, in microseconds."""
    flip = sql.SQL(
        "UPDATE {} SET state = CASE state WHEN 'active' THEN 'paused' ELSE 'active' END"
        " WHERE id IN (SELECT id FROM {} WHERE created_by = 'agent' ORDER BY id DESC LIMIT %s)"
    ).format(sql.Identifier(schema, "jobs"), sql.Identifier(schema, "jobs"))
    spans = []
    with psycopg.connect(url, autocommit=True) as connection:
        for _ in range(repeats):
            start = time.perf_counter()
            connection.execute(flip, (rows,))
            spans.append(time.perf_counter() - start)
    return statistics.median(spans) / rows * 1e6


def measure(url: str, size: int, reads: int) -> dict[str, Any]:
    schema = f"bench_counts_{secrets.token_hex(4)}"
    store = PostgresStore(url, schema=schema)
    try:
        due = datetime(2030, 1, 1, tzinfo=UTC)
        store.insert(
            Job(
                0,
                "template",
                "reports",
                "daily",
                {},
                AtSchedule(due),
                due + timedelta(days=1),
                due,
                due,
                created_by="agent",
                next_run_at=due,
            )
        )
        with psycopg.connect(url, autocommit=True) as connection:
            query = sql.SQL(COPY).format(sql.Identifier(schema), sql.Identifier(schema))
            connection.execute(query, ("a", "a", "agent", size * 9 // 10 - 1))
            connection.execute(query, ("o", "o", "other", size - size * 9 // 10))
            # What a node's folds and autovacuum leave after the bulk copy (a store without the count rows
            # has nothing to fold, and its fold_counts is absent).
            fold = getattr(store, "fold_counts", None)
            if fold is not None:
                fold()
            connection.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, "jobs")))
            if fold is not None:
                connection.execute(
                    sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, "job_count_deltas"))
                )
        assert sum(store.counts().values()) == size
        figures: dict[str, Any] = {
            "jobs": size,
            "counts_of_source_ms": round(_timed(lambda: store.counts(created_by="agent"), reads), 3),
            "count_live_ms": round(_timed(lambda: store.count_live("agent"), reads), 3),
        }
        if fold is not None:
            # The worst a read meets: as many count rows not yet folded as a read leaves alone (a state
            # change of FOLD_AFTER / 2 - 1 jobs appends FOLD_AFTER - 2 rows, beside the folded ones).
            with psycopg.connect(url, autocommit=True) as connection:
                connection.execute(
                    sql.SQL(
                        "UPDATE {} SET state = 'paused' WHERE id IN"
                        " (SELECT id FROM {} WHERE created_by = 'agent' ORDER BY id LIMIT %s)"
                    ).format(sql.Identifier(schema, "jobs"), sql.Identifier(schema, "jobs")),
                    (FOLD_AFTER // 2 - 1,),
                )
            figures["counts_of_source_unfolded_ms"] = round(
                _timed(lambda: store.counts(created_by="agent"), reads), 3
            )
            figures["count_live_unfolded_ms"] = round(_timed(lambda: store.count_live("agent"), reads), 3)
        figures["state_change_per_row_us"] = round(_write_cost(url, schema), 2)
        figures["load_average"] = os.getloadavg()[0]
        return figures
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    url = os.environ["CRONWRIGHT_TEST_POSTGRES"]
    lines = [json.dumps(measure(url, size, args.reads)) for size in args.sizes]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
