"""The node's side of python actions: the warm pool of worker processes, by WorkerSpec.

It starts workers (forked by a fork server per spec, forkserver.py), sends them calls, reads their replies,
kills one that hangs past its deadline or dies, and replaces it; `describe` learns a module's actions in a
one-off worker. The worker process itself, the child side of the protocol, is worker.py.

Why plain subprocesses speaking JSON lines, and not `multiprocessing`:

- A worker is never a fork of the node. The node runs threads, and a fork of a threaded process can
  deadlock; a fork would also inherit the node's memory, its store connections and every secret it has
  resolved. It is forked from a fork server (forkserver.py): a fresh, single-threaded interpreter per
  python target that has imported what a worker imports and nothing else, so that a worker starts in a
  millisecond, not in the tens of milliseconds of a cold interpreter.
- `multiprocessing` pools do not survive the death of one worker (`ProcessPoolExecutor` breaks as a whole)
  and cannot kill one task at its deadline. Here each worker is one process in its own process group: it is
  killed, with whatever it spawned, and replaced alone.
- JSON, not pickle, crosses the boundary, so the node never unpickles what target code produced.
- The protocol runs over the worker's stdin and stdout, which the worker moves aside before it imports any
  target code. Its fds 1 and 2 then point at a capture file owned by the node, so `print`, logging, C
  extensions and subprocesses are all captured, and the output of a worker that crashed is still there.

A worker serves one python target: its module is imported once, with the target's `path` added to `sys.path`
(in the worker only), and then it runs one call at a time. The module's files are fingerprinted, and a worker
whose code changed on disk is retired, so an edit lands at the next run without a restart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from cronwright.targets.attempt import Call, Capture, Finished, Output, kill_group, why_exited
from cronwright.targets.forkserver import ForkServer, ServerFailed
from cronwright.targets.specs import Fingerprint, WorkerSpec, fingerprint
from cronwright.targets.worker import STARTED
from cronwright.targets.worker_replies import Event, Pump, Replies

log = logging.getLogger("cronwright.targets")

_REPLY_LIMIT = 1024 * 1024  # a protocol line longer than this means the worker is broken
_STARTUP_TIMEOUT = 30.0


class DescribeFailed(Exception):
    """The target module could not be described: it failed to import, or hung, or has no actions."""


def describe(spec: WorkerSpec, timeout: float = _STARTUP_TIMEOUT) -> dict[str, Any]:
    """Imports the target module in a one-off worker and returns `{"files": [...], "actions": [...]}`.

    Each action is `ActionMark.describe()`. The node learns a module's actions this way and never imports it.
    """
    capture = Capture()
    try:
        proc = subprocess.Popen(
            spec.argv(describe=True),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=capture.child_fd,
            cwd=spec.cwd,
            env=spec.environ(),
            start_new_session=True,
        )
    except OSError as error:
        capture.close()
        raise DescribeFailed(f"cannot start {spec.python}: {error.strerror}") from error
    with proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.communicate()
            capture.close()
            raise DescribeFailed(f"importing it took longer than {timeout:g}s; it was killed") from None
        printed = capture.take(4096)
        capture.close()
    try:
        reply = json.loads(out.splitlines()[0]) if out else {}
    except ValueError:
        reply = {}
    if reply.get("ready"):
        return {"files": reply["files"], "actions": reply["actions"]}
    problem = reply.get("error") or f"the worker {why_exited(proc.returncode)}"
    detail = (printed.head + printed.tail).strip().splitlines()[-1:] if not reply.get("error") else []
    raise DescribeFailed("; ".join([problem, *detail]))


class _Died(Exception):
    pass


class _Overran(Exception):
    pass


class _Vanished(Exception):
    """The worker died before it took the call: the action never started, so another worker may run it."""


class _StartFailed(Exception):
    def __init__(self, finished: Finished) -> None:
        super().__init__(finished.message)
        self.finished = finished


def _encode(request: Mapping[str, Any]) -> bytes:
    """A call as its protocol line: orjson writes it several times faster than the standard library, on
    every run; the standard library writes what orjson refuses (an integer past 64 bits among the args).
    (The worker, in a target's own interpreter that need not have orjson, reads it with the standard
    library.)"""
    try:
        return orjson.dumps(request)
    except TypeError:
        return json.dumps(request).encode()


def _message(line: bytes) -> dict[str, Any]:
    """One protocol line as its object; _Died on anything else. (The standard library reads it: orjson
    would turn an integer past 64 bits, in the schema of a ready line's actions, into a float.)"""
    try:
        message = json.loads(line)
    except ValueError:
        raise _Died from None
    if not isinstance(message, dict):
        raise _Died
    return message


class _Worker:
    """One worker process, owned by one thread at a time (the pool hands it out), or watched by the
    pool's reply thread while it runs a call begun without a thread (`Pool.begin`)."""

    def __init__(self, spec: WorkerSpec, server: ForkServer, startup_timeout: float) -> None:
        self.spec = spec
        self.runs = 0
        self.capture = Capture()
        self._buffer = b""
        self.took = False  # the worker acknowledged the call it was sent: the action started
        try:
            self.proc = server.fork(spec.worker_args(), self.capture.child_fd, startup_timeout)
        except ServerFailed as failed:
            self.capture.close()
            raise _StartFailed(Finished(failed.kind, str(failed), failed.output)) from None
        try:
            ready = self._read(time.monotonic() + startup_timeout)
        except _Overran:
            hung = f"the worker hung for {startup_timeout:g}s importing {spec.module!r}; it was killed"
            raise _StartFailed(Finished("timeout", hung, self.kill())) from None
        except _Died:
            output = self.kill()
            died = f"the worker {why_exited(self.proc.wait())} while importing {spec.module!r}"
            raise _StartFailed(Finished("crashed", died, output)) from None
        if not ready.get("ready"):
            output = self.kill()
            raise _StartFailed(Finished("error", f"the target module failed: {ready.get('error')}", output))
        self.files: list[str] = ready["files"]
        self.fingerprint = fingerprint(self.files)

    def stale(self, stamp: Fingerprint | None = None) -> bool:
        """Whether the worker died, or its module's files changed since it imported them. `stamp`: their
        fingerprint as the caller has just taken it (the registry's, checking the same run); equal to
        the worker's own, it answers without a stat per file."""
        if self.proc.poll() is not None:
            return True
        return stamp != self.fingerprint and fingerprint(self.files) != self.fingerprint

    def call(self, action: str, call: Call) -> tuple[Finished, bool]:
        """Runs one call; returns how it ended, and whether this worker may serve another."""
        deadline = self.send(action, call)
        try:
            self._read(deadline)  # {"started": true}: the action runs from here on
        except _Died:
            self.kill()
            raise _Vanished from None
        except _Overran:
            pass  # a worker too busy even to take the call is as hung as an action that never returns
        try:
            reply = self._read(deadline)
        except _Overran:
            return self.overran(call), False
        except _Died:
            return self.died(), False
        return self.replied(reply), True

    def send(self, action: str, call: Call) -> float:
        """Sends the call; returns its deadline (monotonic). _Vanished if the worker was gone already."""
        self.runs += 1
        self.took = False
        self.capture.reset()
        request = {**call.envelope, "action": action, "secrets": dict(call.secrets)}
        request["deadline"] = call.deadline.isoformat()
        deadline = time.monotonic() + call.timeout
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(_encode(request) + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.kill()
            raise _Vanished from None
        return deadline

    def fileno(self) -> int:
        """The pipe the worker's replies come on."""
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def receive(self) -> dict[str, Any] | Literal["died"] | None:
        """Reads what the worker has sent (its pipe is readable): the reply once it came, "died" at end
        of file or on garbage, else None. `took` tells whether the worker had taken the call."""
        chunk = os.read(self.fileno(), 65536)
        if not chunk or len(self._buffer) > _REPLY_LIMIT:
            return "died"
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, _, self._buffer = self._buffer.partition(b"\n")
            if not self.took and line == STARTED:
                self.took = True  # sent before the action starts: known by its bytes, not parsed
                continue
            try:
                message = _message(line)
            except _Died:
                return "died"
            if not self.took:
                self.took = True
                continue
            return message
        return None

    def replied(self, reply: dict[str, Any]) -> Finished:
        printed = (self.capture.take(),)
        message, cut = str(reply.get("message", "")), bool(reply.get("cut"))
        return Finished("ok" if reply.get("ok") else "error", message, printed, cut)

    def overran(self, call: Call) -> Finished:
        late = f"ran past its deadline of {call.timeout:g}s; the worker was killed"
        return Finished("timeout", late, self.kill())

    def died(self) -> Finished:
        output = self.kill()
        return Finished("crashed", f"the worker {why_exited(self.proc.wait())}", output)

    def _read(self, deadline: float) -> dict[str, Any]:
        """The next protocol line; _Overran at the deadline, _Died at end of file or on garbage."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Overran
            if not poller.poll(max(1, int(remaining * 1000))):
                continue
            chunk = os.read(fd, 65536)
            if not chunk or len(self._buffer) > _REPLY_LIMIT:
                raise _Died
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return _message(line)

    def interrupt(self) -> None:
        """From another thread: kills the worker; the thread that owns it sees it die and cleans up."""
        self.proc.kill_group()

    def kill(self) -> tuple[Output, ...]:
        """Kills the worker and its group, waits for its end and closes its pipes; returns its output."""
        self.proc.kill_group()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass  # a write end whose buffer could not be flushed to a dead worker
        if self.capture.closed:
            return ()
        output = self.capture.take()
        self.capture.close()
        return (output,)


@dataclass
class _Slots:
    idle: list[_Worker] = field(default_factory=list)


class Pool:
    """Warm worker processes, by WorkerSpec. Thread-safe: the node runs attempts from many threads.

    A worker that crashed, overran its deadline or whose code changed is discarded, and a replacement is
    started in the background so that the next firing finds a warm one.
    """

    def __init__(
        self,
        max_idle: int = 4,
        startup_timeout: float = _STARTUP_TIMEOUT,
        max_runs: int = 1000,
        spare: bool = False,
    ) -> None:
        self.max_idle = max_idle
        # A serving node keeps one worker started beside those in use: a firing that comes while the
        # others run (two jobs due in the same second) finds it warm instead of paying a cold start.
        self.spare = spare
        self.startup_timeout = startup_timeout
        self.max_runs = (
            max_runs  # a worker is recycled after this many runs, so leaks in target code stay small
        )
        self._slots: dict[WorkerSpec, _Slots] = {}
        self._servers: dict[WorkerSpec, ForkServer] = {}
        self._server_locks: dict[WorkerSpec, threading.Lock] = {}
        self._busy: set[_Worker] = set()
        self._starting: list[threading.Thread] = []
        self._warming: set[WorkerSpec] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._replies = Replies()  # waits for the calls `begin` started

    def run(self, spec: WorkerSpec, action: str, call: Call) -> Finished:
        """Runs one action in a worker of `spec`. Never raises: every failure is a Finished."""
        for _ in range(3):
            try:
                worker = self._acquire(spec)
            except _StartFailed as failed:
                return failed.finished
            # Overlap replace stops the worker (the pool replaces it); the runner says `cancelled`.
            call.stop.hook(worker.interrupt)
            try:
                finished, healthy = worker.call(action, call)
                break
            except _Vanished:
                # It died while idle (killed, out of memory) and the check at acquire missed it by a hair,
                # or it was stopped before it took the call: then no other worker takes it.
                with self._lock:
                    self._busy.discard(worker)
                if call.stop.requested:
                    self.warm(spec)
                    return Finished("cancelled", "stopped before it started")
            finally:
                call.stop.hook(None)
        else:
            return Finished("crashed", "three workers in a row died before they could take the call")
        return self._settle(worker, finished, healthy)

    def _settle(self, worker: _Worker, finished: Finished, healthy: bool) -> Finished:
        """After a call: the worker goes back to the idle ones, or is killed and replaced."""
        with self._lock:
            self._busy.discard(worker)
            closed = self._closed
        if closed:
            worker.kill()
            if not healthy:
                return Finished(
                    "interrupted", "the node stopped while this ran; its worker was killed", finished.output
                )
            return finished
        if healthy and worker.runs < self.max_runs:
            self._release(worker)
        else:
            if healthy:
                worker.kill()
            self.warm(worker.spec)
        return finished

    def begin(
        self,
        spec: WorkerSpec,
        action: str,
        call: Call,
        done: Callable[[Finished], None],
        stamp: Fingerprint | None = None,
    ) -> bool:
        """Starts one action in an idle warm worker of `spec`, without a thread of its own: the pool's
        reply thread waits for it among every such call, and `done` gets how it ended, from that thread
        (or one the pool starts for a worker that failed). False, with nothing started, when no warm
        worker is idle: `run` it then, on a thread, which starts one.

        Why: a thread per call that waits on its worker's pipe costs the node's process about 100 us of
        CPU per call in wake-ups and GIL hand-offs; one thread waiting for all of them, about 15 us.
        `stamp`: the module files' fingerprint the caller has just taken (`_Worker.stale`).
        """
        worker = self._idle(spec, stamp)
        if worker is None:
            return False
        # Overlap replace stops the worker (the pool replaces it); the runner says `cancelled`.
        call.stop.hook(worker.interrupt)
        try:
            deadline = worker.send(action, call)
        except _Vanished:
            call.stop.hook(None)
            with self._lock:
                self._busy.discard(worker)
            return False
        self._replies.watch(worker, deadline, lambda event: self._ended(worker, action, call, event, done))
        return True

    def _ended(
        self, worker: _Worker, action: str, call: Call, event: Event, done: Callable[[Finished], None]
    ) -> None:
        """A call begun by `begin` has replied, died or overrun (on the reply thread). A reply is settled
        here; a worker to kill and reap is handled on a thread of its own, so the others' replies wait
        for nothing."""
        if isinstance(event, dict):
            call.stop.hook(None)
            done(self._settle(worker, worker.replied(event), healthy=True))
            return
        threading.Thread(
            target=self._failed, args=(worker, action, call, event, done), name="cronwright-reap", daemon=True
        ).start()

    def _failed(
        self, worker: _Worker, action: str, call: Call, event: Event, done: Callable[[Finished], None]
    ) -> None:
        try:
            if event == "late":
                finished = self._settle(worker, worker.overran(call), healthy=False)
            elif worker.took:
                finished = self._settle(worker, worker.died(), healthy=False)
            else:
                # It died before it took the call, so the action never started: as `run` does, the call
                # goes to another worker, unless it was stopped (overlap replace) in the meantime.
                worker.kill()
                with self._lock:
                    self._busy.discard(worker)
                if call.stop.requested:
                    self.warm(worker.spec)
                    finished = Finished("cancelled", "stopped before it started")
                else:
                    finished = self.run(worker.spec, action, call)
        except Exception as error:  # a bug here must become an outcome, not lose the run
            log.exception("a worker's end could not be handled")
            finished = Finished("crashed", f"the pool failed: {type(error).__name__}: {error}")
        finally:
            call.stop.hook(None)
        done(finished)

    def pumping(self) -> AbstractContextManager[Pump]:
        """The calls `begin` started end on the calling thread, in its `Pump.wait`s (`Replies.pumping`)."""
        return self._replies.pumping()

    def warm(self, spec: WorkerSpec) -> None:
        """Starts a worker for `spec` in the background, unless one is idle or starting already."""
        with self._lock:
            if self._closed or self._slots.get(spec, _Slots()).idle or spec in self._warming:
                return
            self._warming.add(spec)
            self._starting = [thread for thread in self._starting if thread.is_alive()]
            thread = threading.Thread(
                target=self._start_idle, args=(spec,), name="cronwright-warm", daemon=True
            )
            self._starting.append(thread)
            thread.start()

    def wait_warm(self, timeout: float | None = None) -> None:
        """Waits until the workers being started in the background are ready (or failed to start)."""
        with self._lock:
            starting = list(self._starting)
        for thread in starting:
            thread.join(timeout)

    def idle(self, spec: WorkerSpec) -> int:
        with self._lock:
            return len(self._slots.get(spec, _Slots()).idle)

    def close(self) -> None:
        """Kills every worker: idle ones at once, busy ones so that their runs end `interrupted`."""
        with self._lock:
            self._closed = True
            idle = [worker for slots in self._slots.values() for worker in slots.idle]
            self._slots.clear()
            busy = list(self._busy)
            starting = list(self._starting)
        for worker in busy:
            worker.interrupt()
        for worker in idle:
            worker.proc.kill_group()  # all at once: each `kill` then waits only for its own end
        for worker in idle:
            worker.kill()
        for thread in starting:
            thread.join()
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            server.close()
        self._replies.close()

    def _acquire(self, spec: WorkerSpec) -> _Worker:
        if self._closed:
            raise _StartFailed(Finished("interrupted", "the node is shutting down"))
        idle = self._idle(spec)
        if idle is not None:
            return idle
        worker = self._start(spec)
        with self._lock:
            if self._closed:
                worker.kill()
                raise _StartFailed(Finished("interrupted", "the node is shutting down"))
            self._busy.add(worker)
        return worker

    def _idle(self, spec: WorkerSpec, stamp: Fingerprint | None = None) -> _Worker | None:
        """An idle worker of `spec` that is still sound, taken (busy); None if there is none."""
        while True:
            with self._lock:
                if self._closed:
                    return None
                slots = self._slots.get(spec)
                worker = slots.idle.pop() if slots is not None and slots.idle else None
                last = slots is None or not slots.idle
            if worker is None:
                return None
            if not worker.stale(stamp):
                with self._lock:
                    self._busy.add(worker)
                if last and self.spare:
                    self.warm(spec)
                return worker
            worker.kill()  # died while idle, or its code changed on disk: a fresh one imports the new code

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            slots = self._slots.setdefault(worker.spec, _Slots())
            # The spare is one beyond `max_idle`: counted in it, a burst that takes every idle worker
            # would start a spare, and the burst's end kill one, each time (a fork and a kill a pass).
            if not self._closed and len(slots.idle) < self.max_idle + self.spare:
                slots.idle.append(worker)
                return
        worker.kill()

    def prestart(self, spec: WorkerSpec) -> None:
        """Starts the fork server of `spec` in the background, and no worker: a process that may find
        work due (a `tick`) pays for the server's interpreter and imports while it boots, instead of at
        its first run. Nothing waits for it: `close` does not, so a tick with nothing due ends as soon,
        and a server that becomes ready after `close` is closed by the thread that started it."""
        with self._lock:
            if self._closed or spec in self._servers:
                return
        threading.Thread(
            target=self._prestarted, args=(spec,), name="cronwright-forkserver-start", daemon=True
        ).start()

    def _prestarted(self, spec: WorkerSpec) -> None:
        with contextlib.suppress(_StartFailed):  # the first run starts one itself, and says why it cannot
            self._server(spec)

    def _start(self, spec: WorkerSpec) -> _Worker:
        """A new worker of `spec`, forked by the spec's fork server (started here when there is none)."""
        return _Worker(spec, self._server(spec), self.startup_timeout)

    def _server(self, spec: WorkerSpec) -> ForkServer:
        """The spec's fork server, alive; started here when there is none (or it died)."""
        with self._lock:
            lock = self._server_locks.setdefault(spec, threading.Lock())
        with lock:  # one server per spec: the threads that want one while it starts wait for it
            with self._lock:
                server = self._servers.get(spec)
                if self._closed:
                    raise _StartFailed(Finished("interrupted", "the node is shutting down"))
            if server is None or not server.alive():
                if server is not None:
                    server.close()
                try:
                    server = ForkServer(spec, self.startup_timeout)
                except ServerFailed as failed:
                    raise _StartFailed(Finished(failed.kind, str(failed), failed.output)) from None
                with self._lock:
                    closed = self._closed
                    if not closed:
                        self._servers[spec] = server
                if closed:
                    server.close()
                    raise _StartFailed(Finished("interrupted", "the node is shutting down"))
        return server

    def _start_idle(self, spec: WorkerSpec) -> None:
        try:
            worker = self._start(spec)
        except _StartFailed:
            return  # the next run starts one itself, and reports why it cannot
        finally:
            with self._lock:
                self._warming.discard(spec)
        self._release(worker)
