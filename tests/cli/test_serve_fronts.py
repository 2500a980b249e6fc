"""`serve` keeps its fronts (HTTP, MCP, the dashboard, /metrics) in a process of their own, so that the
firing path never waits on one (DESIGN semantic 42), black-box: a front stopped dead (SIGSTOP) while
occurrences come due leaves them on time, idle or inside a store call (SQLite: waiting for the write lock;
PostgreSQL: in its write's transaction); a front killed comes back on the same address
while the node fires on; a node killed takes its front with it (no orphan keeps the port) and loses no
run; the fronts' counters and the dashboard's stream still follow the node's firings.

And the relay's node side, on a real pipe nobody reads: it never blocks, and counts what it drops.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

import pg
from cronwright.core.events import Event, EventKind
from cronwright.fronts.cli.front_process import FRONTS_NICENESS
from cronwright.telemetry.relay import RelayWriter

from .blackbox import CRONWRIGHT, Cronwright, Lines, alive, children, needs_faketime, serving, utc, wait_for

TOKEN = "fronts-test-token"
EVERY_SECOND = ("--cron", "* * * * * *")


def front_of(serve_pid: int) -> int:
    """The pid of serve's fronts' process (its child running front_process)."""
    for child in children(serve_pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"front_process" in command:
            return child
    raise AssertionError(f"serve {serve_pid} has no fronts' process")


def new_front(serve_pid: int, old: int) -> bool:
    try:
        return front_of(serve_pid) != old
    except AssertionError:
        return False  # between two fronts


def url_of(stderr: Lines) -> str:
    line = next(line for line in stderr.seen if "listening on" in line)
    return line.split("listening on ", 1)[1].split(" ", 1)[0]


def add_token(cw: Cronwright) -> None:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    extra = f'\n[sources.ops]\ntoken_sha256 = "{digest}"\ntargets = ["sh.*"]\n'
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + extra, encoding="utf-8")


def ok_runs(metrics: str) -> float:
    counted = 'cronwright_runs_total{outcome="ok"}'
    return float(next(line for line in metrics.splitlines() if line.startswith(counted)).split()[-1])


def scrape(url: str) -> str:
    reply = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert reply.status_code == 200, reply.text
    return reply.text


def call(url: str, request: dict[str, object]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    reply = httpx.post(f"{url}/v1/call", json=request, headers=headers, timeout=30).json()
    assert isinstance(reply, dict)
    return reply


def history(cw: Cronwright, name: str) -> list[dict[str, object]]:
    runs = cw.json("history", name, "--limit", "200")["runs"]
    assert isinstance(runs, list)
    return runs


def test_a_front_stopped_dead_leaves_every_firing_on_time(cw: Cronwright) -> None:
    cw.json("add", "every-second", "--target", "sh", "--action", "log", *EVERY_SECOND)
    with serving(cw) as serve:
        front = front_of(serve.pid)
        os.kill(front, signal.SIGSTOP)
        try:
            stopped_at = datetime.now(UTC)
            fired = len(cw.fires())
            wait_for("three firings while the front is stopped", lambda: len(cw.fires()) >= fired + 3)
            runs = history(cw, "every-second")
        finally:
            os.kill(front, signal.SIGCONT)
    due_while_stopped = [run for run in runs if utc(str(run["scheduled_for"])) > stopped_at]
    assert len(due_while_stopped) >= 2, runs
    for run in due_while_stopped:
        assert run["outcome"] == "ok", run
        # Instants are to the second: a start within 2 s of its due instant is on time here, where a node
        # that waited on its stopped front would not have started at all.
        late = utc(str(run["started_at"])) - utc(str(run["scheduled_for"]))
        assert late <= timedelta(seconds=2), run


# --- a front stopped inside a store call -------------------------------------------------------------

# The sleeps of a thread, by machine: SQLite waits for a busy lock in short sleeps (its busy handler).
_SLEEPS = {"x86_64": {35, 230}, "aarch64": {101, 115}}  # nanosleep, clock_nanosleep


def sleeping_in_a_thread(pid: int) -> bool:
    """Whether a thread of `pid` is in nanosleep: the fronts' process sleeps nowhere else (it has no timer,
    semantic 25), so it is SQLite's busy handler, waiting for a lock inside a store call."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            number = (task / "syscall").read_text().split()[0]
        except (OSError, IndexError):
            continue
        if number.isdigit() and int(number) in _SLEEPS[platform.machine()]:
            return True
    return False


@contextmanager
def serve_listening(cw: Cronwright) -> Iterator[tuple[int, str]]:
    """A serve of `cw`, its pid and the address its fronts listen on; stopped with SIGTERM after."""
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            yield serve.pid, url_of(stderr)
        finally:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait(timeout=30)
            stderr.join()


def stamps(cw: Cronwright) -> list[float]:
    """When each run of `sh.stamp` started, by the clock, as its command wrote it."""
    path = cw.folder / "stamps.log"
    return [float(line) for line in path.read_text(encoding="utf-8").split()] if path.exists() else []


def add_stamp(cw: Cronwright) -> None:
    """The action `sh.stamp`, whose command writes the instant it started (before serve starts: serve
    reads its config once). The history's `started_at` is stamped as the node decides to start, before
    its claim is written, so it would not show a start that waited for the store."""
    argv = ["/bin/sh", "-c", f"date +%s.%N >> {cw.folder / 'stamps.log'}"]
    extra = f"\n[targets.sh.actions.stamp]\nargv = {json.dumps(argv)}\n"
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + extra, encoding="utf-8")


def due_soon(cw: Cronwright, name: str, seconds: int = 6) -> datetime:
    """A one-shot `sh.stamp` (see `add_stamp`) due `seconds` from now."""
    due = (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0)
    cw.json("add", name, "--target", "sh", "--action", "stamp", "--at", due.isoformat())
    return due


def in_background(request: dict[str, object], url: str) -> threading.Thread:
    """An HTTP call on a thread of its own (it waits on what the test holds); its reply is not needed."""

    def send() -> None:
        with contextlib.suppress(httpx.HTTPError):  # a front stopped past the client's timeout: no matter
            call(url, request)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def assert_on_time(cw: Cronwright, name: str, due: datetime) -> None:
    """The one-shot's command started within 2 s of its due instant (a node that waited on its stopped
    front would not have started it at all), and its run is recorded once, ok."""
    wait_for(f"{name} to run", lambda: len(stamps(cw)) >= 1, timeout=due.timestamp() - time.time() + 20)
    late = stamps(cw)[0] - due.timestamp()
    assert -0.5 <= late <= 2, f"started {late:.3f} s after its due instant"
    wait_for(f"{name}'s run to be recorded", lambda: len(history(cw, name)) == 1)
    runs = history(cw, name)
    assert runs[0]["outcome"] == "ok" and utc(str(runs[0]["scheduled_for"])) == due, runs


@pytest.mark.skipif(platform.machine() not in _SLEEPS, reason="reads a thread's system call by number")
def test_a_front_stopped_inside_a_store_write_leaves_a_due_job_on_time(cw: Cronwright) -> None:
    add_token(cw)
    add_stamp(cw)
    with serve_listening(cw) as (pid, url):
        front = front_of(pid)
        # The test takes SQLite's write lock, so a create sent to the front waits inside the store for it.
        with closing(sqlite3.connect(cw.store, isolation_level=None)) as holder:
            holder.execute("BEGIN IMMEDIATE")
            job = {"name": "held", "target": "sh", "action": "log", "schedule": {"every": "1h"}}
            request = in_background({"action": "create_job", "job": job}, url)
            wait_for("the front to wait inside the store", lambda: sleeping_in_a_thread(front))
            os.kill(front, signal.SIGSTOP)
            holder.execute("ROLLBACK")  # the lock is free again; the front, stopped, does not take it
        try:
            due = due_soon(cw, "due")  # made (by the CLI) and due while the front is stopped
            assert_on_time(cw, "due", due)
        finally:
            os.kill(front, signal.SIGCONT)
        request.join(30)


def test_a_process_holding_sqlites_write_lock_delays_a_firing_until_it_lets_go(cw: Cronwright) -> None:
    """Where semantic 42 is not met, pinned so that it stays known: on SQLite, any process that holds the
    write lock (a front stopped between its BEGIN IMMEDIATE and its COMMIT, as the test holds it here, or a
    stopped CLI) holds the node's claim back, and with it the firing, until it lets go. The run is late,
    not lost. (On PostgreSQL a front holds the rows it writes, not the store: see the test above.)"""
    add_stamp(cw)
    with serve_listening(cw):
        due = due_soon(cw, "due", seconds=4)
        with closing(sqlite3.connect(cw.store, isolation_level=None)) as holder:
            holder.execute("BEGIN IMMEDIATE")
            # Past the due instant, with a margin the on-time tests allow: no start meanwhile.
            wait_for("the due instant to pass", lambda: time.time() > due.timestamp() + 3, timeout=30)
            assert stamps(cw) == [], "started while another process held the write lock"
            holder.execute("ROLLBACK")
            released = time.time()
        wait_for("the late run", lambda: len(stamps(cw)) == 1)
        assert stamps(cw)[0] >= released - 0.1
        wait_for("its run to be recorded", lambda: len(history(cw, "due")) == 1)
        assert history(cw, "due")[0]["outcome"] == "ok"


def turnstile_holders(cw: Cronwright) -> list[tuple[str, int]]:
    """Who holds the store's turnstile now, and how (`WRITE` or `READ`), from /proc/locks."""
    turnstile = cw.store.with_name(cw.store.name + "-turnstile")
    try:
        inode = turnstile.stat().st_ino
    except FileNotFoundError:
        return []
    held = []
    for line in Path("/proc/locks").read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue  # a waiter's line, or another kind of lock
        if fields[5].rsplit(":", 1)[-1] == str(inode):
            held.append((fields[3], int(fields[4])))
    return held


@pytest.mark.skipif(platform.machine() not in _SLEEPS, reason="reads a thread's system call by number")
def test_serves_node_waits_for_the_store_inside_the_turnstile_and_its_fronts_wait_outside(
    cw: Cronwright,
) -> None:
    """Semantic 42 on SQLite, through `serve`: its node writes as the store's first writer (it holds the
    turnstile exclusively while it waits for SQLite's write lock, so no caller begins a write meanwhile),
    and its fronts as callers (a create waits outside the turnstile while the node is in it, and goes on
    once the node has written). The turnstile itself is tested in tests/store/test_turnstile.py."""
    add_token(cw)
    add_stamp(cw)
    with serve_listening(cw) as (pid, url):
        front = front_of(pid)
        due = due_soon(cw, "due", seconds=3)
        with closing(sqlite3.connect(cw.store, isolation_level=None)) as holder:
            holder.execute("BEGIN IMMEDIATE")  # SQLite's write lock, taken around the turnstile
            wait_for("the node to wait in the turnstile", lambda: turnstile_holders(cw) == [("WRITE", pid)])
            job = {"name": "behind", "target": "sh", "action": "log", "schedule": {"every": "1h"}}
            request = in_background({"action": "create_job", "job": job}, url)
            wait_for("the create to wait", lambda: sleeping_in_a_thread(front))
            # The front waits outside: the node alone is in the turnstile, and the front holds no part of it.
            assert turnstile_holders(cw) == [("WRITE", pid)]
            holder.execute("ROLLBACK")
        request.join(30)
        assert not request.is_alive()
        wait_for("the due job's run", lambda: len(history(cw, "due")) == 1)
        assert utc(str(history(cw, "due")[0]["scheduled_for"])) == due
        assert [row["name"] for row in cw.json("list")["jobs"] if row["name"] == "behind"] == ["behind"]
        assert turnstile_holders(cw) == []


def test_a_run_past_its_timeout_is_stopped_while_serves_node_waits_for_the_store(cw: Cronwright) -> None:
    """A real fault: another process holds SQLite's write lock while serve's node must write (a claim),
    and a python run's 2 s timeout passes meanwhile. The node's loop, held in the store, reads no reply;
    the reply thread stops the run anyway (worker_replies.PUMP_GRACE), not once the lock is let go."""
    pid_file = cw.folder / "hang.pid"
    cw.add_python_target(
        "import os, time\nimport cronwright\n\n"
        '@cronwright.action(timeout="2s")\n'
        "def hang() -> None:\n"
        f"    with open({str(pid_file)!r}, 'w') as out:\n"
        "        out.write(str(os.getpid()))\n"
        "    time.sleep(60)\n",
        module="hang_acts",
    )
    with serve_listening(cw) as (pid, _):
        due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
        cw.json("add", "hang", "--target", "py", "--action", "hang", "--at", due.isoformat())
        # Due a second after `hang`, within its 2 s: the pass that claims it waits for the lock.
        later = (due + timedelta(seconds=1)).isoformat()
        cw.json("add", "later", "--target", "sh", "--action", "log", "--at", later)
        wait_for("the run to start", lambda: pid_file.exists() and pid_file.read_text().isdigit())
        worker = int(pid_file.read_text())
        with closing(sqlite3.connect(cw.store, isolation_level=None)) as holder:
            holder.execute("BEGIN IMMEDIATE")
            wait_for("the node to wait for the store", lambda: turnstile_holders(cw) == [("WRITE", pid)])
            wait_for("the run past its timeout to be stopped", lambda: not alive(worker), timeout=10)
            assert turnstile_holders(cw) == [("WRITE", pid)]  # the node still waits for the store
            holder.execute("ROLLBACK")
        wait_for(
            "the runs to be recorded", lambda: len(history(cw, "hang")) == len(history(cw, "later")) == 1
        )
        [run] = history(cw, "hang")
        assert run["outcome"] == "timeout", run


def _waiting_on(server: str, holder: int) -> int | None:
    """The backend that waits on a lock the backend `holder` holds (the front's), if any."""
    with pg.connect(server) as connection:
        row = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", (holder,)
        ).fetchone()
    return None if row is None else int(str(row[0]))


def _past_the_lock(server: str, backend: int) -> bool:
    """Whether `backend` (the stopped front's) no longer waits on a lock: its statement went through."""
    with pg.connect(server) as connection:
        row = connection.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (backend,)
        ).fetchone()
    return row is None or row[0] != "Lock"


def test_a_front_stopped_inside_a_postgres_write_leaves_a_due_job_on_time(tmp_path: Path) -> None:
    """The front is stopped in its write's transaction, its statement waiting on a row the test locks;
    then the test lets the statement through. What the server does with the stopped front's transaction
    varies: seen holding it open (`active`, waiting on its client, the row still locked), or done with
    it. Either way the node fires on time: it shares no lock of its own with the front."""
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    with pg.scratch_schema() as (server, schema):
        cw = Cronwright(tmp_path, store=pg.with_params(server, schema=schema))
        add_token(cw)
        add_stamp(cw)
        with serve_listening(cw) as (pid, url):
            front = front_of(pid)
            held = {"name": "held", "target": "sh", "action": "log", "schedule": {"every": "1h"}}
            assert call(url, {"action": "create_job", "job": held})["ok"] is True  # the source's own
            # The test locks the row of `held`, so the front's pause of it waits inside its transaction.
            with pg.connect(server) as holder:
                holder.execute("BEGIN")
                holder.execute(f'SELECT 1 FROM "{schema}".jobs WHERE name = %s FOR UPDATE', ("held",))
                row = holder.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                mine = int(str(row[0]))
                request = in_background({"action": "pause", "name": "held"}, url)
                wait_for("the front to wait on the row's lock", lambda: _waiting_on(server, mine) is not None)
                backend = _waiting_on(server, mine)
                assert backend is not None
                os.kill(front, signal.SIGSTOP)
                holder.execute("COMMIT")
            try:
                wait_for("the front's statement to go through", lambda: _past_the_lock(server, backend))
                due = due_soon(cw, "due")  # made (by the CLI) and due while the front is stopped
                assert_on_time(cw, "due", due)
            finally:
                os.kill(front, signal.SIGCONT)
            request.join(30)


def thread_niceness(pid: int) -> list[int]:
    """The nice level of each thread of `pid` (on Linux each thread has its own), from /proc."""
    levels = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            # Field 19 of stat, counted after the command's closing parenthesis (it may hold spaces).
            levels.append(int(task.joinpath("stat").read_text().rsplit(")", 1)[1].split()[16]))
    return levels


def test_the_fronts_yield_the_cpu_to_the_node(cw: Cronwright) -> None:
    """Every thread of the fronts' process runs below the node's priority, as a batch task: on a machine
    short of cores, a busy front takes what the firing path leaves (semantic 42)."""
    with serving(cw) as serve:
        front = front_of(serve.pid)
        node_level = os.getpriority(os.PRIO_PROCESS, serve.pid)
        levels = thread_niceness(front)
        policy = os.sched_getscheduler(front)
    assert levels and set(levels) == {min(node_level + FRONTS_NICENESS, 19)}, levels
    assert policy == os.SCHED_BATCH


def test_serve_stops_at_once_with_its_front_stopped_dead(cw: Cronwright) -> None:
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            front = front_of(serve.pid)
            os.kill(front, signal.SIGSTOP)
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(timeout=10) == 0, "".join(stderr.seen)  # its front was not waited out
            assert not alive(front)
        finally:
            if serve.poll() is None:
                serve.kill()
            stderr.join()
    assert not stderr.saw("did not stop")


def test_a_killed_front_comes_back_on_the_same_address_and_the_node_fires_on(cw: Cronwright) -> None:
    add_token(cw)
    cw.json("add", "every-second", "--target", "sh", "--action", "log", *EVERY_SECOND)
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            url = url_of(stderr)
            front = front_of(serve.pid)
            os.kill(front, signal.SIGKILL)
            fired = len(cw.fires())
            wait_for("the front to be reaped", lambda: not alive(front))
            wait_for("the node to fire on", lambda: len(cw.fires()) >= fired + 2)
            wait_for("the front to come back", lambda: stderr.saw("starts it again"))
            wait_for("a new front", lambda: new_front(serve.pid, front), timeout=30)
            assert httpx.get(f"{url}/healthz", timeout=30).json() == {"ok": True}
            # Its counters follow the node's firings from its start on.
            wait_for("a firing counted by the new front", lambda: ok_runs(scrape(url)) >= 1, timeout=30)
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
            stderr.join()
    assert serve.returncode == 0, "".join(stderr.seen)
    assert stderr.saw("ended (killed by SIGKILL)")


def test_a_run_now_through_http_is_handed_to_the_node_which_runs_it_at_once(cw: Cronwright) -> None:
    add_token(cw)
    with serve_listening(cw) as (pid, url):
        job = {"name": "manual", "target": "sh", "action": "log", "schedule": {"every": "1h"}}
        assert call(url, {"action": "create_job", "job": job})["ok"] is True
        reply = call(url, {"action": "run_now", "name": "manual"})
        assert reply["ok"] is True, reply
        assert reply["handed_to"].startswith(f"{socket.gethostname()}:{pid}:"), reply
        # Woken by the fronts' process, not at its next safety wake-up a minute later.
        wait_for("the node to run it", lambda: len(cw.fires()) == 1, timeout=20)


def test_the_last_of_a_burst_of_creates_through_http_wakes_the_node(cw: Cronwright) -> None:
    # The fronts fold a burst's wake-ups into a trailing signal (wake_coalescing.py, whose own tests
    # drive the window): whether the last create's signal went at once or trailed, the job it made, due in a
    # second, fires then, not at the node's safety wake-up a minute later.
    add_token(cw)
    with serve_listening(cw) as (_, url):
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            for index in range(30):
                job = {"name": f"quiet-{index}", "target": "sh", "action": "log", "schedule": {"every": "1h"}}
                reply = http.post("/v1/call", json={"action": "create_job", "job": job}, timeout=30)
                assert reply.json()["ok"] is True, reply.text
            soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
            job = {"name": "last", "target": "sh", "action": "log", "run_at": soon}
            reply = http.post("/v1/call", json={"action": "create_job", "job": job}, timeout=30)
            assert reply.json()["ok"] is True, reply.text
        wait_for("the node to run the last", lambda: len(cw.fires()) == 1, timeout=20)


@needs_faketime
def test_a_killed_node_takes_its_front_with_it_and_loses_no_run(cw: Cronwright) -> None:
    cw.json("add", "slow", "--target", "sh", "--action", "slow", *EVERY_SECOND)
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            url = url_of(stderr)
            front = front_of(serve.pid)
            wait_for("the slow run to start", cw.started.exists)
            os.kill(serve.pid, signal.SIGKILL)
            serve.wait(timeout=30)
            wait_for("the orphaned front to exit", lambda: not alive(front))
        finally:
            if serve.poll() is None:
                serve.kill()
            cw.release.touch()  # the killed node's command ends
            stderr.join()
    host, port = httpx.URL(url).host, httpx.URL(url).port
    assert port is not None
    with socket.socket() as probe:  # nothing holds the port: a new serve could bind it at once
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
    fire_id = cw.started.read_text(encoding="utf-8").split()[0]
    # Past the dead node's lease, the next process records its run interrupted, as before the split.
    later = (datetime.now(UTC) + timedelta(minutes=3)).isoformat()
    cw.tick(at=later)
    runs = {run["fire_id"]: run for run in cw.json("history", "slow", "--limit", "200", at=later)["runs"]}
    assert runs[fire_id]["outcome"] == "interrupted", runs[fire_id]


def test_the_dashboard_stream_says_changed_when_the_node_fires(
    cw: Cronwright, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ui.test_ui_blackbox import _base, _link, _log_in

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    cw.json("add", "every-second", "--target", "sh", "--action", "log", *EVERY_SECOND)
    with serving(cw):
        link = _link(cw)
        with httpx.Client(base_url=_base(link), timeout=30) as client:
            assert _log_in(client, link).status_code == 303
            with client.stream("GET", "/ui/events") as stream:
                lines = stream.iter_lines()
                assert next(line for line in lines if line.startswith("event:")) == "event: ready"
                # No CLI call, no request: only the node's firings, relayed, can make this change.
                assert next(line for line in lines if line.startswith("event:")) == "event: changed"


def test_the_relay_never_blocks_the_node_and_counts_what_it_drops() -> None:
    read_end, write_end = os.pipe()
    relay = RelayWriter()
    relay.attach(write_end)
    event = Event(EventKind.JOB_RUN, 1, "job", {"outcome": "ok", "took_ms": 3, "message": "x" * 5000})
    started = time.monotonic()
    for _ in range(50_000):  # far more than the pipe holds: nobody reads it
        relay.emit(event)
    assert time.monotonic() - started < 30  # a bound on a hang, not a timing
    assert relay.dropped > 0
    written = os.read(read_end, 1 << 16)
    assert written.startswith(b'{"e":"job_run","f":{"outcome":"ok","took_ms":3}}\n')  # no message text
    relay.detach()
    os.close(read_end)
