"""Python actions through the warm worker pool against a fresh interpreter per run.

Both paths run the same decorated action from the same module, one firing after another:

- warm pool: `TargetRunner.run`, the node's own path (registry check, secrets, envelope, a warm worker);
- fresh interpreter: `python -c` that imports the module and calls the action, what a runner without a pool
  (or a plain crontab line) pays on every firing.

The action returns the wall time at which it started, so the start latency is the time from the call to the
first line of the action. Figures are medians over several rounds.

    python bench/bench_pool.py [--quick] [--rounds N] [--firings N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from common import Row

from cronwright.config.settings import parse
from cronwright.core.model import EverySchedule, Job, Occurrence, Outcome
from cronwright.targets.executor import TargetRunner
from cronwright.targets.registry import build_registry
from cronwright.targets.secrets import Secrets

MODULE = """
    import time
    import cronwright

    @cronwright.action
    def started_at() -> float:
        return time.time()
"""

Fire = Callable[[], float]  # fires once; returns the action's start latency in seconds


def warm_pool(folder: Path) -> tuple[Fire, Callable[[], None]]:
    config = parse({"targets": {"bench": {"kind": "python", "module": "benchmod", "path": [str(folder)]}}})
    registry = build_registry(config, cache_dir=folder / "cache", base_dir=folder)
    runner = TargetRunner(registry, Secrets(environ={}))
    now = datetime.now(UTC)
    job = Job(
        1,
        "bench",
        "bench",
        "started_at",
        {},
        EverySchedule(timedelta(minutes=1)),
        now + timedelta(days=1),
        now,
        now,
    )
    occurrence = Occurrence(1, "bench-1", now, 1, now)

    def fire() -> float:
        sent = time.time()
        result = runner.run(job, occurrence)
        assert result.outcome is Outcome.OK, result
        return float(result.message) - sent

    return fire, runner.close


def fresh_interpreter(folder: Path) -> Fire:
    script = f"import sys; sys.path.insert(0, {str(folder)!r}); import benchmod; print(benchmod.started_at())"

    def fire() -> float:
        sent = time.time()
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        return float(done.stdout) - sent

    return fire


def measure(fire: Fire, rounds: int, firings: int) -> tuple[float, float]:
    """Median firings per second over the rounds, and the median start latency over every firing (ms)."""
    fire()  # warm-up: the first firing starts the worker, and fills the OS's caches for both paths
    rates, latencies = [], []
    for _ in range(rounds):
        began = time.perf_counter()
        latencies += [fire() for _ in range(firings)]
        rates.append(firings / (time.perf_counter() - began))
    return statistics.median(rates), statistics.median(latencies) * 1000


def measure_both(rounds: int, firings: int) -> list[tuple[str, float, float]]:
    """(path, firings/s, start latency ms) for the warm pool and for a fresh interpreter per run."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "benchmod.py").write_text(textwrap.dedent(MODULE))
        fire_warm, close = warm_pool(folder)
        try:
            return [
                ("warm pool", *measure(fire_warm, rounds, firings)),
                ("fresh interpreter", *measure(fresh_interpreter(folder), rounds, firings)),
            ]
        finally:
            close()


def rows(rounds: int, firings: int) -> list[Row]:
    (_, warm_rate, warm_latency), (_, fresh_rate, fresh_latency) = measure_both(rounds, firings)
    peer = "a fresh interpreter per run"
    details = {"rounds": rounds, "firings_per_round": firings}
    return [
        Row(
            "python action, sequential firings",
            "firings/s",
            "higher",
            warm_rate,
            peer,
            fresh_rate,
            details=details,
        ),
        Row(
            "python action, start latency",
            "s",
            "lower",
            warm_latency / 1000,
            peer,
            fresh_latency / 1000,
            details=details,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and firings, for a smoke run")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--firings", type=int, help="firings per round, per path")
    options = parser.parse_args()
    rounds = options.rounds or (3 if options.quick else 7)
    firings = options.firings or (10 if options.quick else 40)
    found = measure_both(rounds, firings)
    system = f"{platform.system()} {platform.machine()}"
    print(f"python {platform.python_version()} on {system}, {os.cpu_count()} CPUs")
    print(f"{rounds} rounds of {firings} sequential firings per path; medians\n")
    print(f"{'path':<20}{'firings/s':>12}{'start latency':>16}")
    for name, rate, latency in found:
        print(f"{name:<20}{rate:>12.1f}{latency:>13.2f} ms")
    rate, latency = found[0][1] / found[1][1], found[1][2] / found[0][2]
    print(f"\nthe warm pool fires {rate:.0f}x as often, and starts an action {latency:.0f}x sooner")


if __name__ == "__main__":
    main()
