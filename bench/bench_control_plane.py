"""The control plane through HTTP: every verb of a `cronwright serve` holding N schedules, beside APScheduler
3.11's job store API at the same N, in the same run.

cronwright: a real `cronwright serve` (SQLite, or PostgreSQL with --postgres) whose config has three
sources: `agent` (with `max_schedules`), `bulk` (none) and the operator's dashboard login. The N schedules
are created through the HTTP API (`POST /v1/call` `create_job`, 4 connections at once, in chunks of 500),
never copied in SQL, by `agent`, whose quota is checked at every create: the chunks' rates are the row
"creates by a source with max_schedules, at its first vs its Nth". A fill that would not reach N within its
budget (`--fill-budget`) goes on through `bulk`, and the rows say where `agent` stopped. The levels grow in
one store (1,000, then 10,000, ...). At each N, as `agent`, over one keep-alive connection, the verbs are
asked in turn (so a noisy moment hits all of them), each `--samples` times: status, list (a page of 50 from
a random name on), get, history and audit (one schedule's, and the source's newest page of 20), preview,
targets, `/metrics` (Prometheus), update (a new cron minute), pause, resume, create and remove. Then the
dashboard's schedules page (the operator's first 50) and the RSS of all of serve's processes together.

APScheduler 3.11: a running BackgroundScheduler on its SQLAlchemyJobStore (a SQLite file), in this process
(it is a library), holding N cron jobs (one made with add_job, the rest its copies in SQL: its add rate is
measured by the add_job row itself), and `add_job`, `get_job`, `modify_job` (a new trigger), `remove_job`
and `get_jobs` (which returns all N: it has no page) timed alike.

    python bench/bench_control_plane.py [--quick] [--schedules N ...] [--million] [--postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aps3
from agents import Agent, add_sources, create_all, job, rounded, serve_rss_mb
from bench_idle import PG_SERVER
from bench_ui import link, logged_in
from common import Row, clone_rows, log, machine, percentile, table
from product import Serve, World, clone_rows_pg, drop_schema, pg_url

LEVELS = (1_000, 10_000, 100_000)
MILLION = 1_000_000
CHUNK = 500
SAMPLES = 200
PAGE_REQUESTS = 21
TARGET_READ_P99 = 0.020
TARGET_PAGE = 0.100
PEER = "APScheduler 3.11"


def name_of(index: int) -> str:
    return f"s{index:07d}"


# --- cronwright's side --------------------------------------------------------------------------------


@dataclass
class Fill:
    """The schedules made so far: `agent` made the first `by_agent`, `bulk` the rest."""

    count: int = 0
    by_agent: int = 0
    chunks: list[dict[str, Any]] = field(default_factory=list)
    fell_back_at: int | None = None
    copied: int = 0  # of `count`, made by SQL copies (`--copy-above`), not through HTTP


def fill_to(url: str, fill: Fill, target: int, budget: float) -> float:
    """Creates schedules through HTTP until the store holds `target`; the seconds it took."""
    began = time.perf_counter()
    while fill.count < target:
        size = min(CHUNK, target - fill.count)
        source = "agent" if fill.fell_back_at is None else "bulk"
        requests = [job(name_of(index)) for index in range(fill.count, fill.count + size)]
        started = time.perf_counter()
        create_all(url, source, requests)
        rate = size / (time.perf_counter() - started)
        fill.count += size
        fill.chunks.append({"upto": fill.count, "size": size, "rate": rate, "source": source})
        if source == "agent":
            fill.by_agent = fill.count
            left = budget - (time.perf_counter() - began)
            if (target - fill.count) / rate > left:
                fill.fell_back_at = fill.count
                log(f"control: agent's creates at {rate:.0f}/s would overrun the fill budget; bulk goes on")
        if len(fill.chunks) % 20 == 0:
            log(f"control: {fill.count:,} schedules, {rate:.0f} creates/s ({source})")
    return time.perf_counter() - began


Verb = Callable[[Agent, str, int], Any]
VERBS: dict[str, Verb] = {
    "status": lambda agent, name, i: agent.read("/v1/status"),
    "list (a page of 50)": lambda agent, name, i: agent.read("/v1/jobs", limit=50, after_name=name),
    "get": lambda agent, name, i: agent.read(f"/v1/jobs/{name}"),
    "history (one schedule)": lambda agent, name, i: agent.read("/v1/runs", name=name, limit=20),
    "history (the source's newest 20)": lambda agent, name, i: agent.read("/v1/runs", limit=20),
    "audit (one schedule)": lambda agent, name, i: agent.read("/v1/audit", name=name, limit=20),
    "audit (the source's newest 20)": lambda agent, name, i: agent.read("/v1/audit", limit=20),
    "metrics": lambda agent, name, i: agent.scrape("/metrics"),
    "preview": lambda agent, name, i: agent.call(
        {"action": "preview", "expression": "0 9 * * MON-FRI", "tz": "Europe/Berlin", "count": 5}
    ),
    "targets": lambda agent, name, i: agent.call({"action": "targets"}),
    "update": lambda agent, name, i: agent.call(
        {"action": "update", "name": name, "changes": {"schedule": {"cron": f"{1 + i % 59} 3 1 1 *"}}}
    ),
    "pause": lambda agent, name, i: agent.call({"action": "pause", "name": name}),
    "resume": lambda agent, name, i: agent.call({"action": "resume", "name": name}),
    "create": lambda agent, name, i: agent.call(job(f"v-{name}-{i:05d}")),
    "remove": lambda agent, name, i: agent.call({"action": "delete", "name": f"v-{name}-{i:05d}"}),
}
# The verbs whose p99 must stay under 20 ms at 100,000 schedules (issue 34).
BOUNDED_READS = {
    "status",
    "list (a page of 50)",
    "get",
    "history (one schedule)",
    "history (the source's newest 20)",
    "audit (one schedule)",
    "audit (the source's newest 20)",
}


def verb_samples(
    url: str, fill: Fill, samples: int, seed: int, scrapes: int | None = None
) -> dict[str, list[float]]:
    """Each verb's times, the verbs asked in turn `samples` times, as `agent`, over one connection;
    `/metrics` only in the first `scrapes` rounds if given (a slow scrape would otherwise take the run)."""
    pick = random.Random(seed)
    agent = Agent(url, "agent")
    found: dict[str, list[float]] = {verb: [] for verb in VERBS}
    marker = f"n{fill.count}"
    try:
        for i in range(samples):
            read, changed = (name_of(pick.randrange(fill.by_agent)) for _ in range(2))
            for verb, ask in VERBS.items():
                if verb == "metrics" and scrapes is not None and i >= scrapes:
                    continue
                name = changed if verb in ("update", "pause", "resume") else read
                if verb in ("create", "remove"):
                    name = marker
                found[verb].append(agent.timed(lambda a, ask=ask, name=name, i=i: ask(a, name, i)))
    finally:
        agent.close()
    return found


def page_samples(client: Any, requests: int) -> list[float]:
    found = []
    for index in range(requests + 2):
        began = time.perf_counter()
        answer = client.get("/ui/")
        took = time.perf_counter() - began
        answer.raise_for_status()
        if index >= 2:  # two warm-ups
            found.append(took)
    return found


# --- APScheduler's side -------------------------------------------------------------------------------


def peer_samples(folder: Path, schedules: int, samples: int, seed: int) -> dict[str, list[float]]:
    """APScheduler 3.11 running on a SQLAlchemyJobStore holding `schedules` cron jobs: its verbs' times."""
    from apscheduler.triggers.cron import CronTrigger

    path = folder / f"aps-{schedules}.db"
    setup = aps3.scheduler(path)
    setup.start(paused=True)
    setup.add_job(aps3.noop, "cron", month=1, day=1, hour=3, minute=0, id=aps3.job_id("a", 0))
    setup.shutdown()
    aps3.clone_jobs(path, aps3.job_id("a", 0), "a", 1, schedules - 1)
    runner = aps3.scheduler(path)
    runner.start()
    pick = random.Random(seed)
    found: dict[str, list[float]] = {"add_job": [], "get_job": [], "modify_job": [], "remove_job": []}
    try:
        for i in range(samples):
            some, other, new = (
                aps3.job_id("a", pick.randrange(schedules)),
                aps3.job_id("a", pick.randrange(schedules)),
                aps3.job_id("n", i),
            )
            trigger = CronTrigger(month=1, day=1, hour=3, minute=1 + i % 59, timezone=UTC)
            steps: dict[str, Callable[[], Any]] = {
                "get_job": lambda some=some: runner.get_job(some),
                "modify_job": lambda other=other, trigger=trigger: runner.modify_job(other, trigger=trigger),
                "add_job": lambda new=new: runner.add_job(
                    aps3.noop, "cron", month=1, day=1, hour=3, minute=0, id=new
                ),
                "remove_job": lambda new=new: runner.remove_job(new),
            }
            for step, action in steps.items():
                began = time.perf_counter()
                action()
                found[step].append(time.perf_counter() - began)
        # get_jobs unpickles every job: a few samples, within half a minute, once past the first.
        found["get_jobs"] = []
        spent = 0.0
        while len(found["get_jobs"]) < min(samples, 5) and (not found["get_jobs"] or spent < 30):
            began = time.perf_counter()
            every = runner.get_jobs()
            took = time.perf_counter() - began
            spent += took
            found["get_jobs"].append(took)
            if len(every) != schedules:
                raise RuntimeError(f"APScheduler's get_jobs found {len(every)} of {schedules}")
    finally:
        runner.shutdown(wait=False)
        path.unlink(missing_ok=True)
    return found


# Each cronwright verb with its peer, where APScheduler has one.
PEERS = {
    "create": ("add_job", ""),
    "list (a page of 50)": ("get_jobs", "get_jobs (all N: it has no page)"),
    "get": ("get_job", ""),
    "update": ("modify_job", "modify_job (a new trigger)"),
    "remove": ("remove_job", ""),
}


# --- rows -------------------------------------------------------------------------------------------------


def level_rows(
    schedules: int, store: str, fill: Fill, ours: dict[str, list[float]], theirs: dict[str, list[float]]
) -> list[Row]:
    found = []
    # The verbs are asked as `agent`: if its fill stopped short, the rows say how many are its own.
    own = f" ({fill.by_agent:,} of them agent's)" if fill.by_agent < schedules else ""
    where = f"{schedules:,} schedules{own}, {store}"
    for verb, samples in ours.items():
        peer_key, peer_label = PEERS.get(verb, ("", ""))
        peer_values = theirs.get(peer_key)
        for q in (50, 99):
            note = ""
            if verb in BOUNDED_READS and q == 99:
                met = "met" if percentile(samples, 99) < TARGET_READ_P99 else "NOT met"
                note = f"target < 20 ms ({met})" if schedules >= 100_000 else "target at 100,000: < 20 ms"
            if verb == "dashboard: schedules page (first 50)":
                met = "met" if percentile(samples, q) < TARGET_PAGE else "NOT met"
                note = f"target < 100 ms ({met})"
            if not peer_values:
                note = (note + "; " if note else "") + "no peer"
            found.append(
                Row(
                    f"control plane, {where}: {verb} p{q}",
                    "s",
                    "lower",
                    percentile(samples, q),
                    f"{PEER} {peer_label or peer_key}" if peer_values else "",
                    percentile(peer_values, q) if peer_values else None,
                    note=note,
                    # The samples once per verb (on its p50 row), to the microsecond.
                    details={"samples_s": rounded(samples), "peer_samples_s": rounded(peer_values or [])}
                    if q == 50
                    else {},
                )
            )
    return found


def quota_row(schedules: int, fill: Fill) -> Row:
    """The rate of `agent`'s creates (it has max_schedules) in its last chunk before N against its first."""
    mine = [chunk for chunk in fill.chunks if chunk["source"] == "agent"]
    first, last = mine[0], mine[-1]
    stopped = fill.by_agent < schedules
    at = f"at its {schedules:,}th"
    if stopped:
        at = f"at its {fill.by_agent:,}th (fill budget reached; bulk made the rest)"
    ratio = last["rate"] / first["rate"]
    return Row(
        f"control plane: creates/s by a source with max_schedules, {at}",
        "/s",
        "higher",
        last["rate"],
        f"itself at its first {first['size']} (target >= 0.8x and >= 500/s:"
        f" {'met' if ratio >= 0.8 and last['rate'] >= 500 else 'NOT met'})",
        first["rate"],
        details={"chunks": fill.chunks},
    )


def fill_row(schedules: int, store: str, seconds: float, rss: float, made: int) -> Row:
    return Row(
        f"control plane: time to create {made:,} more through HTTP (to {schedules:,}), {store}",
        "s",
        "lower",
        seconds,
        "",
        note=f"{made / seconds:.0f}/s over 4 connections; serve's RSS, all processes: {rss:.0f} MB; no peer",
    )


def rss_row(schedules: int, store: str, rss: float, copied: int = 0) -> Row:
    target = f"target < 200 MB ({'met' if rss < 200 else 'NOT met'}); " if schedules >= MILLION else ""
    how = f"{copied:,} of them SQL copies" if copied else "made through HTTP"
    return Row(
        f"control plane: RSS of serve holding {schedules:,} ({how}), all its processes, {store}",
        "MB",
        "lower",
        rss,
        "",
        note=f"{target}no peer",
    )


def copy_fill(world: World, schema: str | None, fill: Fill, target: int) -> float:
    """Fills to `target` with SQL copies of agent's first schedule (not through HTTP: `--copy-above`),
    named `c<target>-<n>`; agent's own, made through HTTP, stay those the verbs ask about. The seconds."""
    began = time.perf_counter()
    prefix, count = f"c{target}-", target - fill.count
    if schema is not None:
        clone_rows_pg(PG_SERVER, schema, name_of(0), prefix, count)
    else:
        clone_rows(world.db, name_of(0), prefix, count)
    fill.count = target
    fill.copied += count
    return time.perf_counter() - began


def rows(
    levels: list[int],
    samples: int,
    page_requests: int,
    postgres: bool = False,
    budget: float | None = None,
    scrapes: int | None = None,
    copy_above: int | None = None,
    done: Callable[[list[Row]], None] | None = None,
) -> list[Row]:
    store = "PostgreSQL" if postgres else "SQLite"
    found: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-control-") as folder:
        place = Path(folder)
        schema = f"cw_control_{secrets.token_hex(4)}" if postgres else None
        world = World(place, store=pg_url(PG_SERVER, schema) if schema else None)
        add_sources(world, {"agent": {"max_schedules": max(levels) + 100_000}, "bulk": {}})
        env = {**os.environ, "XDG_DATA_HOME": str(place / "data")}
        serve = Serve(world, env=env)
        fill = Fill()
        try:
            dashboard = logged_in(link(world, env))
            for level, schedules in enumerate(sorted(levels)):
                made = schedules - fill.count
                if copy_above is not None and fill.count >= copy_above:
                    seconds = copy_fill(world, schema, fill, schedules)
                    log(f"control: {made:,} copied in SQL (not through HTTP) to {schedules:,}")
                else:
                    seconds = fill_to(serve.url, fill, schedules, budget or max(1200.0, schedules / 400))
                rss = serve_rss_mb(serve.pid)
                rate = made / seconds
                log(f"control: {schedules:,} made in {seconds:.1f}s ({rate:.0f}/s), RSS {rss:.0f} MB")
                ours = verb_samples(serve.url, fill, samples, level, scrapes)
                ours["dashboard: schedules page (first 50)"] = page_samples(dashboard, page_requests)
                theirs = peer_samples(place, schedules, samples, level)
                if fill.copied:
                    store_label = f"{store}, {fill.copied:,} of them SQL copies"
                    found += level_rows(schedules, store_label, fill, ours, theirs)
                else:
                    found += [fill_row(schedules, store, seconds, rss, made), quota_row(schedules, fill)]
                    found += level_rows(schedules, store, fill, ours, theirs)
                found.append(rss_row(schedules, store, rss, fill.copied))
                if done is not None:
                    done(found)
                log(
                    f"control at {schedules:,}: "
                    + ", ".join(f"{verb} p99 {percentile(s, 99) * 1000:.1f} ms" for verb, s in ours.items())
                )
            dashboard.close()
        finally:
            serve.stop()
            if schema:
                drop_schema(PG_SERVER, schema)
    return found


def matrix(found: list[Row]) -> str:
    """The verbs down, the Ns across: `p50 / p99` in ms, cronwright's, then the peer's where there is one."""
    cells: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    for row in found:
        if not row.name.startswith("control plane, ") or not row.name.endswith(" p50"):
            continue
        where, verb = row.name[len("control plane, ") : -len(" p50")].split(": ", 1)
        p99 = next(r for r in found if r.name == row.name[:-3] + "p99")
        if where not in columns:
            columns.append(where)
        cell = f"{row.cronwright * 1000:.3g} / {(p99.cronwright or 0) * 1000:.3g}"  # type: ignore[operator]
        if row.peer_value is not None:
            cell += f" (peer {row.peer_value * 1000:.3g} / {(p99.peer_value or 0) * 1000:.3g})"
        cells.setdefault(verb, {})[where] = cell
    lines = ["| verb, p50 / p99 in ms | " + " | ".join(columns) + " |", "| --- |" + " ---: |" * len(columns)]
    for verb, by in cells.items():
        lines.append(f"| {verb} | " + " | ".join(by.get(column, "-") for column in columns) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 schedules, 30 samples of each verb")
    parser.add_argument("--schedules", type=int, nargs="+", help="the Ns (default 1,000 10,000 100,000)")
    parser.add_argument("--million", action="store_true", help="add N = 1,000,000 (about an hour)")
    parser.add_argument("--postgres", action="store_true", help=f"the store on {PG_SERVER} (a new schema)")
    parser.add_argument("--samples", type=int, help=f"samples of each verb (default {SAMPLES}; --quick 30)")
    parser.add_argument("--fill-budget", type=float, help="seconds agent may take to fill a level")
    parser.add_argument("--scrapes", type=int, help="ask /metrics only this many times a level")
    parser.add_argument(
        "--copy-above",
        type=int,
        help="fill the levels past this many schedules with SQL copies, not through HTTP (rows say so)",
    )
    parser.add_argument("--json", type=Path, help="write the rows (and the matrix) to this file")
    options = parser.parse_args()
    levels = options.schedules or ([1_000] if options.quick else list(LEVELS))
    if options.million:
        levels.append(MILLION)
    samples = options.samples or (30 if options.quick else SAMPLES)
    pages = 7 if options.quick else PAGE_REQUESTS

    def written(found: list[Row]) -> None:
        if not options.json:
            return
        document = {
            "bench": "bench_control_plane.py",
            "argv": sys.argv[1:],
            "machine": {**machine(), "load_average_at_end": list(os.getloadavg())},
            "written": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
            "rows": [row.as_dict() for row in found],
            "matrix": matrix(found),
        }
        options.json.write_text(json.dumps(document, indent=1, default=str) + "\n")

    found = rows(
        levels,
        samples,
        pages,
        options.postgres,
        options.fill_budget,
        options.scrapes,
        options.copy_above,
        written,
    )
    print(table(found))
    print()
    print(matrix(found))
    log(f"control plane bench done at {datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}")


if __name__ == "__main__":
    main()
