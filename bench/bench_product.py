"""Throughput through the whole product: `cronwright serve` and `cronwright tick` processes against
APScheduler 3.11 doing the same work, in the same run.

The work: N one-shots due at one instant, each running a trivial action, every outcome durable in SQLite.

- cronwright `serve`: a running `cronwright serve` process (its python worker warm); the N one-shots are
  written into its store a moment before they are due (one made through the CLI, the rest its copies in
  SQL), the node is woken as the CLI wakes it (SIGUSR1), and the time runs from the due instant until N
  run rows are in the store, watched from outside every 10 ms.
- cronwright `tick`: the N one-shots already due; the time of the whole `cronwright tick` process, from
  its start (interpreter and imports included) to its exit, every run recorded. One untimed tick with
  nothing due runs first on the same config, as the tick of a minute before would have: its python target's
  description is then cached, as a tick run from cron every minute finds it.
- APScheduler 3.11: BackgroundScheduler, SQLAlchemyJobStore on SQLite, ThreadPoolExecutor(16), resumed
  with the N jobs stored, until every job ran and was removed from its store (its durable change).
- APScheduler 3.11 as a process, the peer of `tick` timed alike: a fresh interpreter that imports it,
  starts a scheduler on a store that holds the N jobs already due, and exits when every job ran and was
  removed; timed from its start to its exit, as the `tick` is.

The actions: python, cronwright's `py.noop` in its warm worker pool (a separate process: isolation)
against APScheduler calling a no-op function in its thread; command, cronwright's `sh.true` (/bin/true)
against APScheduler calling subprocess.run(["/bin/true"]) in its thread.

    python bench/bench_product.py [--quick] [--jobs N ...] [--rounds R]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import aps3
from bench_throughput import apscheduler_round
from common import WORKERS, Row, clone_rows, log, median, table, utc_now
from product import Serve, World, rss_mb, wait_until, workers

# How far ahead of their due instant the one-shots are written into a serving node's store.
MARGIN = timedelta(seconds=1)
# One-shots run before the timed ones in `serve`, so that every worker of its pool has started.
WARM_UP = 2 * WORKERS
ACTIONS = {"python": ("py", "noop", aps3.noop), "command": ("sh", "true", aps3.true_command)}


def serve_round(jobs: int, kind: str, folder: Path) -> float:
    target, action, _ = ACTIONS[kind]
    world = World(folder)
    template = world.template(target, action)
    serve = Serve(world)
    try:
        # A serving node's pool is warm: a first burst starts every worker (16), as a node that has been
        # running has; the timed one-shots come after.
        world.due_at_once(template, WARM_UP, utc_now(), "warm-")
        serve.wake()
        wait_until("the warm-up runs", lambda: world.runs() >= WARM_UP, 600)
        # Far enough ahead for the copies to be written before they are due (the write is not timed).
        due = utc_now() + MARGIN + timedelta(seconds=jobs / 1_000)
        world.due_at_once(template, jobs, due)
        runs = world.run_counter()
        if utc_now() >= due:
            raise RuntimeError("the one-shots were still being written at their due instant")
        serve.wake()
        finished = wait_until(f"{jobs} runs recorded", lambda: runs() >= WARM_UP + jobs, 1800)
        seconds = finished - due.timestamp()
    finally:
        serve.stop()
    check(world, WARM_UP + jobs)
    return seconds


def tick_round(jobs: int, kind: str, folder: Path) -> float:
    target, action, _ = ACTIONS[kind]
    world = World(folder)
    template = world.template(target, action)
    # A tick that runs every minute finds its python target described in the cache already: one untimed
    # tick with nothing due first, as the serve rows warm their pool. (A first tick on a new config
    # describes its module, about 0.15 s more; see bench/README.md.)
    quiet(world.argv("tick"), "the untimed first tick")
    world.due_at_once(template, jobs, utc_now())
    began = time.perf_counter()
    done = subprocess.run(
        world.argv("tick", "--json"), capture_output=True, text=True, timeout=1800, check=False
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"cronwright tick failed: {done.stderr[-600:]}")
    check(world, jobs)
    return seconds


def quiet(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed: {done.stderr[-600:]}")


def check(world: World, jobs: int) -> None:
    found = world.outcomes()
    if found.get("done") != jobs or found.get("active") != 1 or found["ran_twice"] or world.runs() != jobs:
        raise RuntimeError(f"cronwright did not finish every one-shot exactly once: {found}")


def peer_round(jobs: int, kind: str, folder: Path) -> float:
    return apscheduler_round(jobs, folder, ACTIONS[kind][2])


def peer_process_round(jobs: int, kind: str, folder: Path) -> float:
    """Seconds of a whole APScheduler process (interpreter start, imports and all) running the N jobs."""
    db = folder / "aps.db"
    setup = aps3.scheduler(db)
    setup.start(paused=True)
    state = aps3.template_state(setup, ACTIONS[kind][2], utc_now())
    setup.shutdown(wait=False)
    aps3.insert_due(db, state, "job-", jobs, utc_now())
    script = f"import aps3, pathlib; aps3.run_due_process(pathlib.Path({str(db)!r}), {jobs})"
    here = Path(__file__).parent
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=here, capture_output=True, text=True, timeout=1800, check=False
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0 or aps3.count_jobs(db) != 0:
        raise RuntimeError(f"the APScheduler process failed: {done.stderr[-600:]}")
    return seconds


# Per round, in this order, so that a noisy moment hits every side.
SIDES = (
    ("serve", serve_round),
    ("tick", tick_round),
    ("peer", peer_round),
    ("peer_process", peer_process_round),
)


def rows(sizes: dict[str, list[int]], rounds: int) -> list[Row]:
    """`sizes` maps an action kind to the Ns to run it at. Per N, per round: serve, tick, APScheduler
    resumed, APScheduler as a whole process (the peer of `tick` timed alike)."""
    found: list[Row] = []
    for kind, counts in sizes.items():
        for jobs in counts:
            samples: dict[str, list[float]] = {side: [] for side, _ in SIDES}
            for round_no in range(rounds):
                for side, run in SIDES:
                    with tempfile.TemporaryDirectory(prefix="bench-product-") as folder:
                        samples[side].append(run(jobs, kind, Path(folder)))
                log(
                    f"product {kind} {jobs} round {round_no + 1}/{rounds}: "
                    + ", ".join(f"{side} {jobs / s[-1]:.0f}/s" for side, s in samples.items())
                )
            peer = "APScheduler 3.11" + (" (subprocess.run in its pool)" if kind == "command" else "")
            for side in ("serve", "tick"):
                found.append(
                    Row(
                        f"`{side}`, {kind} action: {jobs:,} one-shots due at once",
                        "firings/s",
                        "higher",
                        jobs / median(samples[side]),
                        peer,
                        jobs / median(samples["peer"]),
                        details={
                            "jobs": jobs,
                            "rounds": rounds,
                            "seconds": samples[side],
                            "peer_seconds": samples["peer"],
                        },
                    )
                )
            found.append(
                Row(
                    f"`tick`, {kind} action: {jobs:,} one-shots due at once, both sides whole processes",
                    "firings/s",
                    "higher",
                    jobs / median(samples["tick"]),
                    peer + " as a process",
                    jobs / median(samples["peer_process"]),
                    note="interpreter start and imports counted on both sides",
                    details={
                        "jobs": jobs,
                        "rounds": rounds,
                        "seconds": samples["tick"],
                        "peer_seconds": samples["peer_process"],
                    },
                )
            )
    return found


def rss_rows(schedules: int) -> list[Row]:
    """RSS of an idle `cronwright serve` holding `schedules` cron schedules not due (copies in SQL of one
    made through the CLI: adding them through the API is the scale row's business), and of its worker."""
    with tempfile.TemporaryDirectory(prefix="bench-rss-") as folder:
        world = World(Path(folder))
        later = utc_now() + timedelta(hours=1)
        world.add("rss-0", "py", "noop", "--cron", f"{later.minute} {later.hour} * * *")
        clone_rows(world.db, "rss-0", "rss-copy-", schedules - 1)
        began = time.perf_counter()
        serve = Serve(world)
        up = time.perf_counter() - began
        try:
            time.sleep(2.0)  # idle after its boot pass
            ours, worker = rss_mb(serve.pid), sum(rss_mb(child) for child in workers(serve.pid))
        finally:
            serve.stop()
    log(f"rss: serve {ours:.1f} MB (+ worker {worker:.1f} MB) holding {schedules:,}, up in {up:.1f}s")
    return [
        Row(
            f"RSS of an idle `serve` holding {schedules:,} schedules (rows copied in SQL)",
            "MB",
            "lower",
            ours,
            "",
            note=f"target < 200 MB; its python worker: {worker:.0f} MB more; up in {up:.1f} s",
            details={"worker_mb": worker, "startup_s": up, "schedules": schedules},
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 one-shots, one round")
    parser.add_argument(
        "--jobs", type=int, nargs="*", help="python action Ns (default 2,000 10,000; none: no python rows)"
    )
    parser.add_argument(
        "--command-jobs", type=int, nargs="*", help="command action Ns (default 2,000; none: no command rows)"
    )
    parser.add_argument("--rounds", type=int)
    options = parser.parse_args()
    quick = options.quick
    sizes: dict[str, Any] = {
        "python": options.jobs if options.jobs is not None else [200] if quick else [2_000, 10_000],
        "command": options.command_jobs
        if options.command_jobs is not None
        else ([200] if quick else [2_000]),
    }
    print(table(rows(sizes, options.rounds or (1 if quick else 3))))


if __name__ == "__main__":
    main()
