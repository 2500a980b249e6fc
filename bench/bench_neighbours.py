"""Noisy neighbours: does one source's load on `cronwright serve` delay the firings of another?

A real `cronwright serve` on SQLite whose config has three sources, each reaching it only over HTTP:

- `agent` holds N schedules (created through the API, 4 connections at once; quiet cron schedules that do
  not come due) and, in the loaded half, sends the mixed load: 200 requests a second from 4 client threads,
  each with its own connection, 20 of them creates and the rest status, list (a page of 50), get and
  history in turn (`agents.Load`);
- `other` holds one python job that fires every second (`* * * * * *`): its start lag is the run's recorded
  `started_at` against its `scheduled_for` (from `GET /v1/runs`, the run records), p50, p99 and max over
  a window, quiet and then under the load;
- `burst` creates 2,000 python one-shots due at one instant (through the API, a few seconds ahead), quiet
  and then under the load: the throughput is 2,000 over the time from the due instant to the last run's
  recorded finish (the newest in `GET /v1/runs`), once every run is in the store (counted from outside).

Before the quiet half, a first burst of 32 starts every python worker (a serving node's pool is warm).
The rows put each loaded figure against the same serve quiet: the ratio says how much the neighbour cost.

    python bench/bench_neighbours.py [--quick] [--schedules N] [--large] [--seconds S] [--burst B]
        [--pairs K]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agents import Agent, Load, add_sources, create_all, instant, job, rounded
from common import Row, at_iso, log, median, percentile, table, utc_now
from product import Serve, World, cpu, family, wait_until

SCHEDULES = 10_000
LARGE = 100_000
BURST = 2_000
WARM_UP = 32
SECONDS = 60.0
LOAD_RATE = 200.0
LOAD_CREATES = 20.0
TARGET_LAG_P99 = 0.020
TARGET_BURST_RATIO = 0.9
# Pairs of bursts, quiet and loaded: the burst row compares their medians.
PAIRS = 3


def quiet_names(count: int) -> list[str]:
    return [f"q{index:07d}" for index in range(count)]


def records(db: Path, query: str, *params: Any) -> list[Any]:
    """Rows read from the store's file from outside, read-only (the run records are what serve wrote)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60) as connection:
        return connection.execute(query, params).fetchall()


def burst_done(db: Path, prefix: str) -> tuple[int, float | None]:
    """How many runs are recorded for the one-shots named prefix..., and the last one's finish (epoch s)."""
    ((count, last),) = records(
        db,
        "SELECT count(*), max(finished_at) FROM runs WHERE job_id IN"
        " (SELECT id FROM jobs WHERE created_by = 'burst' AND name >= ? AND name < ?)",
        prefix,
        prefix + "\uffff",
    )
    return int(count), (last / 1e6 if last is not None else None)


def lags(db: Path, began: float, ended: float) -> list[float]:
    """Start lags (s) of the `tick` job's runs due within [began, ended) (epoch s): each run's recorded
    started_at against its scheduled_for, as the store holds them (to the microsecond)."""
    found = []
    for (data,) in records(
        db, "SELECT runs.data FROM runs JOIN jobs ON jobs.id = runs.job_id WHERE jobs.name = 'tick'"
    ):
        run = json.loads(data)
        due = instant(run["scheduled_for"]).timestamp()
        if began <= due < ended and run.get("started_at"):
            found.append(instant(run["started_at"]).timestamp() - due)
    return sorted(found)


def make_burst(url: str, prefix: str, count: int, due: datetime) -> dict[str, Any]:
    """`count` python one-shots of `burst`, due at `due`, made through HTTP over a few connections."""
    began = time.perf_counter()
    create_all(url, "burst", [job(f"{prefix}{index:05d}", run_at=at_iso(due)) for index in range(count)])
    made = time.perf_counter() - began
    if utc_now() > due:
        raise RuntimeError(f"the burst {prefix} was still being made at its due instant ({made:.1f}s)")
    return {"jobs": count, "due": due.timestamp(), "create_seconds": made}


def cpu_by_role(serve_pid: int) -> dict[str, float]:
    """CPU seconds so far of each part of the machine's work: serve's node process, its fronts' process,
    its python workers (the fork servers and their children), and this bench (its load's client threads
    and its watcher)."""
    found = {"node": 0.0, "fronts": 0.0, "workers": 0.0, "bench": time.process_time()}
    for pid in family(serve_pid):
        with contextlib.suppress(OSError):
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            role = "node" if pid == serve_pid else "fronts" if b"front_process" in command else "workers"
            found[role] += cpu(pid)
    return found


def run_queue_wait(pid: int) -> float:
    """Seconds the threads of process `pid` have spent so far ready to run but waiting for a CPU
    (/proc/PID/task/TID/schedstat, its second field): what the scheduler, not the store or a reply, cost
    the node."""
    waited = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            waited += int((task / "schedstat").read_text().split()[1])
    return waited / 1e9


def burst_counter(db: Path, prefix: str) -> Callable[[], int]:
    """`burst_done`'s count for a watcher that asks every 50 ms: one connection, and each call reads only the
    run rows written since the last, of the burst's jobs (made one after another, so one range of ids).
    Counting them all again with a join, on a fresh connection each time, took a fifth of a core from the
    serve it watched."""
    ((low, high),) = records(
        db,
        "SELECT min(id), max(id) FROM jobs WHERE created_by = 'burst' AND name >= ? AND name < ?",
        prefix,
        prefix + "\uffff",
    )
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60, isolation_level=None)
    seen, last = 0, 0

    def count() -> int:
        nonlocal seen, last
        new, top = connection.execute(
            "SELECT count(*) FILTER (WHERE job_id BETWEEN ? AND ?), max(rowid) FROM runs WHERE rowid > ?",
            (low, high, last),
        ).fetchone()
        seen, last = seen + int(new), int(top) if top is not None else last
        return seen

    return count


def burst_rate(db: Path, prefix: str, made: dict[str, Any], serve_pid: int | None = None) -> dict[str, Any]:
    """Waits until every one-shot of the burst has its run recorded; the rate from the due instant to the
    last recorded finish. With `serve_pid`, also the CPU each part took from the due instant to the end
    (`cpu_s`), in seconds: where the machine's two cores went during the burst."""
    count = made["jobs"]
    counted = burst_counter(db, prefix)
    before = None
    if serve_pid is not None:
        time.sleep(max(0.0, made["due"] - time.time()))
        before = cpu_by_role(serve_pid)
        queued = run_queue_wait(serve_pid)
    wait_until(f"{count} runs of {prefix}", lambda: counted() >= count, 1800, 0.05)
    last = burst_done(db, prefix)[1]
    assert last is not None
    seconds = last - made["due"]
    found = {**made, "seconds": seconds, "rate": count / seconds}
    if serve_pid is not None and before is not None:
        after = cpu_by_role(serve_pid)
        found["cpu_s"] = {role: round(after[role] - before[role], 3) for role in after}
        found["node_run_queue_s"] = round(run_queue_wait(serve_pid) - queued, 3)
    return found


def window(db: Path, seconds: float) -> list[float]:
    began = time.time()
    time.sleep(seconds)
    time.sleep(1.0)  # the window's last run is recorded once it finished
    return lags(db, began, began + seconds)


def described(name: str, found: list[float], fired: dict[str, Any]) -> None:
    log(
        f"neighbours {name}: lag p50 {percentile(found, 50) * 1000:.1f} ms, p99"
        f" {percentile(found, 99) * 1000:.1f} ms, max {max(found) * 1000:.1f} ms ({len(found)} runs);"
        f" burst {fired['rate']:.0f}/s (made in {fired['create_seconds']:.1f}s); CPU s during it:"
        f" {fired.get('cpu_s')}; the node waited for a CPU {fired.get('node_run_queue_s')} s"
    )


@contextlib.contextmanager
def load_on(url: str, names: list[str]) -> Iterator[Load]:
    """The mixed load, from 4 client threads as `agent`, while the block runs."""
    load = Load(url, "agent", names, LOAD_RATE, LOAD_CREATES)
    load.start()
    try:
        yield load
    finally:
        load.stop()


def measure(schedules: int, seconds: float, count: int, pairs: int = PAIRS) -> dict[str, Any]:
    """Quiet: a lag window, then a burst. Loaded: the burst made first (quiet, due after the window), then
    the load on, a lag window, the burst comes due, the load off once it all ran. Then `pairs - 1` more
    pairs of bursts, quiet and loaded in turn (each made quiet; the load on a few seconds before the
    loaded one is due), so the burst row is a median of each, not one sample of a noisy machine."""
    with tempfile.TemporaryDirectory(prefix="bench-neighbours-") as folder:
        world = World(Path(folder))
        add_sources(world, {"agent": {}, "other": {}, "burst": {}})
        serve = Serve(world)
        try:
            url, db = serve.url, world.db
            names = quiet_names(schedules)
            began = time.perf_counter()
            create_all(url, "agent", [job(name) for name in names])
            fill = time.perf_counter() - began
            log(f"neighbours: {schedules:,} schedules made through HTTP in {fill:.1f}s")
            ticker = Agent(url, "other")
            ticker.call(job("tick", {"cron": "* * * * * *"}))
            ticker.close()
            soon = utc_now() + timedelta(seconds=2)
            warm = burst_rate(db, "warm-", make_burst(url, "warm-", WARM_UP, soon))
            # Time to make a burst before it is due: at the fill's rate, twice over, and 3 s more.
            margin = timedelta(seconds=3.0 + 2 * count / (schedules / fill))
            quiet_lags = window(db, seconds)
            # The two bursts are made as fast as 4 connections go: a storm of creates, during which the
            # `tick` job's lags are the storm's row.
            storms = [time.time()]
            quiet = make_burst(url, "bq-", count, utc_now() + margin)
            storms.append(time.time())
            quiet = burst_rate(db, "bq-", quiet, serve.pid)
            described("quiet", quiet_lags, quiet)
            storms.append(time.time())
            made = make_burst(url, "bl-", count, utc_now() + margin + timedelta(seconds=seconds + 2))
            storms.append(time.time())
            with load_on(url, names) as load:
                time.sleep(1.0)  # the load's first requests (its connections) are not the window
                loaded_lags = window(db, seconds)
                if time.time() > made["due"]:
                    raise RuntimeError("the loaded burst came due inside the lag window")
                loaded = burst_rate(db, "bl-", made, serve.pid)
            described("under load", loaded_lags, loaded)
            time.sleep(1.0)  # the storms' last runs are recorded
            storm_lags = sorted(lags(db, storms[0], storms[1]) + lags(db, storms[2], storms[3]))
            quiets, loadeds, loads = [quiet], [loaded], [load.summary()]
            for pair in range(2, pairs + 1):
                made = make_burst(url, f"q{pair}-", count, utc_now() + margin)
                quiets.append(burst_rate(db, f"q{pair}-", made))
                made = make_burst(url, f"l{pair}-", count, utc_now() + margin + timedelta(seconds=3))
                with load_on(url, names) as load:
                    if time.time() > made["due"] - 1.0:
                        raise RuntimeError(f"the loaded burst {pair} came due before the load was on")
                    loadeds.append(burst_rate(db, f"l{pair}-", made, serve.pid))
                loads.append(load.summary())
                log(
                    f"neighbours pair {pair}/{pairs}: quiet {quiets[-1]['rate']:.0f}/s, under load"
                    f" {loadeds[-1]['rate']:.0f}/s; CPU s during it: {loadeds[-1].get('cpu_s')}"
                )
        finally:
            serve.stop()
    return {
        "schedules": schedules,
        "fill_seconds": fill,
        "warm": warm,
        "quiet": {"lags_s": quiet_lags, "burst": quiet, "bursts": quiets},
        "loaded": {"lags_s": loaded_lags, "burst": loaded, "bursts": loadeds, "loads": loads[1:]},
        "load": loads[0],
        "storm": {
            "lags_s": storm_lags,
            "creates": 2 * count,
            "seconds": storms[1] - storms[0] + storms[3] - storms[2],
        },
    }


def rows(
    schedules: int = SCHEDULES, seconds: float = SECONDS, count: int = BURST, pairs: int = PAIRS
) -> list[Row]:
    found = measure(schedules, seconds, count, pairs)
    quiet, loaded, load = found["quiet"], found["loaded"], found["load"]
    where = f"{schedules:,} schedules"
    offered = (
        f"load: {load['requests_per_second']:.0f} requests/s achieved of {LOAD_RATE:.0f}"
        f" ({load['creates_per_second']:.0f} creates/s), {sum(load['errors'].values())} errors"
    )
    result = []
    for label, q in (("p50", 50), ("p99", 99), ("max", 100)):
        ours = percentile(loaded["lags_s"], q)
        # An occurrence that never ran (skipped while the one before was late) is no sample: the counts
        # of runs against the window's seconds say so.
        counts = f"{len(loaded['lags_s'])} loaded, {len(quiet['lags_s'])} quiet"
        runs = f"runs in each {seconds:.0f} s window: {counts}"
        note = f"{offered}; {runs}"
        if q == 99:
            note = f"target < 20 ms ({'met' if ours < TARGET_LAG_P99 else 'NOT met'}); " + note
        result.append(
            Row(
                f"neighbours, {where}: start lag {label} of another source's `* * * * * *`, under load",
                "s",
                "lower",
                ours,
                "the same serve, quiet",
                percentile(quiet["lags_s"], q),
                note=note,
                details={"loaded_s": rounded(loaded["lags_s"]), "quiet_s": rounded(quiet["lags_s"])},
            )
        )
    storm = found["storm"]
    if storm["lags_s"]:
        ours = percentile(storm["lags_s"], 99)
        result.append(
            Row(
                f"neighbours, {where}: start lag p99 of another source's `* * * * * *`, while a source makes"
                f" {storm['creates']:,} creates as fast as 4 connections go",
                "s",
                "lower",
                ours,
                "the same serve, quiet",
                percentile(quiet["lags_s"], 99),
                note=(
                    f"target < 20 ms ({'met' if ours < TARGET_LAG_P99 else 'NOT met'}); max"
                    f" {max(storm['lags_s']) * 1000:.1f} ms over {len(storm['lags_s'])} runs in"
                    f" {storm['seconds']:.1f} s of creates ({storm['creates'] / storm['seconds']:.0f}/s)"
                ),
                details={"storm_s": rounded(storm["lags_s"])},
            )
        )
    quiet_rates = [burst["rate"] for burst in quiet["bursts"]]
    loaded_rates = [burst["rate"] for burst in loaded["bursts"]]
    ratio = median(loaded_rates) / median(quiet_rates)
    verdict = "met" if ratio >= TARGET_BURST_RATIO else "NOT met"
    per_pair = ", ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(quiet_rates, loaded_rates, strict=True))
    achieved = ", ".join(f"{load['requests_per_second']:.0f}" for load in loaded["loads"])
    later = f"; the later loads achieved {achieved} requests/s" if achieved else ""
    result.append(
        Row(
            f"neighbours, {where}: {count:,} due python one-shots, under load"
            f" (medians of {len(loaded_rates)})",
            "firings/s",
            "higher",
            median(loaded_rates),
            "the same serve, quiet",
            median(quiet_rates),
            note=f"target >= 0.9x ({verdict}); quiet/loaded per pair: {per_pair}; {offered}{later}",
            details={"quiet": quiet["bursts"], "loaded": loaded["bursts"], "loads": loaded["loads"]},
        )
    )
    for verb, samples in sorted(load["latencies_s"].items()):
        result.append(
            Row(
                f"neighbours, {where}: the load's own {verb}, p99 (p50 in the note)",
                "s",
                "lower",
                percentile(samples, 99),
                "",
                note=f"p50 {percentile(samples, 50) * 1000:.3g} ms, {len(samples)} requests; no peer",
            )
        )
    kept = {key: value for key, value in load.items() if key != "latencies_s"}
    result[-1].details = {"load": kept, "fill_seconds": found["fill_seconds"], "warm": found["warm"]}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20-second windows")
    parser.add_argument("--schedules", type=int, help=f"the N agent holds (default {SCHEDULES:,})")
    parser.add_argument("--large", action="store_true", help=f"N = {LARGE:,}")
    parser.add_argument("--seconds", type=float, help=f"each lag window (default {SECONDS:.0f}; --quick 20)")
    parser.add_argument("--burst", type=int, default=BURST, help="one-shots per burst")
    parser.add_argument("--pairs", type=int, default=PAIRS, help=f"pairs of bursts (default {PAIRS})")
    options = parser.parse_args()
    schedules = options.schedules or (LARGE if options.large else SCHEDULES)
    seconds = options.seconds or (20.0 if options.quick else SECONDS)
    print(table(rows(schedules, seconds, options.burst, options.pairs)))


if __name__ == "__main__":
    main()
