"""1,000,000 schedules created through HTTP into one `cronwright serve` on SQLite: how long it takes and the
resident memory of all of serve's processes, one by one, as the store grows.

The schedules are made as the control-plane bench makes them (`POST /v1/call` `create_job`, 4 connections at
once), by the source `bulk` (no `max_schedules`: the quota'd rate is the control-plane bench's row). Every
`--every` schedules it logs the count, the rate of that stretch and each process's RSS, to stderr and, as one
JSON line, to `--progress`. `--budget` bounds the run: when it is spent, the run stops where it is and says
how far it got.

    python bench/bench_million.py [--schedules 1000000] [--every 50000] [--budget 4200] [--progress FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents import add_sources, create_all, job, serve_rss_mb
from common import log
from product import Serve, World, family, rss_mb

CHUNK = 5_000


def name_of(index: int) -> str:
    return f"m{index:07d}"


def processes(pid: int) -> list[dict[str, Any]]:
    """Each of serve's processes: its pid, what it runs (the start of its command line) and its RSS."""
    found = []
    for member in family(pid):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{member}/cmdline").read_bytes().split(b"\0")
            what = " ".join(part.decode(errors="replace") for part in argv[:4])[-120:]
            found.append({"pid": member, "cmd": what, "rss_mb": round(rss_mb(member), 1)})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--schedules", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=50_000, help="log progress each this many schedules")
    parser.add_argument("--budget", type=float, default=4200.0, help="seconds at most; stops there")
    parser.add_argument("--progress", type=Path, help="a file to append one JSON line to at each step")
    parser.add_argument("--result", type=Path, help="the summary, as JSON")
    options = parser.parse_args()
    began_at = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="bench-million-") as folder:
        place = Path(folder)
        world = World(place)
        add_sources(world, {"bulk": {}})
        env = {**os.environ, "XDG_DATA_HOME": str(place / "data")}
        serve = Serve(world, env=env)
        steps: list[dict[str, Any]] = []
        made = 0
        began = time.perf_counter()
        mark, marked = began, 0
        try:
            steps.append({"schedules": 0, "seconds": 0.0, "processes": processes(serve.pid)})
            while made < options.schedules and time.perf_counter() - began < options.budget:
                size = min(CHUNK, options.schedules - made)
                create_all(serve.url, "bulk", [job(name_of(i)) for i in range(made, made + size)])
                made += size
                if made % options.every == 0 or made == options.schedules:
                    now = time.perf_counter()
                    step = {
                        "schedules": made,
                        "seconds": round(now - began, 1),
                        "rate": round((made - marked) / (now - mark), 1),
                        "rss_mb": round(serve_rss_mb(serve.pid), 1),
                        "db_mb": round(sum(p.stat().st_size for p in place.glob("cw.db*")) / 2**20, 1),
                        "load": os.getloadavg(),
                        "processes": processes(serve.pid),
                    }
                    steps.append(step)
                    mark, marked = now, made
                    log(
                        f"million: {made:,} in {step['seconds']} s ({step['rate']}/s),"
                        f" RSS {step['rss_mb']} MB, db {step['db_mb']} MB, load {step['load'][0]:.2f}"
                    )
                    if options.progress:
                        with options.progress.open("a") as file:
                            file.write(json.dumps(step) + "\n")
            seconds = time.perf_counter() - began
        finally:
            serve.stop()
    summary = {
        "bench": "bench_million.py",
        "began": began_at.isoformat(),
        "asked": options.schedules,
        "made": made,
        "seconds": round(seconds, 1),
        "rate": round(made / seconds, 1),
        "budget_s": options.budget,
        "peak_rss_mb": max((s.get("rss_mb", 0.0) for s in steps), default=0.0),
        "steps": steps,
    }
    peak = summary["peak_rss_mb"]
    log(f"million: {made:,} of {options.schedules:,} in {seconds:.0f} s; peak RSS {peak} MB")
    if options.result:
        options.result.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
