"""Scale: a store holding N schedules (1,000,000; --quick 100,000), and what that costs each operation.

cronwright runs on a manual clock at T0 (2026-03-02 10:00 UTC), SQLite, a no-op runner. Its store holds:

- R groups of 1,000 one-shots, group k due at T0 + 1 h + k min (the passes fire one group each);
- the rest cron schedules "0 22 * * *" (not due during the benchmark).

Figures:

- add: schedules created per second through `RequestHandler.dispatch` (create_job), the operator's path,
  each its own durable transaction (the service has no batched create). A full run creates all N this way and
  reports the time; --quick (and --add-sample K) creates only the first 1,000 (K) so, copies a row the
  service made for the rest (`common.clone_rows`), and estimates the time to add N from the measured rate;
- RSS and startup: in a fresh child process, the time from opening the store to the end of the node's first
  pass (`serve_forever` in a thread), then the node's resident set half a second later, idle;
- pass: `Node.run_pass()` with 1,000 due, among 10,000 stored and among N (claims durable, attempts
  dispatched), median over R passes; the cost of a pass must not grow with the schedules not due;
- list: `list` through the protocol, every row; get: one `get` by name, median over 200 names.

APScheduler 3.11 (SQLAlchemyJobStore on SQLite) is measured where an operation compares: add_job, RSS and
startup of a BackgroundScheduler holding the same N (to its first `_process_jobs`), a `_process_jobs` pass
with 1,000 date jobs due, get_jobs and get_job. Its add_job is slow (a commit each), so it adds a sample
through the API (3,000; --quick 100) and its store is filled to N by copying that job's pickled row. Its
passes and its get_jobs of N take minutes on a busy disk, so --quick leaves them out.

    python bench/bench_scale.py [--quick] [--schedules N] [--add-sample K]
    python bench/bench_scale.py --child cronwright|apscheduler PATH   (a startup/RSS child; prints JSON)
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aps3
from common import (
    BENCH,
    Row,
    Stack,
    at_iso,
    clone_rows,
    create_request,
    log,
    median,
    rss_mb,
    run_json,
    stack,
    table,
    timed,
    utc_now,
)

from cronwright.clock import ManualClock
from cronwright.core.sources import Source

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
GROUP = 1000
SMALL = 10_000
CRON = {"cron": "0 22 * * *"}


def group_due(k: int) -> datetime:
    return T0 + timedelta(hours=1, minutes=k)


# --- cronwright --------------------------------------------------------------------------------------


def add_through_service(node: Stack, prefix: str, count: int, progress: int = 0) -> list[float]:
    """Creates `count` cron schedules through the protocol; returns the cumulative seconds per `progress`."""
    marks = []
    began = time.perf_counter()
    for index in range(count):
        node.call(create_request(f"{prefix}{index}", CRON))
        if progress and (index + 1) % progress == 0:
            marks.append(time.perf_counter() - began)
            log(f"scale: {index + 1:,} created through the service, {marks[-1]:.0f}s")
    marks.append(time.perf_counter() - began)
    return marks


def build_cronwright(folder: Path, total: int, groups: int, through_service: int) -> dict[str, Any]:
    """The 10k store, then the N store, the first `through_service` of it made through the service."""
    small, big = folder / "cw-small.db", folder / "cw-big.db"
    rng = random.Random(8)
    node = stack(small, ManualClock(T0))
    began = time.perf_counter()
    for k in range(groups):
        for index in range(GROUP):
            node.call(create_request(f"g{k}-{index}", {"at": at_iso(group_due(k))}))
    sample = groups * GROUP
    sample_seconds = time.perf_counter() - began
    node.call(create_request("bulk-template", CRON))
    node.close()
    clone_rows(small, "bulk-template", "bulk-", SMALL - sample - 1)
    added: dict[str, Any] = {"sample": sample, "sample_seconds": sample_seconds}
    if through_service <= sample:
        shutil.copyfile(small, big)
        clone_rows(big, "bulk-template", "big-", total - SMALL)
        names = [f"big-{rng.randrange(total - SMALL)}" for _ in range(200)]
        rate = sample / sample_seconds
        return added | {"measured": sample, "rate": rate, "seconds": total / rate, "names": names}
    node = stack(big, ManualClock(T0))
    began = time.perf_counter()
    for k in range(groups):
        for index in range(GROUP):
            node.call(create_request(f"g{k}-{index}", {"at": at_iso(group_due(k))}))
    made = min(through_service, total) - groups * GROUP
    marks = add_through_service(node, "big-", made, progress=100_000)
    seconds = time.perf_counter() - began
    node.close()
    if made + groups * GROUP < total:
        clone_rows(big, "big-0", "big-copy-", total - made - groups * GROUP)
    names = [f"big-{rng.randrange(made)}" for _ in range(200)]
    rate = (made + groups * GROUP) / seconds
    return added | {
        "measured": made + groups * GROUP,
        "rate": rate,
        "seconds": total / rate,
        "measured_seconds": seconds,
        "progress_s": marks,
        "names": names,
    }


def cronwright_passes(path: Path, groups: int) -> dict[str, Any]:
    """Per group: one pass at its due instant, then passes until all 1,000 are fired and recorded.

    A pass claims only as many firings as there are free slots (max_concurrency); the rest stay due for the
    passes that follow finished runs. So "one pass" fires at most 16, and "all fired" is the work of 1,000.
    """
    clock = ManualClock(T0)
    node = stack(path, clock)
    passes, drains, idle, fired_first = [], [], [], []
    try:
        clock.set(T0 + timedelta(minutes=30))
        idle.append(timed(node.node.run_pass))
        for k in range(groups):
            clock.set(group_due(k) + timedelta(seconds=1))
            began = time.perf_counter()
            report = node.node.run_pass()
            passes.append(time.perf_counter() - began)
            fired = len(report.fired)
            fired_first.append(fired)
            while node.node.in_flight():
                node.node.wait_for_runs()
                fired += len(node.node.run_pass().fired)
            drains.append(time.perf_counter() - began)
            if fired != GROUP:
                raise RuntimeError(f"the passes fired {fired}, not {GROUP}")
    finally:
        node.close()
    return {"pass_s": passes, "fired_by_first_pass": fired_first, "drain_s": drains, "idle_pass_s": idle}


def cronwright_reads(path: Path, names: list[str], lists: int, probes: bool) -> dict[str, Any]:
    node = stack(path, ManualClock(T0 + timedelta(minutes=30)))
    try:
        gets = [timed(lambda name=name: node.call({"action": "get", "name": name})) for name in names]
        listed = []
        for _ in range(lists):
            began = time.perf_counter()
            reply = node.call({"action": "list"})
            listed.append(time.perf_counter() - began)
            count = len(reply["jobs"])
            del reply
        found: dict[str, Any] = {"get_s": gets, "list_s": listed, "listed": count}
        if probes:
            # Operations whose cost may grow with the store: a configured source with a quota (create_job
            # counts its live schedules), that source's history, and status.
            agent = Source("agent", targets=("bench.*",), max_schedules=10**9)
            found["quota_source_create_s"] = timed(
                lambda: node.call(create_request("quota-probe", CRON), agent)
            )
            found["agent_history_s"] = timed(lambda: node.call({"action": "history", "limit": 10}, agent))
            found["status_s"] = timed(lambda: node.call({"action": "status"}))
    finally:
        node.close()
    return found


def child_cronwright(path: Path) -> dict[str, float]:
    from common import NoOp

    from cronwright.core.events import MemorySink
    from cronwright.node import drive
    from cronwright.node.node_settings import NodeSettings
    from cronwright.node.scheduler import Node
    from cronwright.store.sqlite import SqliteStore

    began = time.perf_counter()
    store = SqliteStore(path)
    node = Node(store, NoOp(), ManualClock(T0 + timedelta(minutes=30)), MemorySink(), NodeSettings())
    first = threading.Event()
    original = node.run_pass

    def run_pass() -> Any:
        report = original()
        first.set()
        return report

    node.run_pass = run_pass  # type: ignore[method-assign]
    thread = threading.Thread(target=drive.serve_forever, args=(node,), daemon=True)
    thread.start()
    if not first.wait(600):
        raise RuntimeError("the node never finished its first pass")
    startup = time.perf_counter() - began
    time.sleep(0.5)
    rss = rss_mb()
    node.stop()
    thread.join(10)
    store.close()
    return {"startup_s": startup, "rss_mb": rss}


# --- APScheduler 3.11 ----------------------------------------------------------------------------


def build_apscheduler(folder: Path, total: int, sample: int) -> dict[str, Any]:
    small, big = folder / "aps-small.db", folder / "aps-big.db"
    scheduler = aps3.scheduler(small)
    scheduler.start(paused=True)
    hour = (utc_now().hour + 12) % 24
    began = time.perf_counter()
    for index in range(sample):
        scheduler.add_job(aps3.noop, "cron", hour=hour, minute=0, id=aps3.job_id("f", index))
    seconds = time.perf_counter() - began
    template_state = scheduler.get_job(aps3.job_id("f", 0)).__getstate__()
    scheduler.shutdown()
    aps3.clone_jobs(small, aps3.job_id("f", 0), "f", sample, SMALL - sample)
    shutil.copyfile(small, big)
    aps3.clone_jobs(big, aps3.job_id("f", 0), "f", SMALL, total - SMALL)
    for path, expected in ((small, SMALL), (big, total)):
        if aps3.count_jobs(path) != expected:
            raise RuntimeError(f"the APScheduler store {path.name} holds {aps3.count_jobs(path)} jobs")
    return {"sample": sample, "sample_seconds": seconds, "rate": sample / seconds, "template": template_state}


def apscheduler_passes(path: Path, template: dict[str, Any], groups: int) -> dict[str, Any]:
    """Times `_process_jobs` (APScheduler's pass) with 1,000 date jobs due, one group at a time."""
    from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MISSED

    scheduler = aps3.scheduler(path)
    durations: list[tuple[float, float]] = []
    original = scheduler._process_jobs

    def process_jobs() -> Any:
        began = time.perf_counter()
        result = original()
        durations.append((began, time.perf_counter() - began))
        return result

    scheduler._process_jobs = process_jobs  # type: ignore[method-assign]
    executed = 0
    lock = threading.Lock()

    def listener(event: Any) -> None:
        nonlocal executed
        with lock:
            executed += 1

    scheduler.add_listener(listener, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED)
    scheduler.start()
    passes, drains = [], []
    try:
        for k in range(groups):
            due = utc_now() - timedelta(seconds=1)
            aps3.insert_due(path, template, f"g{k}-", GROUP, due)
            woken = time.perf_counter()
            scheduler.wakeup()
            deadline = time.monotonic() + 600
            # The first pass that began after the wake-up is the one that found the group.
            while executed < GROUP * (k + 1) or not any(began >= woken for began, _ in durations):
                if time.monotonic() > deadline:
                    raise RuntimeError("APScheduler did not run a group")
                time.sleep(0.002)
            began, took = next((b, d) for b, d in durations if b >= woken)
            passes.append(took)
            drains.append(max(time.perf_counter(), began + took) - woken)
    finally:
        scheduler.shutdown(wait=True)
    return {"pass_s": passes, "drain_s": drains}


def apscheduler_reads(path: Path, ids: list[str], lists: int) -> dict[str, Any]:
    scheduler = aps3.scheduler(path)
    scheduler.start(paused=True)
    try:
        gets = [timed(lambda job=job: scheduler.get_job(job)) for job in ids]
        listed = []
        count = 0
        for _ in range(lists):
            began = time.perf_counter()
            jobs = scheduler.get_jobs()
            listed.append(time.perf_counter() - began)
            count = len(jobs)
            del jobs
    finally:
        scheduler.shutdown()
    return {"get_s": gets, "list_s": listed, "listed": count}


def child_apscheduler(path: Path) -> dict[str, float]:
    began = time.perf_counter()
    scheduler = aps3.scheduler(path)
    first = threading.Event()
    original = scheduler._process_jobs

    def process_jobs() -> Any:
        result = original()
        first.set()
        return result

    scheduler._process_jobs = process_jobs  # type: ignore[method-assign]
    scheduler.start()
    if not first.wait(600):
        raise RuntimeError("APScheduler never finished its first pass")
    startup = time.perf_counter() - began
    time.sleep(0.5)
    rss = rss_mb()
    scheduler.shutdown()
    return {"startup_s": startup, "rss_mb": rss}


# --- both ---------------------------------------------------------------------------------------


def children(kind: str, path: Path, repeats: int) -> dict[str, float]:
    found = [
        run_json([sys.executable, str(BENCH / "bench_scale.py"), "--child", kind, str(path)], timeout=1200)
        for _ in range(repeats)
    ]
    return {key: median(f[key] for f in found) for key in found[0]}


def rows(total: int, full: bool, through_service: int | None = None) -> tuple[list[Row], dict[str, Any]]:
    """The scale rows; `through_service` (default: all N in a full run, 1,000 in --quick) is how many of
    the N are created through the service, the rest copied in SQL and the time to add N estimated."""
    groups = 5 if full else 1
    repeats = 3 if full else 1
    peer = "APScheduler 3.11"
    with tempfile.TemporaryDirectory(dir=BENCH) as temporary:
        folder = Path(temporary)
        log(f"scale: building the cronwright stores (10k and {total:,})")
        if through_service is None:
            through_service = total if full else 0
        ours_add = build_cronwright(folder, total, groups, through_service)
        names = ours_add.pop("names")
        log(f"scale: cronwright added {ours_add['rate']:.0f}/s; building the APScheduler stores")
        theirs_add = build_apscheduler(folder, total, 3000 if full else 100)
        template = theirs_add.pop("template")
        log(f"scale: APScheduler added {theirs_add['rate']:.0f}/s; startup and RSS children")
        ours_child = children("cronwright", folder / "cw-big.db", repeats)
        theirs_child = children("apscheduler", folder / "aps-big.db", repeats)
        ours_empty = children("cronwright", folder / "empty.db", 1) if full else {}
        theirs_empty = children("apscheduler", folder / "aps-empty.db", 1) if full else {}
        log("scale: get and list")
        rng = random.Random(9)
        ids = [aps3.job_id("f", rng.randrange(total)) for _ in range(200)]
        ours_reads = cronwright_reads(folder / "cw-big.db", names, 1, probes=full)
        # APScheduler's get_jobs unpickles every job: ~13 s for 100k, too long for --quick.
        theirs_reads = apscheduler_reads(folder / "aps-big.db", ids, 1 if full else 0)
        ours_small_reads = cronwright_reads(folder / "cw-small.db", ["bulk-1"], 1, probes=True)
        theirs_small_reads = apscheduler_reads(folder / "aps-small.db", [aps3.job_id("f", 1)], 1)
        log("scale: passes")
        ours_small = cronwright_passes(folder / "cw-small.db", groups)
        ours_big = cronwright_passes(folder / "cw-big.db", groups)
        # APScheduler's pass commits each job it fires (1.5 to 15 s per 1,000 here): full runs only.
        skipped: dict[str, list[float]] = {"pass_s": [], "drain_s": []}
        theirs_small = apscheduler_passes(folder / "aps-small.db", template, groups) if full else skipped
        theirs_big = apscheduler_passes(folder / "aps-big.db", template, groups) if full else skipped
    n = f"{total:,}"
    details = {
        "schedules": total,
        "groups": groups,
        "cronwright_add": ours_add,
        "apscheduler_add": theirs_add,
        "cronwright_child": ours_child,
        "apscheduler_child": theirs_child,
        "cronwright_child_empty_store": ours_empty,
        "apscheduler_child_empty_store": theirs_empty,
        "cronwright_reads": {k: v for k, v in ours_reads.items() if k != "get_s"},
        "cronwright_get_s": ours_reads["get_s"],
        "apscheduler_reads": {k: v for k, v in theirs_reads.items() if k != "get_s"},
        "apscheduler_get_s": theirs_reads["get_s"],
        "cronwright_small_reads": {k: v for k, v in ours_small_reads.items() if k != "get_s"},
        "cronwright_small_list_s": ours_small_reads["list_s"],
        "apscheduler_small_list_s": theirs_small_reads["list_s"],
        "cronwright_passes_10k": ours_small,
        "cronwright_passes_n": ours_big,
        "apscheduler_passes_10k": theirs_small,
        "apscheduler_passes_n": theirs_big,
    }
    measured = ours_add["measured"]
    add_note = "" if measured >= total else f" (est. from the first {measured:,})"
    result = [
        Row(
            "engine only: scale, add through the API",
            "schedules/s",
            "higher",
            ours_add["rate"],
            peer,
            theirs_add["rate"],
            details={"peer_sample": theirs_add["sample"]},
        ),
        Row(f"scale: time to add {n}{add_note}", "s", "lower", ours_add["seconds"], "", note="no peer"),
        Row(
            f"engine only: scale, RSS of an idle node holding {n}",
            "MB",
            "lower",
            ours_child["rss_mb"],
            peer,
            theirs_child["rss_mb"],
        ),
        Row(
            f"engine only: scale, startup on {n} (to first pass done)",
            "s",
            "lower",
            ours_child["startup_s"],
            peer,
            theirs_child["startup_s"],
        ),
        Row(
            "engine only: scale, one pass, 1,000 due among 10,000",
            "s",
            "lower",
            median(ours_small["pass_s"]),
            "",
            note=f"no peer (it claims {max(ours_small['fired_by_first_pass'])}: the free slots)",
        ),
        Row(
            f"engine only: scale, one pass, 1,000 due among {n}",
            "s",
            "lower",
            median(ours_big["pass_s"]),
            "",
            note=f"no peer (it claims {max(ours_big['fired_by_first_pass'])}: the free slots)",
        ),
        Row(
            "engine only: scale, 1,000 due among 10,000, until all fired",
            "s",
            "lower",
            median(ours_small["drain_s"]),
            peer,
            median(theirs_small["drain_s"]) if theirs_small["drain_s"] else None,
            note="" if theirs_small["drain_s"] else "skipped in --quick",
        ),
        Row(
            f"engine only: scale, 1,000 due among {n}, until all fired",
            "s",
            "lower",
            median(ours_big["drain_s"]),
            peer,
            median(theirs_big["drain_s"]) if theirs_big["drain_s"] else None,
            note="" if theirs_big["drain_s"] else "skipped in --quick",
        ),
        Row(
            f"engine only: scale, get one among {n}",
            "s",
            "lower",
            median(ours_reads["get_s"]),
            peer,
            median(theirs_reads["get_s"]),
        ),
        Row(
            f"engine only: scale, list {n}",
            "s",
            "lower",
            median(ours_reads["list_s"]),
            peer,
            median(theirs_reads["list_s"]) if theirs_reads["list_s"] else None,
            note="" if theirs_reads["list_s"] else "skipped in --quick",
        ),
        Row(
            "engine only: scale, list 10,000",
            "s",
            "lower",
            median(ours_small_reads["list_s"]),
            peer,
            median(theirs_small_reads["list_s"]),
        ),
    ]
    return result, details


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--schedules", type=int)
    parser.add_argument("--add-sample", type=int, help="create only this many through the service")
    parser.add_argument("--child", choices=["cronwright", "apscheduler"])
    parser.add_argument("path", nargs="?", type=Path)
    options = parser.parse_args()
    if options.child:
        measure = child_cronwright if options.child == "cronwright" else child_apscheduler
        print(json.dumps(measure(options.path)))
        return
    total = options.schedules or (100_000 if options.quick else 1_000_000)
    found, details = rows(total, not options.quick, options.add_sample)
    print(table(found))
    print(json.dumps({k: v for k, v in details.items() if "passes" in k}, indent=1))


if __name__ == "__main__":
    main()
