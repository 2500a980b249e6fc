"""Start latency: from an occurrence's due instant to the first line of its action, on a real clock.

cronwright: a node serves (`Node.serve_forever` in a thread, `SystemClock`, SQLite, 16 workers); one-shots
are created through the protocol a little in the future, and the runner records the wall time at which each
attempt starts. APScheduler 3.11: a running BackgroundScheduler (SQLAlchemyJobStore on SQLite, 16 threads)
with date jobs whose function records its own start.

- "1 due": one-shots due one at a time, `gap` apart, so each is alone at its instant;
- "1,000 due": 1,000 one-shots due at one instant, so the latency of the last includes the queue behind the
  workers. On both sides the 1,000 are written into the store a second before they are due, as copies of a
  job made through the API (APScheduler's add_job takes ~10 ms each), and the scheduler is then woken
  (`Node.wake()`, `BackgroundScheduler.wakeup()`), as either is when a job is added through its API.

    python bench/bench_latency.py [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aps3
from common import Row, at_iso, clone_rows, create_request, log, median, percentile, stack, table, utc_now
from product import Serve, World, wait_until

from cronwright.clock import SystemClock
from cronwright.core.model import Job, Occurrence, Outcome, Result
from cronwright.node import drive


class StartRecorder:
    """A runner that records, per job name, how late each attempt started after its due instant."""

    def __init__(self) -> None:
        self.late: dict[str, float] = {}
        self.lock = threading.Lock()

    def run(self, job: Job, occurrence: Occurrence) -> Result:
        started = time.time()
        with self.lock:
            self.late[job.name] = started - occurrence.scheduled_for.timestamp()
        return Result(Outcome.OK)

    def close(self) -> None:
        pass


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)


def cronwright_latency(singles: int, gap: float, bursts: int, burst: int) -> dict[str, Any]:
    recorder = StartRecorder()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cw.db"
        node = stack(path, SystemClock(), runner=recorder)
        thread = threading.Thread(target=drive.serve_forever, args=(node.node,), daemon=True)
        thread.start()
        try:
            time.sleep(0.2)
            node.call(create_request("template", {"at": at_iso(utc_now() + timedelta(days=1))}))
            base = utc_now() + timedelta(seconds=0.3 + 0.01 * singles)
            for index in range(singles):
                due = base + timedelta(seconds=gap * index)
                node.call(create_request(f"single-{index}", {"at": at_iso(due)}))
            wait_for(lambda: len(recorder.late) >= singles, 60 + singles * gap, "cronwright's single firings")
            single = [recorder.late[f"single-{index}"] for index in range(singles)]
            rounds = []
            for round_no in range(bursts):
                due = utc_now() + timedelta(seconds=1.0)
                prefix = f"burst-{round_no}-"
                clone_rows(path, "template", prefix, burst, at=due)
                node.node.wake()
                names = [f"{prefix}{index}" for index in range(burst)]
                late_setup = utc_now() > due
                wait_for(lambda names=names: all(n in recorder.late for n in names), 300, "a burst")
                rounds.append(([recorder.late[name] for name in names], late_setup))
        finally:
            node.close()
            thread.join(10)
    return summary(single, rounds)


def apscheduler_latency(singles: int, gap: float, bursts: int, burst: int) -> dict[str, Any]:
    aps3.STARTS.clear()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "aps.db"
        scheduler = aps3.scheduler(path)
        scheduler.start()
        try:
            template = scheduler.add_job(
                aps3.record_start, "date", run_date=utc_now() + timedelta(days=1), args=["template"]
            )
            state = template.__getstate__()
            time.sleep(0.2)
            base = utc_now() + timedelta(seconds=0.3 + 0.02 * singles)
            dues: dict[str, datetime] = {}
            for index in range(singles):
                key = f"single-{index}"
                dues[key] = base + timedelta(seconds=gap * index)
                scheduler.add_job(aps3.record_start, "date", run_date=dues[key], args=[key], id=key)
            wait_for(lambda: len(aps3.STARTS) >= singles, 60 + singles * gap, "APScheduler's single firings")
            single = [aps3.STARTS[key] - dues[key].timestamp() for key in dues]
            rounds = []
            for round_no in range(bursts):
                due = utc_now() + timedelta(seconds=1.0)
                prefix = f"b{round_no}-"
                aps3.insert_due(path, state, prefix, burst, due)
                scheduler.wakeup()
                late_setup = utc_now() > due
                keys = [aps3.job_id(prefix, index) for index in range(burst)]
                wait_for(lambda keys=keys: all(k in aps3.STARTS for k in keys), 300, "a burst")
                rounds.append(([aps3.STARTS[key] - due.timestamp() for key in keys], late_setup))
        finally:
            scheduler.shutdown(wait=True)
    return summary(single, rounds)


def serve_lag(samples: int) -> dict[str, list[float]]:
    """Start lags of a cron job (every second, 6 fields) and an `every 1s` job through `cronwright serve`,
    as each python action measures its own: its start against the envelope's exact scheduled_for."""
    with tempfile.TemporaryDirectory(prefix="bench-lag-") as folder:
        world = World(Path(folder))
        serve = Serve(world)
        log_file = Path(folder) / "lag.log"
        try:
            world.add("cron", "py", "lag", "--cron", "* * * * * *")
            world.add("every", "py", "lag", "--every", "1s")

            def seen() -> dict[str, list[float]]:
                found: dict[str, list[float]] = {"cron": [], "every": []}
                if log_file.exists():
                    for line in log_file.read_text().splitlines():
                        name, late = line.split()
                        found[name].append(float(late))
                return found

            wait_until(
                "the lag samples", lambda: min(map(len, seen().values())) >= samples + 1, 60 + 3 * samples
            )
        finally:
            serve.stop()
        # The first of each is dropped: it may have been due while the job was still being created.
        return {name: lags[1 : samples + 1] for name, lags in seen().items()}


def apscheduler_lag(samples: int) -> dict[str, list[float]]:
    """The same two jobs on APScheduler 3.11 (cron second='*', interval 1 s from a whole second)."""
    aps3.LAGS.clear()
    with tempfile.TemporaryDirectory() as folder:
        scheduler = aps3.scheduler(Path(folder) / "aps.db")
        scheduler.start()
        try:
            start = utc_now().replace(microsecond=0) + timedelta(seconds=2)
            scheduler.add_job(aps3.record_lag, "cron", second="*", args=["cron"])
            scheduler.add_job(aps3.record_lag, "interval", seconds=1, start_date=start, args=["every"])
            wait_for(
                lambda: len(aps3.LAGS) == 2 and min(map(len, aps3.LAGS.values())) >= samples + 1,
                60 + 3 * samples,
                "APScheduler's lag samples",
            )
        finally:
            scheduler.shutdown(wait=True)
    return {name: lags[1 : samples + 1] for name, lags in aps3.LAGS.items()}


def lag_rows(samples: int) -> list[Row]:
    ours, theirs = serve_lag(samples), apscheduler_lag(samples)
    found = []
    for kind, label in (("cron", "cron, every second"), ("every", "every 1s")):
        # p99 of 60 samples is their slowest one, which one noisy moment sets: p95 says more of the tail.
        for q in (50, 95, 99):
            found.append(
                Row(
                    f"start lag p{q} through `serve`, {label} ({samples} samples)",
                    "s",
                    "lower",
                    percentile(ours[kind], q),
                    "APScheduler 3.11",
                    percentile(theirs[kind], q),
                    details={"cronwright": ours[kind], "peer": theirs[kind]} if q == 50 else {},
                )
            )
    log(
        "lag through serve: "
        + ", ".join(
            f"{kind} p50 {percentile(v, 50) * 1000:.1f} ms p99 {percentile(v, 99) * 1000:.1f} ms"
            for kind, v in ours.items()
        )
    )
    return found


def summary(single: list[float], rounds: list[tuple[list[float], bool]]) -> dict[str, Any]:
    return {
        "single_p50": percentile(single, 50),
        "single_p99": percentile(single, 99),
        "single_samples": single,
        "burst_p50": median(percentile(late, 50) for late, _ in rounds),
        "burst_p99": median(percentile(late, 99) for late, _ in rounds),
        "burst_rounds": [
            {"p50": percentile(late, 50), "p99": percentile(late, 99), "max": max(late), "late_setup": flag}
            for late, flag in rounds
        ],
    }


def rows(singles: int, gap: float, bursts: int, burst: int) -> list[Row]:
    ours = cronwright_latency(singles, gap, bursts, burst)
    log(
        f"latency: cronwright 1 due p50 {ours['single_p50'] * 1000:.1f} ms, {burst} due p99 "
        f"{ours['burst_p99'] * 1000:.0f} ms"
    )
    theirs = apscheduler_latency(singles, gap, bursts, burst)
    log(
        f"latency: APScheduler 1 due p50 {theirs['single_p50'] * 1000:.1f} ms, {burst} due p99 "
        f"{theirs['burst_p99'] * 1000:.0f} ms"
    )
    peer = "APScheduler 3.11"
    details = {"singles": singles, "gap_s": gap, "bursts": bursts, "burst": burst}
    late = [r["late_setup"] for r in ours["burst_rounds"] + theirs["burst_rounds"]]
    if any(late):
        log("latency: a burst was still being set up at its due instant; its figures are pessimistic")
    return [
        Row(
            f"engine only: start latency p50, 1 due ({singles} samples)",
            "s",
            "lower",
            ours["single_p50"],
            peer,
            theirs["single_p50"],
            details={**details, "cronwright": ours["single_samples"], "peer": theirs["single_samples"]},
        ),
        Row(
            f"engine only: start latency p99, 1 due ({singles} samples)",
            "s",
            "lower",
            ours["single_p99"],
            peer,
            theirs["single_p99"],
        ),
        Row(
            f"engine only: start latency p50, {burst:,} due at once",
            "s",
            "lower",
            ours["burst_p50"],
            peer,
            theirs["burst_p50"],
            details={**details, "cronwright": ours["burst_rounds"], "peer": theirs["burst_rounds"]},
        ),
        Row(
            f"engine only: start latency p99, {burst:,} due at once",
            "s",
            "lower",
            ours["burst_p99"],
            peer,
            theirs["burst_p99"],
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    found = rows(10 if options.quick else 50, 0.1, 1 if options.quick else 3, 1000)
    print(table(found + lag_rows(10 if options.quick else 60)))


if __name__ == "__main__":
    main()
