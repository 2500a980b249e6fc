"""Creates through HTTP by a source with `max_schedules`, and the CPU each of serve's processes spends on one.

A real `cronwright serve` on SQLite; the source `agent` (a quota far above what is made) creates `--warm`
schedules untimed, then `--creates` more over 4 connections (`agents.create_all`, the bench's http.client
agents), timed. It prints the rate, the bench's own CPU per create (its client threads share the machine),
and each of serve's processes' CPU per create (user + system, from /proc/PID/stat, around the timed creates):
the node, the fronts, the fork server and its workers. CPU per create moves less with a shared machine's load
than the rate does: compare trees by it, alternating runs.

    python bench/bench_create_cpu.py [--creates 3000] [--warm 200]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from pathlib import Path

from agents import add_sources, create_all, job
from common import log
from product import Serve, World, cpu, family


def command_of(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:70]
    return "(gone)"


def cpu_or_zero(pid: int) -> float:
    with contextlib.suppress(OSError):
        return cpu(pid)
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--creates", type=int, default=3_000)
    parser.add_argument("--warm", type=int, default=200, help="untimed creates first")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-create-cpu-") as folder:
        place = Path(folder)
        world = World(place)
        add_sources(world, {"agent": {"max_schedules": 10_000_000}})
        serve = Serve(world, env={**os.environ, "XDG_DATA_HOME": str(place / "data")})
        try:
            create_all(serve.url, "agent", [job(f"warm-{i}") for i in range(options.warm)])
            members = family(serve.pid)
            names = {pid: command_of(pid) for pid in members}
            before = {pid: cpu_or_zero(pid) for pid in members}
            client_began, began = time.process_time(), time.perf_counter()
            create_all(serve.url, "agent", [job(f"timed-{i}") for i in range(options.creates)])
            wall, client = time.perf_counter() - began, time.process_time() - client_began
            after = {pid: cpu_or_zero(pid) for pid in members}
        finally:
            serve.stop()
    count = options.creates
    log(f"{count:,} creates: {count / wall:.0f}/s, load {os.getloadavg()[0]:.2f}")
    log(f"  the bench's client: {client / count * 1e6:.0f} us a create")
    for pid in members:
        log(f"  {names[pid]}: {(after[pid] - before[pid]) / count * 1e6:.0f} us a create")


if __name__ == "__main__":
    main()
