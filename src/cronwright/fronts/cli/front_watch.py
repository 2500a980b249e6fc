"""The node's process of `cronwright serve` keeps its fronts in a process of their own (front_process.py).

Why a process: the fronts (HTTP, MCP, the dashboard, /metrics) answer callers whose requests may be heavy,
and a thread of the node's process would take its GIL from the firing path; in their own process they take
the other core instead (semantic 42). The node's process binds node.listen itself, so a bad or busy address
fails before anything runs, and connections wait in the socket's backlog while the fronts restart. It hands
the fronts' process that socket and the read end of the relay (telemetry/relay.py), watches it from a
thread blocked in `wait` (no polling), and starts it again when it dies, after a backoff.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from cronwright.telemetry.logs import say
from cronwright.telemetry.relay import RelayWriter

_log = logging.getLogger("cronwright.cli")

# A fronts' process that died is started again after 0.5 s, then 1, 2, 4, ... up to this many seconds;
# one that ran for HEALTHY seconds before it died starts the count again.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
HEALTHY = 60.0
STOP_TIMEOUT = 15.0  # seconds the fronts' process gets to end its requests (its server allows 5)


class FrontProcess:
    """Starts, watches, restarts and stops the fronts' process of one `serve`."""

    def __init__(self, listening: socket.socket, relay: RelayWriter, config_path: str | None) -> None:
        self.listening = listening
        self._relay = relay
        self._config_path = config_path
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self._watcher = threading.Thread(target=self._watch, name="cronwright-fronts-watch", daemon=True)

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None else None

    def start(self) -> None:
        with self._lock:
            self._process = self._spawn()
        self._watcher.start()

    def stop(self) -> None:
        """Asks the fronts' process to end (SIGTERM), kills it if it lingers, and closes the socket."""
        self._stopping.set()
        with self._lock:
            process = self._process
        deadline = time.monotonic() + STOP_TIMEOUT
        while process is not None and process.returncode is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):  # it ended meanwhile
                # SIGCONT: one stopped dead (SIGSTOP) runs again. Asked again each second: a signal sent
                # while it was stopped goes to whichever of its threads runs first, and one that a thread
                # other than the main one took leaves the main thread asleep in its wait.
                process.send_signal(signal.SIGCONT)
                process.send_signal(signal.SIGTERM)
            self._watcher.join(1.0)
        if process is not None and process.returncode is None:
            say(_log, f"the fronts' process (pid {process.pid}) did not stop in {STOP_TIMEOUT:g}s: killed",
                logging.WARNING, pid=process.pid)  # fmt: skip
            process.kill()
        self._watcher.join(STOP_TIMEOUT)
        self._relay.detach()
        self.listening.close()

    def _spawn(self) -> subprocess.Popen[bytes]:
        read_end, write_end = os.pipe()
        argv = [sys.executable, "-m", "cronwright.fronts.cli.front_process"]
        argv += ["--listen-fd", str(self.listening.fileno()), "--relay-fd", str(read_end)]
        argv += ["--node-pid", str(os.getpid())]
        if self._config_path is not None:
            argv += ["--config", self._config_path]
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, pass_fds=(self.listening.fileno(), read_end)
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)  # the child's now: when it exits, the node's writes find no reader
        self._relay.attach(write_end)
        return process

    def _watch(self) -> None:
        failures, returncode = 0, 0
        while True:
            process = self._process
            started = time.monotonic()
            if process is not None:
                returncode = process.wait()  # blocks in waitpid: an idle serve does not wake
                self._relay.detach()
                if self._stopping.is_set():
                    return
                failures = 0 if time.monotonic() - started >= HEALTHY else failures
            delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2**failures)
            failures += 1
            if process is not None:
                ended = f"the fronts' process (pid {process.pid}) ended ({_how(returncode)})"
                say(_log, f"{ended}; the node fires on, and starts it again in {delay:g}s",
                    logging.WARNING, pid=process.pid, returncode=returncode)  # fmt: skip
            if self._stopping.wait(delay):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                try:
                    self._process = self._spawn()
                except OSError as error:
                    self._process = None
                    say(_log, f"the fronts' process could not be started ({error}); trying again",
                        logging.ERROR)  # fmt: skip


def _how(returncode: int) -> str:
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"
