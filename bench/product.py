"""cronwright as its users run it: a config in a folder, real `cronwright serve` and `cronwright tick`
processes, a python target (warm worker pool) and a command target, and the store on disk.

Also what the benchmarks read from outside a process: its threads' context switches and its CPU time
(/proc), and its resident memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from common import WORKERS, at_iso, clone_rows, utc_now

CRONWRIGHT = Path(sys.executable).with_name("cronwright")
ACTIONS = '''
import time
from pathlib import Path

import cronwright

LAG = Path(__file__).with_name("lag.log")


@cronwright.action
def noop() -> None:
    pass


@cronwright.action
def lag(ctx: cronwright.Context) -> None:
    """Notes how late it started after its exact due instant (the envelope's scheduled_for)."""
    late = time.time() - ctx.scheduled_for.timestamp()
    with LAG.open("a") as file:
        file.write(f"{ctx.schedule} {late:.6f}\\n")
'''


class World:
    """A folder with cronwright.toml: a python target `py` (noop, lag) and a command target `sh` (true)."""

    def __init__(self, folder: Path, store: str | None = None, **node: Any) -> None:
        self.folder = folder
        self.db = folder / "cw.db"
        self.store = store or f"sqlite:///{self.db}"
        self.config = folder / "cronwright.toml"
        (folder / "bench_acts.py").write_text(ACTIONS)
        settings = {
            "zone": "UTC",
            "store": self.store,
            "listen": "127.0.0.1:0",
            "max_concurrency": WORKERS,
            "min_period": "1s",
            "misfire_grace": "1h",
            "shutdown_grace": "10s",
            **node,
        }
        lines = ["[node]", *(f"{key} = {json.dumps(value)}" for key, value in settings.items())]
        lines += [
            "",
            "[targets.py]",
            'kind = "python"',
            'module = "bench_acts"',
            f"path = [{json.dumps(str(folder))}]",
        ]
        lines += ["", "[targets.sh]", 'kind = "command"', "[targets.sh.actions.true]", 'argv = ["/bin/true"]']
        self.config.write_text("\n".join(lines) + "\n")

    def argv(self, *args: str) -> list[str]:
        return [str(CRONWRIGHT), "--config", str(self.config), *args]

    def cli(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            self.argv(*args, "--json"), capture_output=True, text=True, timeout=600, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"cronwright {' '.join(args)} failed: {done.stderr[-600:]}{done.stdout[-300:]}"
            )
        reply: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return reply

    def add(self, name: str, target: str, action: str, *schedule: str) -> dict[str, Any]:
        return self.cli("add", name, "--target", target, "--action", action, *schedule)

    def template(self, target: str, action: str) -> str:
        """A one-shot due tomorrow, made through the CLI: what `due_at_once` copies."""
        name = f"template-{target}-{action}"
        self.add(name, target, action, "--at", at_iso(utc_now() + timedelta(days=1)))
        return name

    def due_at_once(self, template: str, count: int, due: datetime, prefix: str = "shot-") -> None:
        """`count` copies of `template`, due at `due`, written in SQL in one transaction (SQLite)."""
        clone_rows(self.db, template, prefix, count, at=due)

    def runs(self) -> int:
        with sqlite3.connect(self.db, timeout=60) as connection:
            (count,) = connection.execute("SELECT count(*) FROM runs").fetchone()
        return int(count)

    def run_counter(self) -> Callable[[], int]:
        """`runs()` for a watcher that asks every few milliseconds: one connection, and each call counts
        only the rows written since the last (a count of the whole table, on a fresh connection, each
        10 ms took about a tenth of a core from the serve it watched at 1,300 firings a second)."""
        connection = sqlite3.connect(self.db, timeout=60, isolation_level=None)
        seen, last = 0, 0

        def count() -> int:
            nonlocal seen, last
            new, top = connection.execute(
                "SELECT count(*), max(rowid) FROM runs WHERE rowid > ?", (last,)
            ).fetchone()
            seen, last = seen + int(new), int(top) if top is not None else last
            return seen

        return count

    def outcomes(self) -> dict[str, int]:
        """Each job state and how many jobs are in it, and how many (job, fire_id) ran more than once."""
        with sqlite3.connect(self.db, timeout=60) as connection:
            states = dict(connection.execute("SELECT state, count(*) FROM jobs WHERE NOT deleted GROUP BY 1"))
            (twice,) = connection.execute(
                "SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY job_id, fire_id HAVING count(*) > 1)"
            ).fetchone()
        return {**states, "ran_twice": twice}


class Serve:
    """A `cronwright serve` process of a world, up (listening, its python worker warm) when made."""

    def __init__(self, world: World, env: dict[str, str] | None = None) -> None:
        self.world = world
        self.log = (world.folder / "serve.err").open("w+")
        self.process = subprocess.Popen(
            world.argv("serve"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
        )
        self._lines: list[str] = []
        self.url = ""  # where its HTTP API listens, from its "listening on" log line
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(self.process.stderr,), daemon=True)
        self._reader.start()
        if not self._ready.wait(120) or self.process.poll() is not None:
            self.stop()
            raise RuntimeError(f"cronwright serve did not start: {''.join(self._lines)[-800:]}")
        wait_until("serve's warm python worker", lambda: bool(workers(self.pid)), 60)

    def _read(self, pipe: IO[str] | None) -> None:
        assert pipe is not None
        for line in pipe:
            self._lines.append(line)
            self.log.write(line)
            if "listening on" in line:
                with contextlib.suppress(ValueError):
                    self.url = str(json.loads(line).get("url") or "")
                self._ready.set()

    @property
    def pid(self) -> int:
        return self.process.pid

    def wake(self) -> None:
        """What the CLI does after a change: SIGUSR1 makes the node read the store again."""
        os.kill(self.pid, signal.SIGUSR1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._reader.join(5)
        self.log.close()


def wait_until(what: str, check: Callable[[], bool], seconds: float, poll: float = 0.01) -> float:
    """Waits for `check()`; returns the wall-clock instant (time.time()) at which it was first seen true."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"after {seconds:.0f}s, still waiting for {what}")
        time.sleep(poll)
    return time.time()


# --- a process seen from outside ----------------------------------------------------------------


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def descendants(pid: int) -> list[int]:
    """Children, theirs, and so on: a serve's python workers are the children of their fork server."""
    return [found for child in children(pid) for found in (child, *descendants(child))]


def workers(pid: int) -> list[int]:
    """A serve's python workers: the grandchildren of the node (its children are their fork servers)."""
    return [worker for child in children(pid) for worker in children(child)]


def switches(pid: int) -> int:
    """Context switches (voluntary and not) of every live thread of `pid`: each wake-up costs at least one."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                total += int(line.split()[1])
    return total


def cpu(pid: int) -> float:
    """CPU seconds (user + system) of the whole process, every thread, since it started."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def family(pid: int) -> list[int]:
    """A process and every process under it: all of a serve, whatever children it starts."""
    return [pid, *descendants(pid)]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pg_url(server: str, schema: str) -> str:
    return f"{server}{'&' if '?' in server else '?'}schema={schema}"


def clone_rows_pg(server: str, schema: str, template_name: str, prefix: str, count: int) -> None:
    """`clone_rows` for PostgreSQL: copies of a job the CLI made, in one statement, behind the store."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(server, autocommit=True) as connection:
        columns = [
            row[0]
            for row in connection.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
                " AND table_name = 'jobs' AND column_name <> 'id' ORDER BY ordinal_position",
                (schema,),
            )
        ]
        chosen = {
            "name": sql.SQL("%(prefix)s || n"),
            "data": sql.SQL("jsonb_set(data::jsonb, '{name}', to_jsonb(%(prefix)s || n))::json"),
            "version": sql.SQL("1"),
        }
        values = sql.SQL(", ").join(chosen.get(column, sql.Identifier(column)) for column in columns)
        connection.execute(
            sql.SQL(
                "INSERT INTO {schema}.jobs ({columns}) SELECT {values}"
                " FROM generate_series(0, %(last)s) AS n, {schema}.jobs WHERE jobs.name = %(template)s"
                " AND NOT jobs.deleted"
            ).format(
                schema=sql.Identifier(schema),
                columns=sql.SQL(", ").join(map(sql.Identifier, columns)),
                values=values,
            ),
            {"prefix": prefix, "last": count - 1, "template": template_name},
        )


def drop_schema(server: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
