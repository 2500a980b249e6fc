"""systemd's notify protocol (issue 38): READY=1 once the node booted and the fronts listen, WATCHDOG=1 from
the node's own loop while it comes round (and not while a pass hangs), STOPPING=1 as it stops.

No systemd runs here: each test binds the datagram socket systemd would ($NOTIFY_SOCKET, an abstract one
as systemd's own are) and reads what the node sends it.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from cli.blackbox import Cronwright, serving
from conftest import make_harness
from cronwright.clock import ManualClock
from cronwright.errors import StoreError
from cronwright.node import drive
from cronwright.node.systemd import Systemd
from cronwright.store.memory import MemoryStore


class NotifySocket:
    """The service manager's end: an abstract unix datagram socket, and what arrived on it."""

    def __init__(self) -> None:
        self.name = f"@cronwright-test-{uuid.uuid4().hex}"
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind("\0" + self.name[1:])

    def next(self, timeout: float) -> list[str] | None:
        """The next datagram's lines, or None if none came within `timeout`."""
        self.socket.settimeout(timeout)
        try:
            return self.socket.recv(4096).decode().split("\n")
        except TimeoutError:
            return None

    def until(self, line: str, timeout: float = 30.0) -> list[list[str]]:
        """Every datagram up to and including the first with a line that starts with `line`, which must
        come within `timeout` in all: a watchdog's pets arriving meanwhile do not extend it (a serve that
        pets but never stops would otherwise hold the test, and CI, for ever)."""
        seen: list[list[str]] = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            got = self.next(left)
            if got is None:
                break
            seen.append(got)
            if any(sent.startswith(line) for sent in got):
                return seen
        raise AssertionError(f"no {line} within {timeout}s; got {seen}")

    def during(self, seconds: float) -> list[list[str]]:
        """Every datagram that arrives in the next `seconds`."""
        seen: list[list[str]] = []
        deadline = datetime.now().timestamp() + seconds
        while (left := deadline - datetime.now().timestamp()) > 0:
            got = self.next(left)
            if got is not None:
                seen.append(got)
        return seen


@pytest.fixture
def notify() -> Iterator[NotifySocket]:
    made = NotifySocket()
    try:
        yield made
    finally:
        made.socket.close()


def test_serve_says_ready_pets_the_watchdog_and_says_stopping(
    cw: Cronwright, notify: NotifySocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", notify.name)
    monkeypatch.setenv("WATCHDOG_USEC", "400000")  # WatchdogSec=0.4s: a pet every 0.1 to 0.2 s
    with serving(cw) as serve:
        # READY=1 after the first pass and the listening socket ("listening on" was said already).
        ready = notify.until("READY=1")
        assert ready[-1] == ["READY=1", "STATUS=serving"]
        assert sum("WATCHDOG=1" in message for message in notify.during(1.0)) >= 4
        # A node that does not come round does not pet: stopped dead, nothing arrives.
        os.kill(serve.pid, signal.SIGSTOP)
        try:
            notify.during(0.3)  # what was sent before the stop took hold
            assert notify.during(1.0) == []
        finally:
            os.kill(serve.pid, signal.SIGCONT)
        notify.until("WATCHDOG=1", timeout=5)
        serve.send_signal(signal.SIGTERM)
        stopping = notify.until("STOPPING=1")
        assert "STATUS=stopping: waiting for runs in flight" in stopping[-1]
        assert serve.wait(30) == 0


def test_serve_without_a_watchdog_never_pets_and_hides_the_socket_from_its_runs(
    cw: Cronwright, notify: NotifySocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A command target that passes NOTIFY_SOCKET through (`env`) finds none: it is taken out of serve's
    # environment before any process starts, so no target can speak to systemd for the node.
    env_file = cw.folder / "env.txt"
    cw.config.write_text(
        cw.config.read_text() + '\n[targets.env]\nkind = "command"\nenv = ["NOTIFY_SOCKET", "PATH"]\n'
        f'[targets.env.actions.dump]\nargv = ["/bin/sh", "-c", "env > {env_file}"]\n'
    )
    monkeypatch.setenv("NOTIFY_SOCKET", notify.name)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    with serving(cw):
        notify.until("READY=1")
        cw.ok("add", "dump", "--target", "env", "--action", "dump", "--every", "1h")
        cw.ok("run-now", "dump")
        passed = env_file.read_text()
        assert "PATH=" in passed and "NOTIFY_SOCKET" not in passed
        assert not any("WATCHDOG=1" in message for message in notify.during(0.5))


class HangingStore(MemoryStore):
    """A store whose reads hang while `hang` is set, until `release` (at most 20 s): a stalled pass."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = threading.Event()
        self.release = threading.Event()
        self.hanging = threading.Event()

    def next_wake(self) -> datetime | None:
        if self.hang.is_set():
            self.hanging.set()
            self.release.wait(20)
        return super().next_wake()


def test_a_node_whose_pass_hangs_stops_petting_the_watchdog(
    clock: ManualClock, notify: NotifySocket, tmp_path: Path
) -> None:
    store = HangingStore()
    harness = make_harness(store, clock, boot=False)
    watch = Systemd(notify.name, watchdog_usec=200_000)  # a pet every 0.05 to 0.1 s
    loop = threading.Thread(target=drive.serve_forever, args=(harness.node, watch), daemon=True)
    loop.start()
    try:
        notify.until("READY=1", timeout=10)  # awaits only the node here
        assert sum("WATCHDOG=1" in message for message in notify.during(0.5)) >= 3
        store.hang.set()
        harness.node.wake()  # the next round reads the store, and hangs there
        assert store.hanging.wait(10)
        notify.during(0.2)
        assert notify.during(1.0) == [], "a node stuck in its pass still petted the watchdog"
        store.hang.clear()
        store.release.set()
        notify.until("WATCHDOG=1", timeout=5)  # it came round again: the pets resume
    finally:
        store.hang.clear()
        store.release.set()
        harness.node.stop()
        loop.join(10)
        watch.close()


class FailingStore(MemoryStore):
    """A store whose reads fail while `fail` is set: a pass that fails, and is tried again."""

    def __init__(self) -> None:
        super().__init__()
        self.fail = threading.Event()

    def next_wake(self) -> datetime | None:
        if self.fail.is_set():
            raise StoreError("the disk is full (a test)")
        return super().next_wake()


def test_a_failing_pass_is_told_in_the_status_and_so_is_its_recovery(
    clock: ManualClock, notify: NotifySocket
) -> None:
    store = FailingStore()
    harness = make_harness(store, clock, boot=False)
    watch = Systemd(notify.name)
    loop = threading.Thread(target=drive.serve_forever, args=(harness.node, watch), daemon=True)
    loop.start()
    try:
        notify.until("READY=1", timeout=10)
        store.fail.set()
        harness.node.wake()
        failed = notify.until("STATUS=a scheduling pass failed", timeout=10)
        assert "STATUS=a scheduling pass failed, trying again: the disk is full (a test)" in failed[-1]
        store.fail.clear()
        assert notify.until("STATUS=serving", timeout=10)[-1] == ["STATUS=serving"]
    finally:
        store.fail.clear()
        harness.node.stop()
        loop.join(10)
        watch.close()


def test_a_reload_is_bracketed_by_reloading_and_ready(notify: NotifySocket) -> None:
    watch = Systemd(notify.name)
    watch.reloading()
    reloading = notify.next(5)
    assert reloading is not None and reloading[0] == "RELOADING=1"
    assert reloading[1].startswith("MONOTONIC_USEC=") and int(reloading[1].split("=")[1]) > 0
    watch.reloaded("the config was reloaded: targets")
    assert notify.next(5) == ["READY=1", "STATUS=the config was reloaded: targets"]
    watch.close()


def test_the_environment_names_the_socket_and_the_watchdog_of_this_process_only() -> None:
    mine = {"NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}
    made = Systemd.from_environ(mine)
    assert made is not None and made.interval == 15.0 and made.address == "\0x"
    assert mine == {}  # taken out: no process started later speaks for this one
    other = Systemd.from_environ(
        {"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}
    )
    assert other is not None and other.interval is None  # the watchdog is another process's
    assert Systemd.from_environ({}) is None
    for made_one in (made, other):
        made_one.close()
