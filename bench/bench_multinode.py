"""Occurrences per second with one, two and three nodes on PostgreSQL: cronwright against APScheduler 4.

    .venv/bin/python bench/bench_multinode.py            # 3,000 one-shots, 3 rounds
    .venv/bin/python bench/bench_multinode.py --quick    # 150 one-shots, 1 round: under a minute

The workload, on both sides: J one-shots due at one instant D, a no-op Python function, 16 workers per
process. Each round starts on a fresh PostgreSQL schema, starts N real processes (N = 1, 2, 3) and waits
until each is up, runs a warm-up (2 x 16 jobs per process, so that every worker has started), then
writes the J jobs due at D (far enough ahead that the writing is done before D;
a round whose writing overruns D is run again with more room), and times from D until the J outcomes
are committed, watching the database every 20 ms. Occurrences per second = J / that time.

- cronwright: N `cronwright serve` processes on one schema (`?schema=`), each with a `python` target
  whose action does nothing; jobs are written with `PostgresStore.insert`; done when J run rows exist.
- APScheduler 4 (newest pre-release, from bench/.venv-aps4): N processes, each a `Scheduler` with
  `max_concurrent_jobs=16` and a 16-thread executor, sharing a `SQLAlchemyDataStore` (asyncpg) on the same
  PostgreSQL server and an `AsyncpgEventBroker` (LISTEN/NOTIFY); schedules are added with `add_schedule`
  (DateTrigger at D, results kept an hour); done when J rows exist in `job_results`.

Sides alternate within each round (cronwright N=1, APScheduler N=1, cronwright N=2, ...), so a noisy
moment hits both. Medians over rounds. Writes bench/results/multinode.json.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aps4
import psycopg
from common import RESULTS, WORKERS, Row, log, machine, median, run_json, table
from psycopg import sql

from cronwright.core.model import AtSchedule, Job
from cronwright.store.postgres import PostgresStore

SERVER = os.environ.get("CRONWRIGHT_TEST_POSTGRES") or "postgresql://postgres@127.0.0.1:5432/test"
CRONWRIGHT = Path(sys.executable).parent / "cronwright"
APS4_CHILD = Path(__file__).resolve().parent / "aps4_multinode.py"
NODES = (1, 2, 3)
POLL = 0.02
NOOP_MODULE = "import cronwright\n\n\n@cronwright.action\ndef noop() -> None:\n    pass\n"


def warm_up(nodes: int) -> int:
    """Jobs run before the timed burst, so that every process has its workers started (threads, or
    cronwright's python worker processes, which start on demand)."""
    return 2 * WORKERS * nodes


class LateWrite(Exception):
    """The jobs were still being written at their due instant: the round is void."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def admin() -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(SERVER, autocommit=True)


def drop_schema(name: str) -> None:
    with admin() as connection:
        connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def count(schema: str, table_name: str) -> int:
    with admin() as connection:
        row = connection.execute(
            sql.SQL("SELECT count(*) FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(table_name))
        ).fetchone()
    return int(row[0]) if row else 0


def wait_until(what: str, check: Callable[[], bool], seconds: float, poll: float = 0.1) -> float:
    """Waits for `check()`; returns the wall-clock instant (time.time()) at which it first held."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"after {seconds:.0f}s, still waiting for {what}")
        time.sleep(poll)
    return time.time()


def timed_from(due: datetime, schema: str, table_name: str, jobs: int, seconds: float) -> float:
    """Seconds from `due` until `jobs` rows exist in schema.table, watched on one connection."""
    with admin() as connection:
        query = sql.SQL("SELECT count(*) FROM {}.{}").format(
            sql.Identifier(schema), sql.Identifier(table_name)
        )

        def done() -> bool:
            row = connection.execute(query).fetchone()
            return bool(row and row[0] >= jobs)

        finished = wait_until(f"{jobs} rows in {table_name}", done, seconds, POLL)
    return finished - due.timestamp()


def stop_all(processes: list[subprocess.Popen[Any]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


# --- cronwright -------------------------------------------------------------------------------------


def one_shot(index: int, due: datetime) -> Job:
    return Job(
        id=0,
        name=f"shot-{index:05}",
        target="bench",
        action="noop",
        args={},
        schedule=AtSchedule(due),
        ends_at=due + timedelta(hours=1),
        created_at=due,
        updated_at=due,
        next_run_at=due,
    )


def cronwright_round(nodes: int, jobs: int, margin: float, folder: Path) -> dict[str, float]:
    schema = f"cw_bench_{secrets.token_hex(5)}"
    url = f"{SERVER}{'&' if '?' in SERVER else '?'}schema={schema}"
    (folder / "bench_noop.py").write_text(NOOP_MODULE)
    store = PostgresStore(url)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for index in range(nodes):
            config = folder / f"node-{index}.toml"
            config.write_text(
                f"""
[node]
zone = "UTC"
store = {json.dumps(url)}
listen = "127.0.0.1:{free_port()}"
max_concurrency = {WORKERS}
shutdown_grace = "5s"

[targets.bench]
kind = "python"
module = "bench_noop"
path = [{json.dumps(str(folder))}]
"""
            )
            with (folder / f"node-{index}.err").open("wb") as stderr:
                argv = [str(CRONWRIGHT), "--config", str(config), "serve"]
                processes.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr))
        wait_until(f"{nodes} cronwright nodes to beat", lambda: len(store.beats()) >= nodes, 60)
        warm = warm_up(nodes)
        for index in range(warm):
            store.insert(one_shot(jobs + index, datetime.now(UTC)))
        wait_until("the warm-up", lambda: count(schema, "runs") >= warm, 120)
        due = datetime.fromtimestamp(time.time() + margin, UTC)
        began = time.perf_counter()
        for index in range(jobs):
            store.insert(one_shot(index, due))
        write_seconds = time.perf_counter() - began
        if time.time() >= due.timestamp():
            raise LateWrite(write_seconds)
        seconds = timed_from(due, schema, "runs", warm + jobs, 600)
        done = store.counts().get("done", 0)
        if done != warm + jobs:
            raise RuntimeError(f"cronwright: {done} of {warm + jobs} one-shots done")
        with admin() as connection:
            row = connection.execute(
                sql.SQL("SELECT count(*), count(DISTINCT job_id) FROM {}.runs").format(sql.Identifier(schema))
            ).fetchone()
        if row is None or row[0] != row[1] or row[0] != warm + jobs:
            raise RuntimeError(f"cronwright: {row} runs for {warm + jobs} one-shots: not every one ran once")
        return {"seconds": seconds, "write_seconds": write_seconds}
    finally:
        stop_all(processes)
        store.close()
        drop_schema(schema)


# --- APScheduler 4 ----------------------------------------------------------------------------------


def aps4_round(nodes: int, jobs: int, margin: float, folder: Path) -> dict[str, float]:
    schema = f"aps4_bench_{secrets.token_hex(5)}"
    with admin() as connection:
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    common = [
        "--url",
        SERVER.replace("postgresql://", "postgresql+asyncpg://", 1),
        "--dsn",
        SERVER,
        "--schema",
        schema,
        "--channel",
        schema,
    ]
    child = [str(aps4.python()), str(APS4_CHILD)]
    processes: list[subprocess.Popen[str]] = []
    try:
        # The warm-up's writer creates the tables before the schedulers start (so that they do not race to
        # create them); its jobs, due at once, are run as soon as they do.
        warm = warm_up(nodes)
        now = datetime.now(UTC).isoformat()
        run_json(
            [*child, "add", *common, "--jobs", str(warm), "--due", now, "--prefix", "warm-"], timeout=300
        )
        for index in range(nodes):
            with (folder / f"aps4-{index}.err").open("w") as stderr:
                processes.append(
                    subprocess.Popen(
                        [*child, "serve", *common, "--workers", str(WORKERS)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=stderr,
                        text=True,
                    )
                )
        for process in processes:
            assert process.stdout is not None
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError(f"an APScheduler 4 scheduler did not start: see {folder}/aps4-*.err")
        wait_until("the warm-up", lambda: count(schema, "job_results") >= warm, 120)
        due = datetime.fromtimestamp(time.time() + margin, UTC)
        began = time.perf_counter()  # the child's start-up counts: the writing must end before `due`
        added = run_json([*child, "add", *common, "--jobs", str(jobs), "--due", due.isoformat()], timeout=900)
        write_seconds = time.perf_counter() - began
        if added["finished_at"] >= due.timestamp():
            raise LateWrite(write_seconds)
        seconds = timed_from(due, schema, "job_results", warm + jobs, 900)
        with admin() as connection:
            outcomes = dict(
                connection.execute(
                    sql.SQL("SELECT outcome::text, count(*) FROM {}.job_results GROUP BY 1").format(
                        sql.Identifier(schema)
                    )
                ).fetchall()
            )
        return {
            "seconds": seconds,
            "write_seconds": write_seconds,
            "add_seconds": float(added["add_seconds"]),
            "outcomes": outcomes,
        }
    finally:
        for process in processes:
            if process.stdin is not None and process.poll() is None:
                process.stdin.close()
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        drop_schema(schema)


# --- rounds -----------------------------------------------------------------------------------------


def measured(
    side: str,
    run: Callable[[int, int, float, Path], dict[str, Any]],
    nodes: int,
    jobs: int,
    margins: dict[str, float],
) -> dict[str, Any]:
    """One round of one side; a round whose writing overran the due instant is run again, with more room."""
    for _ in range(3):
        margin = margins[side]
        with tempfile.TemporaryDirectory(prefix="bench-multinode-") as folder:
            try:
                result = run(nodes, jobs, margin, Path(folder))
            except LateWrite as late:
                margins[side] = max(margin * 2, float(late.args[0]) * 1.5 + 1.0)
                log(f"  {side} x{nodes}: writing took {late.args[0]:.1f}s, past the due instant; again")
                continue
        # Room for the next round: the writing time seen here, and some.
        margins[side] = result["write_seconds"] * 1.3 + 0.7
        result["rate"] = jobs / result["seconds"]
        log(
            f"  {side} x{nodes}: {result['rate']:.0f} occurrences/s "
            f"({result['seconds']:.2f}s; writing {result['write_seconds']:.1f}s)"
        )
        return result
    raise RuntimeError(f"{side} x{nodes}: the jobs could not be written before their due instant")


def rows(jobs: int, aps4_jobs: int, rounds: int) -> tuple[list[Row], dict[str, Any]]:
    version, missing = aps4.ensure_venv()
    if version is not None:
        ready = subprocess.run(
            [str(aps4.python()), "-c", "import asyncpg, sqlalchemy"],
            capture_output=True,
            text=True,
            check=False,
        )
        if ready.returncode != 0:
            install = subprocess.run(
                [str(aps4.python()), "-m", "pip", "install", "--quiet", "asyncpg"],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if install.returncode != 0:
                version, missing = (
                    None,
                    f"cannot install asyncpg in bench/.venv-aps4: {install.stderr[-200:]}",
                )
    peer = f"APScheduler {version} (SQLAlchemyDataStore, asyncpg)" if version else ""
    samples: dict[str, dict[int, list[dict[str, Any]]]] = {"cronwright": {}, "aps4": {}}
    margins = {"cronwright": 0.8 + jobs * 0.002, "aps4": 1.5 + aps4_jobs * 0.006}
    for number in range(rounds):
        log(f"round {number + 1} of {rounds}")
        for nodes in NODES:
            samples["cronwright"].setdefault(nodes, []).append(
                measured("cronwright", cronwright_round, nodes, jobs, margins)
            )
            if version is not None:
                samples["aps4"].setdefault(nodes, []).append(
                    measured("aps4", aps4_round, nodes, aps4_jobs, margins)
                )
    found = []
    single = median(sample["rate"] for sample in samples["cronwright"][1])
    for nodes in NODES:
        ours = median(sample["rate"] for sample in samples["cronwright"][nodes])
        theirs = median(sample["rate"] for sample in samples["aps4"][nodes]) if version else None
        found.append(
            Row(
                name=f"multi-node, PostgreSQL: occurrences/s, {nodes} node{'s' if nodes > 1 else ''}",
                unit="/s",
                better="higher",
                cronwright=ours,
                peer=peer,
                peer_value=theirs,
                note="" if version else f"peer unavailable: {missing}",
                details={
                    "jobs": jobs,
                    "peer_jobs": aps4_jobs,
                    "scaling_vs_one_node": ours / single,
                    "cronwright_samples": samples["cronwright"][nodes],
                    "peer_samples": samples["aps4"].get(nodes, []),
                },
            )
        )
    three = median(sample["rate"] for sample in samples["cronwright"][NODES[-1]])
    found.append(
        Row(
            name=f"multi-node, PostgreSQL: {NODES[-1]} nodes against 1 (every occurrence ran once)",
            unit="/s",
            better="higher",
            cronwright=three,
            peer="cronwright, 1 node",
            peer_value=single,
            details={"jobs": jobs},
        )
    )
    return found, {"aps4": version or f"unavailable: {missing}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="150 one-shots, one round: under a minute")
    parser.add_argument("--jobs", type=int, help="one-shots per round (default 3,000; --quick 150)")
    parser.add_argument("--aps4-jobs", type=int, help="APScheduler 4's one-shots per round (default: --jobs)")
    parser.add_argument("--rounds", type=int, help="rounds (default 3; --quick 1)")
    parser.add_argument("--json", type=Path, default=RESULTS / "multinode.json")
    options = parser.parse_args()
    jobs = options.jobs or (150 if options.quick else 3_000)
    aps4_jobs = options.aps4_jobs or jobs
    rounds = options.rounds or (1 if options.quick else 3)
    started = time.monotonic()
    about = machine()
    found, peers = rows(jobs, aps4_jobs, rounds)
    print(table(found))
    for row in found:
        if "scaling_vs_one_node" in row.details:  # the "3 nodes against 1" row is that ratio already
            print(f"{row.name}: cronwright scaling vs one node {row.details['scaling_vs_one_node']:.2f}x")
    options.json.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "benchmark": "multinode",
        "server": SERVER,
        "sizes": {"jobs": jobs, "aps4_jobs": aps4_jobs, "rounds": rounds, "workers_per_process": WORKERS},
        "rows": [row.as_dict() for row in found],
        "peers": peers,
        "seconds": time.monotonic() - started,
        "machine": about,
    }
    options.json.write_text(json.dumps(document, indent=2, default=str) + "\n")
    log(f"wrote {options.json} in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
