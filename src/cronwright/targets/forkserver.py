"""A fork server for python workers: one cold interpreter per worker spec, which forks the workers.

Why: a worker started cold pays for an interpreter and the worker module's imports, about 60 ms of CPU,
and a `tick` that finds work due starts `max_concurrency` of them at once, on a machine that may have two
cores. A worker forked from a server that has already paid for them starts in about a millisecond.

Why this is not the fork of the node that pool.py rules out: the server is a fresh, single-threaded
`python -P -m cronwright.targets.forkserver`, started as a worker is (the spec's interpreter, environment
and folder, a session of its own). It has executed the worker module's top level, and so imported what a
worker imports (the standard library, the decorator), and never target code; it holds no store
connection and no secret. A worker forked from it then does what a cold one does: it starts a session of
its own, takes its stdin, stdout and stderr from the node, runs the worker module's `main` (the module the
server imported, not executed again), and imports the target module afresh from disk (so an edit lands,
and its import-time state is its own).

The protocol, one JSON object a packet on a SOCK_SEQPACKET socket pair:
- node to server: `{"fork": [worker args]}` with the worker's stdin, stdout and stderr as SCM_RIGHTS; the
  server answers `{"forked": pid}`, or `{"failed": why}`;
- node to server: `{"kill": pid, "signal": n}`: the server signals the worker's process group, and only
  while it has not reaped the worker, so that the pid cannot be another process's by then;
- server to node: `{"exited": pid, "code": c}` when it reaped a worker (`c` as subprocess gives it: the
  exit code, or minus the signal that killed it).
The server exits when the node's end closes (the node stopped, or died); its workers end as cold workers
do, at the end of their stdin.

Standard library only at its top level, as the worker module: this is the server's `__main__`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any

from cronwright.targets.attempt import Capture, Kind, Output, why_exited
from cronwright.targets.specs import WorkerSpec

_PACKET = 65536
_WORKER_MODULE = "cronwright.targets.worker"


class ServerFailed(Exception):
    """The fork server could not be started, or stopped answering: `kind` is the outcome it means."""

    def __init__(self, kind: Kind, message: str, output: tuple[Output, ...] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.output = output


# --- the node side --------------------------------------------------------------------------------


class Forked:
    """A worker process forked by a server: what `subprocess.Popen` offers that the pool uses.

    The server is its parent, so the node never reaps it: its exit status comes in a message.
    """

    def __init__(self, pid: int, server: ForkServer, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None
        self._server = server
        self._ended = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self) -> int:
        self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        """Signals the worker and everything it spawned (it leads a session of its own)."""
        if self.returncode is None:
            self._server.signal(self.pid, sig)

    def ended(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
        self._ended.set()


class ForkServer:
    """The node's end of one fork server. Thread-safe: the pool's threads fork workers at once."""

    def __init__(self, spec: WorkerSpec, startup_timeout: float) -> None:
        self._socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        capture = Capture()  # what it prints while starting (a traceback), told if it fails
        try:
            self.proc = subprocess.Popen(
                [spec.python, "-P", "-m", "cronwright.targets.forkserver", str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=capture.child_fd,
                pass_fds=(theirs.fileno(),),
                cwd=spec.cwd,
                env=spec.environ(),
                start_new_session=True,
            )
        except OSError as error:
            self._socket.close()
            capture.close()
            raise ServerFailed("error", f"cannot start a worker: {error}") from error
        finally:
            theirs.close()
        self._lock = threading.Lock()  # one fork request at a time: their answers come in order
        self._answers: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._workers: dict[int, Forked] = {}
        self._pending: tuple[IO[bytes], IO[bytes]] | None = None
        self._gone = False
        self._reader = threading.Thread(target=self._read, name="cronwright-forkserver", daemon=True)
        self._reader.start()
        try:
            ready = self._answers.get(timeout=startup_timeout)
        except queue.Empty:
            ready = {"hung": True}
        if not ready.get("ready"):
            self.close(kill=bool(ready.get("hung")))
            output = (capture.take(),)
            capture.close()
            if ready.get("hung"):
                hung = f"the worker's fork server hung for {startup_timeout:g}s while starting; it was killed"
                raise ServerFailed("timeout", hung, output)
            died = f"the worker's fork server {why_exited(self.proc.returncode)} while starting"
            raise ServerFailed("crashed", died, output)
        capture.close()  # it said it is ready: from here on its stderr is /dev/null

    def alive(self) -> bool:
        return not self._gone

    def fork(self, args: Sequence[str], stderr: int, timeout: float) -> Forked:
        """A worker running `python -m cronwright.targets.worker ARGS`, its fd 2 a dup of `stderr`."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stdin, stdout = open(stdin_w, "wb"), open(stdout_r, "rb", buffering=0)  # noqa: SIM115
        try:
            with self._lock:
                if self._gone:
                    raise ServerFailed("error", "the worker's fork server is gone")
                self._pending = (stdin, stdout)
                request = json.dumps({"fork": list(args)}).encode()
                try:
                    socket.send_fds(self._socket, [request], [stdin_r, stdout_w, stderr])
                except OSError as error:
                    raise ServerFailed("error", f"the worker's fork server is gone: {error}") from error
                try:
                    answer = self._answers.get(timeout=timeout)
                except queue.Empty:
                    raise ServerFailed("timeout", f"the fork server did not answer in {timeout:g}s") from None
        except BaseException:
            stdin.close()
            stdout.close()
            raise
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        worker = answer.get("worker")
        if not isinstance(worker, Forked):
            stdin.close()
            stdout.close()
            why = answer.get("failed", "its fork server is gone")
            raise ServerFailed("error", f"cannot start a worker: {why}")
        return worker

    def signal(self, pid: int, sig: int) -> None:
        # Not under the lock: a packet goes whole, and a kill must not wait behind a fork's answer.
        if not self._gone:
            with contextlib.suppress(OSError):
                self._socket.send(json.dumps({"kill": pid, "signal": sig}).encode())

    def close(self, kill: bool = False) -> None:
        """Ends the server (its workers end at the end of their stdin, or were killed before)."""
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        try:
            self.proc.wait(timeout=0 if kill else 5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._reader.join()
        self._socket.close()

    def _read(self) -> None:
        """The server's messages, in order: its readiness, fork answers, and the exits of its workers."""
        try:
            while True:
                packet = self._socket.recv(_PACKET)
                if not packet:
                    break
                message = json.loads(packet)
                if "forked" in message:
                    # Known before any exit of it can be read: the server sends this first.
                    assert self._pending is not None
                    worker = Forked(int(message["forked"]), self, *self._pending)
                    self._workers[worker.pid] = worker
                    message = {"worker": worker}
                elif "exited" in message:
                    ended = self._workers.pop(int(message["exited"]), None)
                    if ended is not None:
                        ended.ended(int(message["code"]))
                    continue
                self._answers.put(message)
        except (OSError, ValueError):
            pass  # a broken server is a gone one
        self._gone = True
        self._answers.put({})
        for orphan in list(self._workers.values()):
            # Its parent is gone, so nobody will say how it ends: it is killed now, and said to be.
            with contextlib.suppress(OSError):
                os.killpg(orphan.pid, signal.SIGKILL)
            orphan.ended(-signal.SIGKILL)
        self._workers.clear()


# --- the server side ------------------------------------------------------------------------------


def serve(control: socket.socket) -> list[str] | int:
    """Forks workers until the node's end closes. Returns 0 then, or, in a forked worker, its args."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    children: set[int] = set()
    control.send(json.dumps({"ready": True}).encode())
    while True:
        readable, _, _ = select.select([control.fileno(), wake_r], [], [])
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_r, 512):
                    pass
        _reap(control, children)
        if control.fileno() not in readable:
            continue
        packet, fds, _, _ = socket.recv_fds(control, _PACKET, 3)
        if not packet:
            return 0
        message = json.loads(packet)
        if "kill" in message:
            if int(message["kill"]) in children:
                with contextlib.suppress(OSError):
                    os.killpg(int(message["kill"]), int(message["signal"]))
            continue
        try:
            pid = os.fork()
        except OSError as error:
            _close(fds)
            control.send(json.dumps({"failed": str(error)}).encode())
            continue
        if pid == 0:
            _become_worker(control, (wake_r, wake_w), fds)
            return [str(arg) for arg in message["fork"]]
        _close(fds)
        children.add(pid)
        control.send(json.dumps({"forked": pid}).encode())


def _reap(control: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        code = os.waitstatus_to_exitcode(status)
        control.send(json.dumps({"exited": pid, "code": code}).encode())


def _become_worker(control: socket.socket, wake: tuple[int, int], fds: list[int]) -> None:
    """In the forked child: drops the server's state and takes the worker's fds 0, 1 and 2."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    control.close()
    _close(list(wake))
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    _close([fd for fd in fds if fd > 2])


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def main() -> int:
    control = socket.socket(fileno=int(sys.argv[1]))
    # What every worker imports, once, here: the worker module, by name (the standard library, the decorator).
    importlib.import_module(_WORKER_MODULE)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)  # the node reads what it printed while starting, and no more
    os.close(null)
    outcome = serve(control)
    if isinstance(outcome, int):
        # The node closed its end: nothing here is left to flush or to close (stdout and stderr are
        # /dev/null), and the node's close waits for this exit; the interpreter's teardown would make it
        # wait about 15 ms longer, at the end of every `tick` that ran python.
        os._exit(outcome)
    # A forked worker: it runs the worker module's main, which the server imported, as `python -m` would
    # (its `__main__` block is just that call), and exits as a cold worker exits. Run as `__main__` again
    # instead, the module's top level (its dataclasses above all) cost each worker about 5 ms of CPU at
    # its start: 16 workers starting at once, on two cores, delayed a tick's first runs by ~40 ms.
    sys.argv = [sys.argv[0], *outcome]
    worker: Any = importlib.import_module(_WORKER_MODULE)
    return int(worker.main(outcome))


if __name__ == "__main__":
    sys.exit(main())
