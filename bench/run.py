"""Runs every benchmark and prints one table: cronwright's median, its peer's median, and the ratio.

    python bench/run.py [--quick]

The peers run in the same run, side by side: APScheduler 3.11 from this venv, APScheduler 4 from
bench/.venv-aps4 (made on first use), croniter and cronsim, and a fresh interpreter per run for python
actions. Results go to bench/results/<timestamp>.json and bench/results/latest.json, with the machine.
See bench/README.md for what each number means.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aps4
import bench_control_plane
import bench_cron
import bench_idle
import bench_latency
import bench_multinode
import bench_neighbours
import bench_pool
import bench_product
import bench_scale
import bench_throughput
import bench_ui
from common import BENCH, Row, log, machine, markdown_table, table, write_results

SECTIONS = (
    "product",
    "lag",
    "rss",
    "idle",
    "ui",
    "control",
    "neighbours",
    "multinode",
    "throughput",
    "latency",
    "scale",
    "cron",
    "pool",
)


def failed(section: str, error: BaseException) -> Row:
    """A section that broke still gets its line, saying why, and the rest of the run goes on."""
    reason = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
    return Row(f"{section}: failed", "", "lower", None, "", note=f"failed: {reason[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one round: under a minute")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run these sections only")
    parser.add_argument(
        "--schedules", type=int, help="the scale row's N (default 1,000,000; --quick 100,000)"
    )
    parser.add_argument(
        "--add-sample",
        type=int,
        help="scale: create only this many of the N through the service, copy the rest in SQL, and estimate"
        " the time to add N from their rate (default: all N in a full run, 1,000 in --quick)",
    )
    parser.add_argument(
        "--jobs", type=int, help="the engine-only throughput row's N (default 10,000; --quick 200)"
    )
    parser.add_argument(
        "--product-jobs",
        type=int,
        nargs="*",
        help="the product rows' Ns, python action (default 2,000 10,000; --quick 200; none: no python rows)",
    )
    parser.add_argument(
        "--command-jobs",
        type=int,
        nargs="*",
        help="the product rows' Ns, command action (default 2,000; none: no command rows)",
    )
    parser.add_argument("--rss-schedules", type=int, help="the serve RSS row's N (default 1,000,000)")
    parser.add_argument("--rounds", type=int, help="rounds of the product rows (default 3; --quick 1)")
    parser.add_argument(
        "--lag-samples", type=int, help="samples of each start-lag row (default 60; --quick 10)"
    )
    parser.add_argument(
        "--control-schedules",
        type=int,
        nargs="+",
        help="the control-plane bench's Ns (default 1,000 10,000 100,000; --quick 1,000)",
    )
    parser.add_argument(
        "--control-million", action="store_true", help="control plane: add N = 1,000,000 (about an hour)"
    )
    parser.add_argument(
        "--control-postgres",
        action="store_true",
        help="control plane: run on PostgreSQL too ($CRONWRIGHT_TEST_POSTGRES), after SQLite",
    )
    parser.add_argument(
        "--control-fill-budget",
        type=float,
        help="control plane: seconds the source with max_schedules may take to fill a level (default 1,200"
        " or N/400), after which a source without one makes the rest",
    )
    parser.add_argument(
        "--neighbours-large", action="store_true", help="noisy neighbours: 100,000 schedules (default 10,000)"
    )
    parser.add_argument("--multinode-jobs", type=int, help="one-shots per multi-node round (default 3,000)")
    parser.add_argument("--multinode-rounds", type=int, help="multi-node rounds (default 3; --quick 1)")
    options = parser.parse_args()
    quick = options.quick
    sections = options.only or SECTIONS
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    began = time.monotonic()
    description = machine()
    # Made on first use (about half a minute, once); a failure becomes the row's "peer unavailable".
    aps4_version, aps4_missing = aps4.ensure_venv()
    description["peers"]["APScheduler 4 (bench/.venv-aps4)"] = aps4_version or f"unavailable: {aps4_missing}"
    log(
        f"cronwright bench, {'quick' if quick else 'full'} run; {description['cpu']}, "
        f"{description['cores']} cores"
    )
    sizes: dict[str, Any] = {
        "product_python_jobs": (
            options.product_jobs if options.product_jobs is not None else [200] if quick else [2_000, 10_000]
        ),
        "product_command_jobs": (
            options.command_jobs if options.command_jobs is not None else [200] if quick else [2_000]
        ),
        "product_rounds": options.rounds or (1 if quick else 3),
        "lag_samples": options.lag_samples or (10 if quick else 60),
        "rss_schedules": options.rss_schedules or (100_000 if quick else 1_000_000),
        "ui_schedules": bench_ui.SCHEDULES,
        "ui_requests": 7 if quick else bench_ui.REQUESTS,
        "control_schedules": (options.control_schedules or ([1_000] if quick else [1_000, 10_000, 100_000]))
        + ([bench_control_plane.MILLION] if options.control_million else []),
        "control_samples": 30 if quick else bench_control_plane.SAMPLES,
        "control_stores": ["sqlite", "postgresql"] if options.control_postgres else ["sqlite"],
        "control_fill_budget": options.control_fill_budget,
        "neighbours_schedules": bench_neighbours.LARGE
        if options.neighbours_large
        else bench_neighbours.SCHEDULES,
        "neighbours_seconds": 15.0 if quick else bench_neighbours.SECONDS,
        "neighbours_burst": bench_neighbours.BURST,
        "multinode_jobs": options.multinode_jobs or (150 if quick else 3_000),
        "multinode_rounds": options.multinode_rounds or (1 if quick else 3),
        "throughput_jobs": options.jobs or (200 if quick else 10_000),
        "throughput_rounds": 1 if quick else 3,
        "throughput_aps4_jobs": options.jobs or (200 if quick else 2_000),
        "latency_singles": 10 if quick else 50,
        "latency_bursts": 1 if quick else 3,
        "scale_schedules": options.schedules or (100_000 if quick else 1_000_000),
        "cron_rounds": 3 if quick else 9,
        "pool_rounds": 3 if quick else 7,
        "pool_firings": 10 if quick else 40,
        "idle_min_window_s": 0 if quick else 60,
    }
    runs: list[tuple[str, Callable[[], list[Row]]]] = [
        (
            "product",
            lambda: bench_product.rows(
                {"python": sizes["product_python_jobs"], "command": sizes["product_command_jobs"]},
                sizes["product_rounds"],
            ),
        ),
        ("lag", lambda: bench_latency.lag_rows(sizes["lag_samples"])),
        ("rss", lambda: bench_product.rss_rows(sizes["rss_schedules"])),
        ("ui", lambda: bench_ui.rows(sizes["ui_schedules"], sizes["ui_requests"])),
        ("control", lambda: control(sizes, 7 if quick else bench_ui.REQUESTS, details)),
        (
            "neighbours",
            lambda: bench_neighbours.rows(
                sizes["neighbours_schedules"], sizes["neighbours_seconds"], sizes["neighbours_burst"]
            ),
        ),
        ("multinode", lambda: multinode(sizes["multinode_jobs"], sizes["multinode_rounds"], details)),
        (
            "throughput",
            lambda: bench_throughput.rows(
                sizes["throughput_jobs"], sizes["throughput_rounds"], sizes["throughput_aps4_jobs"]
            ),
        ),
        ("latency", lambda: bench_latency.rows(sizes["latency_singles"], 0.1, sizes["latency_bursts"], 1000)),
        ("scale", lambda: scale(sizes["scale_schedules"], not quick, options.add_sample, details)),
        ("cron", lambda: bench_cron.rows(sizes["cron_rounds"])),
        ("pool", lambda: bench_pool.rows(sizes["pool_rounds"], sizes["pool_firings"])),
    ]
    rows: dict[str, list[Row]] = {}
    details: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=BENCH) as temporary:
        idle = None
        if "idle" in sections:
            try:
                idle = bench_idle.IdleSet(Path(temporary), bench_idle.postgres_available())
            except Exception as error:
                rows["idle"] = [failed("idle", error)]
        try:
            for section, run in runs:
                if section not in sections:
                    continue
                log(f"{section} ...")
                try:
                    rows[section] = run()
                except Exception as error:
                    traceback.print_exc()
                    rows[section] = [failed(section, error)]
            if idle is not None:
                time.sleep(max(0.0, sizes["idle_min_window_s"] - idle.elapsed()))
                try:
                    rows["idle"] = idle.finish()
                except Exception as error:
                    rows["idle"] = [failed("idle", error)]
        finally:
            if idle is not None:
                idle.abandon()
    ordered = [row for section in SECTIONS for row in rows.get(section, [])]
    seconds = time.monotonic() - began
    mode = "--quick" if quick else "full"
    print(f"\ncronwright bench ({mode} run, {seconds:.0f} s, {stamp}); ratio above 1: cronwright better")
    print(
        f"{description['cpu']}, {description['cores']} cores, {description['memory_mb']} MB, "
        f"{description['python']}; medians of runs side by side\n"
    )
    print(table(ordered))
    if "control_matrix" in details:
        print(f"\ncontrol plane, p50 / p99 in ms (peer: APScheduler 3.11)\n\n{details['control_matrix']}")
    document = {
        "stamp": stamp,
        "mode": mode,
        "command": " ".join(["python", "bench/run.py", *sys.argv[1:]]),
        "seconds": seconds,
        "machine": description,
        "sizes": sizes,
        "rows": [row.as_dict() for row in ordered],
        "details": details,
        "markdown": markdown_table(ordered),
    }
    path = write_results(document, stamp)
    print(f"\nwritten: {path.relative_to(BENCH.parent)} and bench/results/latest.json")


def multinode(jobs: int, rounds: int, details: dict[str, Any]) -> list[Row]:
    if not bench_idle.postgres_available():
        return [failed("multinode", RuntimeError(f"no PostgreSQL at {bench_idle.PG_SERVER}"))]
    found, peers = bench_multinode.rows(jobs, jobs, rounds)
    details["multinode"] = peers
    return found


def control(sizes: dict[str, Any], pages: int, details: dict[str, Any]) -> list[Row]:
    found: list[Row] = []
    for store in sizes["control_stores"]:
        if store == "postgresql" and not bench_idle.postgres_available():
            found.append(
                failed("control, PostgreSQL", RuntimeError(f"no PostgreSQL at {bench_idle.PG_SERVER}"))
            )
            continue
        found += bench_control_plane.rows(
            sizes["control_schedules"],
            sizes["control_samples"],
            pages,
            store == "postgresql",
            sizes["control_fill_budget"],
        )
    details["control_matrix"] = bench_control_plane.matrix(found)
    return found


def scale(schedules: int, full: bool, add_sample: int | None, details: dict[str, Any]) -> list[Row]:
    found, more = bench_scale.rows(schedules, full, add_sample)
    details["scale"] = more
    return found


if __name__ == "__main__":
    main()
