"""What every benchmark shares: rows of the table, the machine description, and ways to build a node.

A `Row` holds cronwright's median and its peer's median, measured in the same run, and the ratio between
them, always read as "how many times better cronwright is": above 1 cronwright wins, below 1 the peer does.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.clock import Clock
from cronwright.core.events import MemorySink
from cronwright.core.model import Job, Occurrence, Outcome, Result
from cronwright.core.sources import Source, operator
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.protocol import RequestHandler
from cronwright.service.operations import Limits, Service
from cronwright.store.codec import instant, micros
from cronwright.store.sqlite import SqliteStore
from cronwright.targets.allowlist import StaticAllowlist

BENCH = Path(__file__).resolve().parent
# The processes the bench starts (`serve`, `tick`, the python workers) run as an installed cronwright does,
# from compiled bytecode: a machine that sets PYTHONDONTWRITEBYTECODE would otherwise make every one of
# them compile every module it imports, a cost no installed copy pays (pip compiles at install).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
RESULTS = BENCH / "results"
# The worker count of every side: cronwright's max_concurrency, and the peers' thread pools.
WORKERS = 16
OPERATOR = operator()
ALLOWLIST = StaticAllowlist({"bench": {"noop": {"type": "object"}}})
UTC_ZONE = ZoneInfo("UTC")


# --- the table ----------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table. `better` says which way is good: "lower" (times, bytes) or "higher" (rates)."""

    name: str
    unit: str
    better: str
    cronwright: float | None
    peer: str
    peer_value: float | None = None
    # Why there is no peer value ("no peer", "peer unavailable: ...", "skipped in --quick").
    note: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        ours, theirs = self.cronwright, self.peer_value
        if ours is None or theirs is None:
            return None
        better, worse = (theirs, ours) if self.better == "lower" else (ours, theirs)
        if worse == 0:
            return 1.0 if better == 0 else float("inf")
        return better / worse

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s" and value < 1e-3:
        return f"{value * 1e6:.3g} µs"
    if unit == "s" and value < 1:
        return f"{value * 1000:.3g} ms"
    if abs(value) >= 1000:
        return f"{value:,.0f} {unit}"
    return f"{value:.3g} {unit}"


def fmt_ratio(ratio: float | None) -> str:
    if ratio is None:
        return "-"
    if ratio == float("inf"):
        return "∞"
    return f"{ratio:.3g}x" if ratio < 100 else f"{ratio:,.0f}x"


def table(rows: Sequence[Row]) -> str:
    """The one table: row, cronwright, peer value, ratio (above 1: cronwright better), and the peer's name."""
    header = ("row", "cronwright", "peer", "ratio", "peer name")
    lines = [
        (
            row.name,
            fmt(row.cronwright, row.unit),
            fmt(row.peer_value, row.unit) if row.peer_value is not None else "-",
            fmt_ratio(row.ratio),
            row.peer if not row.note else f"{row.peer}: {row.note}" if row.peer else row.note,
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(4)]
    out = []
    for index, line in enumerate([header, *lines]):
        out.append(
            f"{line[0]:<{widths[0]}}  {line[1]:>{widths[1]}}  {line[2]:>{widths[2]}}  {line[3]:>{widths[3]}}"
            f"  {line[4]}".rstrip()
        )
        if index == 0:
            out.append("-" * len(out[0]))
    return "\n".join(out)


def markdown_table(rows: Sequence[Row]) -> str:
    lines = ["| row | cronwright | peer | ratio | peer name |", "| --- | ---: | ---: | ---: | --- |"]
    for row in rows:
        peer = row.peer if not row.note else f"{row.peer}: {row.note}" if row.peer else row.note
        lines.append(
            f"| {row.name} | {fmt(row.cronwright, row.unit)} | {fmt(row.peer_value, row.unit)} "
            f"| {fmt_ratio(row.ratio)} | {peer} |"
        )
    return "\n".join(lines)


# --- numbers ------------------------------------------------------------------------------------


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by the nearest-rank rule, so p99 of 100 samples is the 99th smallest."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no samples")
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.4999)))
    return ordered[rank - 1]


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mb() -> float:
    """This process's resident set now, in MB (VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- the machine --------------------------------------------------------------------------------


def _package_versions(names: Iterable[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in sorted(set(names), key=str.lower):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _requirement_name(requirement: str) -> str:
    for stop in "<>=!~;[ (":
        requirement = requirement.split(stop, 1)[0]
    return requirement.strip()


def machine() -> dict[str, Any]:
    """The machine, the interpreter, and the versions of cronwright's dependencies and of the peers."""
    cpu = "unknown"
    with_cpuinfo = Path("/proc/cpuinfo")
    if with_cpuinfo.exists():
        for line in with_cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_mb = None
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_mb = int(line.split()[1]) // 1024
    requirements = metadata.requires("cronwright") or []
    dependencies = [_requirement_name(r) for r in requirements if "extra ==" not in r]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_mb": memory_mb,
        "load_average_at_start": list(os.getloadavg()),
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "sqlite": sqlite3.sqlite_version,
        "cronwright": _package_versions(["cronwright"])["cronwright"],
        "dependencies": _package_versions(dependencies),
        "peers": _package_versions(["APScheduler", "SQLAlchemy", "croniter", "cronsim"]),
    }


def write_results(document: dict[str, Any], stamp: str) -> Path:
    """bench/results/<stamp>.json and bench/results/latest.json, each written whole or not at all."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2, default=str) + "\n"
    target = RESULTS / f"{stamp}.json"
    for path in (target, RESULTS / "latest.json"):
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(text)
        temporary.replace(path)
    return target


# --- subprocesses that report JSON ----------------------------------------------------------------


def run_json(argv: Sequence[str], timeout: float, stdin: str | None = None) -> dict[str, Any]:
    """Runs a child that prints one JSON object as its last line of stdout; raises with its stderr if not."""
    done = subprocess.run(
        list(argv), input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"{argv[1] if len(argv) > 1 else argv[0]} failed ({done.returncode}): "
            f"{done.stderr.strip()[-800:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    return result


# --- cronwright -------------------------------------------------------------------------------------


class NoOp:
    """A runner that runs nothing: every attempt is `ok` at once, so a benchmark times the scheduler."""

    def run(self, job: Job, occurrence: Occurrence) -> Result:
        return Result(Outcome.OK)

    def close(self) -> None:
        pass


@dataclass
class Stack:
    store: SqliteStore
    node: Node
    service: Service
    protocol: RequestHandler

    def call(self, request: dict[str, Any], source: Source = OPERATOR) -> dict[str, Any]:
        reply = self.protocol.dispatch(request, source)
        if not reply.get("ok"):
            raise RuntimeError(f"cronwright refused {request.get('action')}: {reply}")
        return reply

    def close(self) -> None:
        self.node.stop()
        self.store.close()


def stack(path: Path, clock: Clock, runner: Any = None, workers: int = WORKERS) -> Stack:
    """A node on a SQLite file with its service and protocol, as `app.build` wires them, minus config."""
    store = SqliteStore(path)
    node = Node(store, runner or NoOp(), clock, MemorySink(), NodeSettings(max_concurrency=workers))
    service = Service(node, ALLOWLIST, Limits(UTC_ZONE))
    return Stack(store, node, service, RequestHandler(service))


def create_request(name: str, schedule: dict[str, Any]) -> dict[str, Any]:
    return {
        "action": "create_job",
        "job": {"name": name, "target": "bench", "action": "noop", "schedule": schedule},
    }


def clone_rows(path: Path, template_name: str, prefix: str, count: int, at: datetime | None = None) -> None:
    """Copies a job the service created `count` times, named prefix0.., in one transaction, behind the store.

    Only to fill a store fast where the time to add is measured elsewhere: every copy is the template's row
    with another name (and, for a one-shot, another due instant), so each reads back as a job the service
    could have made. An `at` moves a one-shot template's due instant.
    """
    connection = sqlite3.connect(path, isolation_level=None, timeout=60)
    try:
        connection.execute("BEGIN IMMEDIATE")
        (template_id,) = connection.execute(
            "SELECT id FROM jobs WHERE name = ? AND NOT deleted", (template_name,)
        ).fetchone()
        # Every column is copied from the template, whatever columns the store's schema has by now,
        # except those that make a copy itself: its id, name, version, and (for a one-shot) due instant.
        columns = [row[1] for row in connection.execute("PRAGMA table_info(jobs)")]
        params: dict[str, Any] = {"prefix": prefix, "count": count, "id": template_id}
        sets = "'$.name', :prefix || n"
        chosen = {"name": ":prefix || n", "deleted": "0", "version": "1"}
        if at is not None:
            sets += ", '$.schedule.at', :at, '$.next_run_at', :at"
            chosen["wake_at"] = ":wake"
            params |= {"at": instant(at), "wake": micros(at)}
        chosen["data"] = f"json_set(data, {sets})"
        copied = [column for column in columns if column != "id"]
        values = ", ".join(chosen.get(column, column) for column in copied)
        connection.execute(
            "WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n + 1 < :count)"
            f" INSERT INTO jobs ({', '.join(copied)}) SELECT {values} FROM seq, jobs WHERE jobs.id = :id",
            params,
        )
        connection.execute("COMMIT")
    finally:
        connection.close()


def at_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def utc_now() -> datetime:
    return datetime.now(UTC)


SECOND = timedelta(seconds=1)
