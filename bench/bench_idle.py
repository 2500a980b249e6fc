"""Idle cost of the whole of serve: wake-ups and CPU of an idle scheduler holding 10,000 schedules.

Each side is read from outside (/proc), every thread of every one of its processes counted:

- cronwright: a real `cronwright serve` (its HTTP server, its node, its warm python worker, and whatever
  other processes it starts), on SQLite and on PostgreSQL, holding 10,000 cron schedules that come due only
  in an hour (one made through the CLI, the rest its copies in SQL). It should sleep until its
  once-a-minute safety pass (its beat, which keeps its lease live for the processes that hand it a run_now)
  and not wake otherwise.
- APScheduler 3.11: a BackgroundScheduler (SQLAlchemyJobStore on SQLite) holding 10,000 cron jobs due in
  an hour, in a child process.

Wake-ups are counted from outside: every 100 ms the harness reads the context switches of every thread of
the serve process and of every process under it (/proc/PID/task/*/status, voluntary and not; the
processes are found again at each reading, through /proc/PID/task/*/children, so a child that starts later
is counted too), and a wake-up is a burst of consecutive 100 ms intervals in which any of them grew (a wake
that does some work, such as cronwright's once-a-minute pass with its reads and its beat's commit, costs
several switches, and those may straddle the edge of two intervals, or touch two processes: it is one
wake-up still). The JSON has the raw switches, the intervals with switches (`active_intervals`, what this
row counted as wake-ups up to wave 2 session 6), and those intervals by process
(`active_intervals_by_process`: which process woke). CPU is the user + system time of all the processes.
Up to wave 3 the row counted the serve process alone, its python worker apart (`worker_switches`).

run.py keeps the children idle for the whole run, beside the other benchmarks (at least a minute in a full
run); a --quick window is shorter than the safety interval, so it may see no pass at all.

    python bench/bench_idle.py [--seconds S]
    python bench/bench_idle.py --child apscheduler PATH   (prints "ready", then idles until stdin closes)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import aps3
from common import BENCH, Row, clone_rows, log, table, utc_now
from product import Serve, World, clone_rows_pg, cpu, drop_schema, family, pg_url, switches

SCHEDULES = 10_000
MAX_WINDOW = 50 * 60.0
SAMPLE = 0.1  # seconds between two reads of a process's context switches
PG_SERVER = os.environ.get("CRONWRIGHT_TEST_POSTGRES") or "postgresql://postgres@127.0.0.1:5432/test"


def later_cron() -> str:
    later = utc_now() + timedelta(hours=1)
    return f"{later.minute} {later.hour} * * *"


def cronwright_world(folder: Path, postgres: bool) -> tuple[World, str | None]:
    schema = f"cw_idle_{secrets.token_hex(4)}" if postgres else None
    world = World(folder, store=pg_url(PG_SERVER, schema) if schema else None)
    world.add("idle-0", "py", "noop", "--cron", later_cron())
    if schema:
        clone_rows_pg(PG_SERVER, schema, "idle-0", "idle-copy-", SCHEDULES - 1)
    else:
        clone_rows(world.db, "idle-0", "idle-copy-", SCHEDULES - 1)
    return world, schema


def prepare_apscheduler(path: Path) -> None:
    later = utc_now() + timedelta(hours=1)
    scheduler = aps3.scheduler(path)
    scheduler.start(paused=True)
    scheduler.add_job(aps3.noop, "cron", hour=later.hour, minute=later.minute, id=aps3.job_id("i", 0))
    scheduler.shutdown()
    aps3.clone_jobs(path, aps3.job_id("i", 0), "i", 1, SCHEDULES - 1)


def child_apscheduler(path: Path) -> None:
    scheduler = aps3.scheduler(path)
    booted = threading.Event()
    original = scheduler._process_jobs

    def first_pass_seen() -> Any:
        result = original()
        booted.set()
        return result

    scheduler._process_jobs = first_pass_seen  # type: ignore[method-assign]
    scheduler.start()
    booted.wait(120)
    print("ready", flush=True)
    reader = threading.Thread(target=sys.stdin.read, daemon=True)
    reader.start()
    reader.join(MAX_WINDOW)
    scheduler.shutdown()


def family_switches(pid: int) -> dict[int, int]:
    """The context switches of a process and of every process under it (a serve's fronts and workers,
    whatever processes it starts), each process's every thread counted."""
    found = {}
    for member in family(pid):
        with contextlib.suppress(OSError):  # a process that ended between the listing and the read
            found[member] = switches(member)
    return found


def spent(before: dict[int, int], now: dict[int, int]) -> int:
    """Switches between two readings: a process that started in between counts whole, one that ended
    counts what it had done by its last reading (its last switches are lost, and are few)."""
    return sum(count - before.get(pid, 0) for pid, count in now.items())


@dataclass
class Watched:
    """One idle process and all its descendants (their switches summed), and what they had spent when the
    window opened; a sampler counts their wake-ups."""

    pid: int
    stop: Any
    began: float = 0.0
    switches: dict[int, int] = field(default_factory=dict)
    cpu: float = 0.0
    wakeups: int = 0
    active_intervals: int = 0
    # Each process's intervals with switches, so the JSON says which process woke.
    by_process: dict[int, int] = field(default_factory=dict)
    _closing: threading.Event = field(default_factory=threading.Event)
    _sampler: threading.Thread | None = None

    def open(self) -> None:
        time.sleep(1.0)  # the end of boot (the first pass, the worker's handshake) is not idle time
        self.began, self.switches, self.cpu = time.monotonic(), family_switches(self.pid), self._cpu()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _cpu(self) -> float:
        total = 0.0
        for member in family(self.pid):
            with contextlib.suppress(OSError):
                total += cpu(member)
        return total

    def _sample(self) -> None:
        last, active = self.switches, False
        while not self._closing.wait(SAMPLE):
            now = family_switches(self.pid)
            if not now:
                return
            woke = [pid for pid, count in now.items() if count != last.get(pid)]
            for pid in woke:
                self.by_process[pid] = self.by_process.get(pid, 0) + 1
            if woke:
                self.active_intervals += 1
                if not active:  # a burst's first interval: one wake-up, however many intervals it spans
                    self.wakeups += 1
            active, last = bool(woke), {**last, **now}

    def close(self) -> dict[str, Any]:
        self._closing.set()
        if self._sampler is not None:
            self._sampler.join(5)
        window = time.monotonic() - self.began
        now = family_switches(self.pid)
        total = spent(self.switches, now)
        own = now.get(self.pid, 0) - self.switches.get(self.pid, 0)
        used = self._cpu() - self.cpu
        return {
            "window_s": window,
            "processes": len(now),
            "wakeups": self.wakeups,
            "active_intervals": self.active_intervals,
            "active_intervals_by_process": {str(pid): count for pid, count in self.by_process.items()},
            "switches": total,
            "main_process_switches": own,
            "worker_switches": total - own,
            "cpu_s": used,
            "wakeups_per_minute": self.wakeups * 60 / window,
            "switches_per_minute": total * 60 / window,
            "cpu_seconds_per_minute": used * 60 / window,
        }


class IdleSet:
    """The idle children (cronwright on SQLite and PostgreSQL, APScheduler), started and read together."""

    def __init__(self, folder: Path, postgres: bool = True) -> None:
        self.watched: dict[str, Watched] = {}
        self.schemas: list[str] = []
        self.serves: list[Serve] = []
        self.peer: subprocess.Popen[str] | None = None
        try:
            self._start(folder, postgres)
        except BaseException:
            self.abandon()
            raise

    def _start(self, folder: Path, postgres: bool) -> None:
        for kind in ("sqlite", "postgresql") if postgres else ("sqlite",):
            place = folder / f"idle-{kind}"
            place.mkdir()
            world, schema = cronwright_world(place, kind == "postgresql")
            if schema:
                self.schemas.append(schema)
            serve = Serve(world)
            self.serves.append(serve)
            self.watched[f"cronwright serve, {kind}"] = Watched(serve.pid, serve.stop)
        path = folder / "idle-aps.db"
        prepare_apscheduler(path)
        self.peer = subprocess.Popen(
            [sys.executable, str(BENCH / "bench_idle.py"), "--child", "apscheduler", str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.peer.stdout is not None
        if self.peer.stdout.readline().strip() != "ready":
            raise RuntimeError("the idle APScheduler child did not start")
        self.watched["APScheduler 3.11"] = Watched(self.peer.pid, self._stop_peer)
        for watched in self.watched.values():
            watched.open()
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _stop_peer(self) -> None:
        if self.peer is not None and self.peer.poll() is None:
            assert self.peer.stdin is not None
            self.peer.stdin.close()
            self.peer.wait(60)

    def finish(self) -> list[Row]:
        found = {name: watched.close() for name, watched in self.watched.items()}
        log(f"idle: {found}")
        theirs = found.pop("APScheduler 3.11")
        result = []
        for name, ours in found.items():
            window = f"{ours['window_s']:.0f}s window"
            intervals = ours["active_intervals"] * 60 / ours["window_s"]
            store = name.split(", ")[1]
            result.append(
                Row(
                    f"idle serve, 10,000 schedules, {store}: wake-ups/min, all processes ({window})",
                    "/min",
                    "lower",
                    ours["wakeups_per_minute"],
                    "APScheduler 3.11 (SQLite)",
                    theirs["wakeups_per_minute"],
                    note=f"{ours['processes']} processes, every thread; {intervals:.3g} 100 ms intervals/min"
                    f" with switches, {ours['switches_per_minute']:.3g} switches/min",
                    details={"cronwright": ours, "peer": theirs},
                )
            )
            result.append(
                Row(
                    f"idle serve, 10,000 schedules, {store}: CPU s/min ({window})",
                    "CPU s/min",
                    "lower",
                    ours["cpu_seconds_per_minute"],
                    "APScheduler 3.11 (SQLite)",
                    theirs["cpu_seconds_per_minute"],
                )
            )
        return result

    def abandon(self) -> None:
        for serve in self.serves:
            serve.stop()
        if self.peer is not None and self.peer.poll() is None:
            self.peer.kill()
            self.peer.wait()
        for schema in self.schemas:
            drop_schema(PG_SERVER, schema)
        self.schemas = []


def postgres_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_SERVER, connect_timeout=3):
            return True
    except Exception:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the idle window")
    parser.add_argument("--child", choices=["apscheduler"])
    parser.add_argument("path", nargs="?", type=Path)
    options = parser.parse_args()
    if options.child:
        child_apscheduler(options.path)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        idle = IdleSet(Path(folder), postgres_available())
        try:
            time.sleep(options.seconds)
            print(table(idle.finish()))
        finally:
            idle.abandon()


if __name__ == "__main__":
    main()
