"""An idle `cronwright serve` does not wake (DESIGN semantic 25): no thread of it polls.

The node sleeps until its next due instant (at most its safety interval, a minute), the HTTP server's loop
(in the fronts' process) waits for requests, the main threads wait for a signal, the fronts' watcher waits
for its process to end, the relay's reader for the node's events, and PostgreSQL's listener for a
notification. Measured from outside, as the kernel counts it: every thread's context switches (voluntary
and not), in every process of serve (the node's, its fronts', the workers' fork server and its warm python
worker), must not grow over a few idle seconds. That is a count, not a timing: a thread that polls at any
rate under a few seconds shows up, however fast the machine.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pg

from .blackbox import Cronwright, Lines, children, descendants, wait_for

# The window: long enough to catch a thread that wakes every second or two (uvicorn ticked every 0.1 s,
# the main thread every 1 s, psycopg's notification wait every 0.1 s), short enough for the suite.
WINDOW = 3.0
ACTIONS = """
import cronwright

@cronwright.action
def noop() -> None:
    pass
"""


def switches(pid: int) -> dict[str, int]:
    """Context switches of every thread of `pid`, by thread id (a thread that comes later counts too)."""
    counts: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        counts[f"{pid}/{task.name}"] = int(fields["voluntary_ctxt_switches"]) + int(
            fields["nonvoluntary_ctxt_switches"]
        )
    return counts


def add_python_target(cw: Cronwright) -> None:
    (cw.folder / "idle_acts.py").write_text(ACTIONS, encoding="utf-8")
    extra = f'\n[targets.py]\nkind = "python"\nmodule = "idle_acts"\npath = ["{cw.folder}"]\n'
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + extra, encoding="utf-8")


@contextmanager
def serving(cw: Cronwright) -> Iterator[subprocess.Popen[str]]:
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=20)
            # `serve` warms one python worker in the background: the window starts once it is up.
            # (a child of its fork server, the node's child).
            wait_for("the warm python worker", lambda: warm_worker(serve.pid), timeout=20)
            yield serve
        finally:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(timeout=15)
            except subprocess.TimeoutExpired:
                serve.kill()
                raise
            finally:
                stderr.join()
        assert serve.returncode == 0, "".join(stderr.seen)


def warm_worker(pid: int) -> bool:
    return any(children(server) for server in children(pid))


def woken(serve: subprocess.Popen[str]) -> dict[str, int]:
    """The threads (of serve and its workers) that woke during the window, with how often."""
    # Let the boot settle (the first pass, the worker's handshake) before the window opens.
    time.sleep(1.0)
    pids = [serve.pid, *descendants(serve.pid)]
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids]
    assert any(b"front_process" in command for command in commands), "the fronts' process is counted too"
    before = {key: value for pid in pids for key, value in switches(pid).items()}
    time.sleep(WINDOW)
    after = {key: value for pid in pids for key, value in switches(pid).items()}
    return {key: count - before.get(key, 0) for key, count in after.items() if count != before.get(key)}


def add_schedules(cw: Cronwright) -> None:
    # Due only on the first of January at 03:00: nothing comes due in the window.
    for index in range(3):
        cw.json("add", f"yearly-{index}", "--target", "py", "--action", "noop", "--cron", "0 3 1 1 *")
    cw.json("add", "yearly-sh", "--target", "sh", "--action", "log", "--cron", "0 3 1 1 *")


def test_an_idle_serve_on_sqlite_does_not_wake(cw: Cronwright) -> None:
    add_python_target(cw)
    add_schedules(cw)
    with serving(cw) as serve:
        assert woken(serve) == {}, "these threads woke while nothing was due"


def test_an_idle_serve_on_postgresql_does_not_wake(tmp_path: Path) -> None:
    with pg.scratch_url() as url:
        cw = Cronwright(tmp_path, store=url)
        add_python_target(cw)
        add_schedules(cw)
        with serving(cw) as serve:
            assert woken(serve) == {}, "these threads woke while nothing was due"


def test_an_idle_serve_with_alert_channels_does_not_wake(cw: Cronwright) -> None:
    """The delivery loop sleeps until the next due notification, at most a minute: with none, it sleeps."""
    add_python_target(cw)
    extra = (
        '\n[notify.ops]\nkind = "webhook"\nurl = "http://127.0.0.1:9/alerts"\n'
        'signing_secret = "ALERT_SECRET"\n'
        '\n[[alert]]\non = ["failed"]\nnotify = ["ops"]\n'
    )
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + extra, encoding="utf-8")
    add_schedules(cw)
    with serving(cw) as serve:
        assert woken(serve) == {}, "these threads woke while nothing was due"
