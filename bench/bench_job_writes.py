"""What migration 0005's counters and backfill index cost each job write of the firing path, on SQLite.

Suspected (issue 34's bench) of the `tick` loss at 10,000 one-shots: the `job_counts` triggers and the
partial index `jobs_backfilling`, whose WHERE parses the row's JSON (`json_valid`, `json_extract`). Measured
apart from everything else: N one-shots made by the real service (a template through the CLI, copies in
SQL), then the node's two writes of each firing, its claim and its outcome, as a pass writes them (the
store's own `save_jobs` statement, 16 rows a statement), timed in CPU seconds in this process, in an
in-memory copy of the store (no fsync: only what the statement costs). Each variant takes the minimum of
its repetitions, interleaved, which the machine's other load inflates least:

- `as is`: the schema of version 5;
- `no triggers`, `no backfill index`, `neither`: the same with those dropped;

    python bench/bench_job_writes.py [--jobs N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import clone_rows, utc_now
from product import World

from cronwright.store.sqlite import _JOB_ROW, _Q

TRIGGERS = "".join(f"DROP TRIGGER jobs_counted_{what}; " for what in ("insert", "update", "delete"))
INDEX = "DROP INDEX jobs_backfilling;"
VARIANTS = {"as is": "", "no triggers": TRIGGERS, "no backfill index": INDEX, "neither": TRIGGERS + INDEX}
PER_STATEMENT = 16  # the node's max_concurrency in the product bench: the rows of one pass's claim
COLUMNS = "id, version, name, state, dedupe_key, target, wake_at, flight_node, data, created_by"


def made(folder: Path, jobs: int) -> Path:
    world = World(folder)
    clone_rows(world.db, world.template("py", "noop"), "shot-", jobs, at=utc_now())
    return world.db


def copy(db: Path, drop: str) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    source = sqlite3.connect(db)
    source.backup(connection)
    source.close()
    if drop:
        connection.executescript(drop)
    return connection


def statements(connection: sqlite3.Connection) -> list[tuple[str, list[Any]]]:
    """The claim (flight_node set) and then the outcome (state done) of every one-shot, as save_jobs."""
    rows = connection.execute(f"SELECT {COLUMNS} FROM jobs WHERE name LIKE 'shot-%' ORDER BY id").fetchall()
    found = []
    for claim in (True, False):
        for start in range(0, len(rows), PER_STATEMENT):
            chunk = rows[start : start + PER_STATEMENT]
            params: list[Any] = []
            for job_id, version, name, state, dedupe, target, wake, _, data, owner in chunk:
                now = (state, "n1", version) if claim else ("done", None, version + 1)
                params += [name, now[0], dedupe, target, wake, now[1], data, owner, job_id, now[2]]
            query = _Q["save_jobs"].format(rows=", ".join([_JOB_ROW] * len(chunk)))
            found.append((query, params))
    return found


def seconds(connection: sqlite3.Connection) -> float:
    work = statements(connection)
    connection.execute("BEGIN")
    began = time.process_time()
    for query, params in work:
        if len(connection.execute(query, params).fetchall()) != len(params) // 10:
            raise RuntimeError("a write did not land")
    spent = time.process_time() - began
    connection.execute("ROLLBACK")  # the next repetition writes the same rows again
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-job-writes-") as folder:
        db = made(Path(folder), options.jobs)
        connections = {name: copy(db, drop) for name, drop in VARIANTS.items()}
    best = dict.fromkeys(VARIANTS, float("inf"))
    for _ in range(options.repeat):
        for name, connection in connections.items():
            best[name] = min(best[name], seconds(connection))
    writes = 2 * options.jobs
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"{writes:,} job writes ({options.jobs:,} firings), min of {options.repeat}; {load}")
    for name, spent in best.items():
        extra = (best["as is"] - spent) / writes * 1e6
        each = spent / writes * 1e6
        print(f"{name:18s} {spent * 1000:8.1f} ms  {each:6.2f} us/write  (as is: +{extra:.2f} us)")


if __name__ == "__main__":
    sys.exit(main())
