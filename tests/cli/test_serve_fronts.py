"""`serve` keeps its fronts (HTTP, MCP, the dashboard, /metrics) in a process of their own, so that the
firing path never waits on one (DESIGN semantic 42), black-box: a front stopped dead (SIGSTOP) while
occurrences come due leaves them on time; a front killed comes back on the same address while the node
fires on; a node killed takes its front with it (no orphan keeps the port) and loses no run; the fronts'
counters and the dashboard's stream still follow the node's firings.

And the relay's node side, on a real pipe nobody reads: it never blocks, and counts what it drops.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from cronwright.core.events import Event, EventKind
from cronwright.fronts.cli.front_process import FRONTS_NICENESS
from cronwright.telemetry.relay import RelayWriter

from .blackbox import Cronwright, Lines, alive, children, needs_faketime, serving, utc, wait_for

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
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            job = {"name": "manual", "target": "sh", "action": "log", "schedule": {"every": "1h"}}
            assert call(url_of(stderr), {"action": "create_job", "job": job})["ok"] is True
            reply = call(url_of(stderr), {"action": "run_now", "name": "manual"})
            assert reply["ok"] is True, reply
            assert reply["handed_to"].startswith(f"{socket.gethostname()}:{serve.pid}:"), reply
            # Woken by the fronts' process, not at its next safety wake-up a minute later.
            wait_for("the node to run it", lambda: len(cw.fires()) == 1, timeout=20)
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
            stderr.join()


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
