"""One thread that waits for the replies of every python worker running a call begun without a thread of
its own (`Pool.begin`).

Why: a thread per call, blocked on its worker's pipe, costs the node's process a wake-up and a handful of
GIL hand-offs per call, on threads that fight the scheduling pass for the one GIL: about 100 us of CPU a
call, against about 15 us for one thread that polls every worker's pipe at once (a component figure:
16 warm workers running a no-op). The thread sleeps while nothing is watched, and ends when its pool
closes and the last call it watched has ended.

A thread that would otherwise sleep until a call ends (a `tick`'s, which does nothing else meanwhile) can
do that thread's work itself instead (`pumping`): the replies then come on the thread that records them,
and no GIL hand-off runs between it and a reply thread at every reply. In a `tick` with 2,000 python
firings due, the hand-offs cost about a tenth of the firing time.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, Protocol

log = logging.getLogger("cronwright.targets")

# How a watched call ended: its reply, its worker's end of file (or garbage), or its deadline.
Event = dict[str, Any] | Literal["died", "late"]


# How long the thread, once the last call it watched has ended, waits on a clock before it waits without
# one. A call begun in that time is seen by its epoll_wait at once, and its deadline comes after the
# wait ends: no wake-up through the pipe for it. Without it, the first call after each moment with
# nothing in flight (most calls of a node whose runs end before the next start) paid one: a write, a
# context switch, and a GIL hand-off. The cost: one wake-up of an idle node, this long after its last run.
LINGER = 0.05

# How long past a deadline the reply thread leaves it to a thread that pumps. A pump keeps each deadline at
# its instant when it waits; one busy elsewhere (a pass waiting on a store that hangs) does not wait, and
# its runs' deadlines would pass unkept: past this, the reply thread, parked meanwhile, keeps them itself.
PUMP_GRACE = 1.0


class Watched(Protocol):
    def fileno(self) -> int:
        """The pipe its replies come on."""
        ...

    def receive(self) -> dict[str, Any] | Literal["died"] | None:
        """Reads what is there (the pipe is readable): the reply once it came, "died", or None for more."""
        ...


class Replies:
    """Thread-safe: `watch` from any thread; each `ended` callback runs on the replies' thread, once.

    Where the system has epoll, a pipe `watch` registers is seen at once by the thread waiting in
    epoll_wait, so `watch` wakes that thread only when it must: when it is not waiting for any pipe, or
    the new call's deadline comes before the end of its wait. A burst of calls then costs no wake-up of
    their own (each one was a write, a context switch and a GIL hand-off). Elsewhere, poll() sees only
    the pipes registered before it began, so every `watch` wakes the thread.
    """

    def __init__(self, epoll: bool = hasattr(select, "epoll"), grace: float = PUMP_GRACE) -> None:
        self._lock = threading.Lock()
        self._grace = grace  # see PUMP_GRACE
        # How many calls the reply thread ended (not a pump): while a thread pumps, none but those whose
        # deadline it missed. Each is a GIL hand-off the pump exists to save; tests count them.
        self.ended_on_thread = 0
        # Set while a thread pumps (`pumping`): the reply thread then parks, waiting on this, not a pipe.
        self._unparked = threading.Condition(self._lock)
        self._pumps = 0
        # Until when (monotonic) the reply thread, parked while a thread pumps, sleeps: inf without a clock,
        # -inf while it is not parked. A watch whose deadline (and grace) comes before it wakes it.
        self._parked_until = -math.inf
        # Held by whoever does a round (the reply thread or a pump), so that one pipe is never read by two.
        self._round = threading.Lock()
        self._watched: dict[int, tuple[Watched, float, Callable[[Event], None]]] = {}
        self._thread: threading.Thread | None = None
        self._closed = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._epoll = select.epoll() if epoll else None
        # The pipe each fd is registered for in the epoll set. A worker's pipe stays registered between
        # its calls (an epoll_ctl each way per call was about a tenth of a python firing's cost in the
        # node); one that fires while unwatched (an idle worker that died) is taken out then, and a pipe
        # closed is taken out by the kernel, its fd number registered afresh for whatever pipe gets it.
        self._registered: dict[int, Watched] = {}
        # When the thread's wait ends (monotonic), while it waits: `watch` wakes it for an earlier deadline.
        self._waits_until = -math.inf
        # Until when the thread, with nothing to watch, still waits on a clock (monotonic): see LINGER.
        self._linger_until = -math.inf
        # Closed with the object, never before: a wake-up written late must never hit a reused fd. (The
        # epoll object closes its own.)
        weakref.finalize(self, _close_all, self._wake_read, self._wake_write)
        if self._epoll is not None:
            self._epoll.register(self._wake_read, select.EPOLLIN)
        self._wait = self._epoll_wait if self._epoll is not None else self._poll_wait()

    def watch(self, watched: Watched, deadline: float, ended: Callable[[Event], None]) -> None:
        """Calls `ended` when `watched` has replied or died, or at `deadline` (monotonic) if neither."""
        fd = watched.fileno()
        with self._lock:
            self._watched[fd] = (watched, deadline, ended)
            if self._epoll is not None and self._registered.get(fd) is not watched:
                try:
                    self._epoll.register(fd, select.EPOLLIN)
                except FileExistsError:  # its fd number's last pipe is still open somewhere
                    self._epoll.modify(fd, select.EPOLLIN)
                self._registered[fd] = watched
            if self._thread is None:
                self._start_thread()  # while a thread pumps, it parks, and keeps the deadlines it misses
            elif deadline + self._grace < self._parked_until:
                self._unparked.notify_all()  # parked until later than this deadline would be kept
            wake = self._epoll is None or deadline < self._waits_until
        if wake:
            self._wake()

    def close(self) -> None:
        """The thread ends once the calls it watches have ended (their workers killed by the pool)."""
        with self._lock:
            self._closed = True
        self._wake()

    @contextlib.contextmanager
    def pumping(self) -> Iterator[Pump]:
        """While the block runs, the calling thread does the reply thread's work whenever it calls
        `Pump.wait`, and the reply thread parks. Meant for a thread that waits for the calls it started
        and does little else: what it does between waits (a `tick`'s pass) delays the replies that come
        meanwhile, and the deadlines by `PUMP_GRACE` at most (the parked thread keeps those the pump
        misses). Afterwards the reply thread takes over what is still watched."""
        with self._lock:
            self._pumps += 1
        self._wake()  # a reply thread in its wait comes out of it, and parks
        try:
            yield Pump(self, threading.get_ident())
        finally:
            with self._lock:
                self._pumps -= 1
                if not self._pumps:
                    if self._thread is None and self._watched:
                        self._start_thread()
                    self._unparked.notify_all()

    def _start_thread(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="cronwright-replies", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                # No pipe is read here while a pump reads them, unless a deadline passed that the pump
                # has not kept within the grace: then one look, and the calls past it end here.
                while self._pumps and (overdue := self._overdue_in()) != 0.0:
                    self._parked_until = math.inf if overdue is None else time.monotonic() + overdue
                    self._unparked.wait(overdue)
                self._parked_until = -math.inf
                pumped = self._pumps > 0
                if self._closed and not self._watched and not pumped:
                    self._thread = None
                    return
            self._do_round(0.0 if pumped else None, linger=not pumped)

    def _overdue_in(self) -> float | None:
        """Under the lock: how long until the first deadline watched is past by the grace (0.0: it is);
        None with no deadline watched, so that the parked thread sleeps without a clock."""
        first = min((deadline for _, deadline, _ in self._watched.values()), default=math.inf)
        if first == math.inf:
            return None
        return max(0.0, first + self._grace - time.monotonic())

    def _do_round(self, limit: float | None, linger: bool) -> None:
        """One wait for the watched pipes (at most `limit` seconds; None: until the first deadline), and
        the ends of the calls it saw: replies, deaths, deadlines past."""
        if not self._round.acquire(blocking=False):
            # The other side's round was on (the reply thread's, as a pump began): it may have taken a
            # wake-up meant for the caller, so this round only looks, and the caller checks again.
            self._round.acquire()
            limit = 0.0
        try:
            with self._lock:
                watched = dict(self._watched)
                first = min((deadline for _, deadline, _ in watched.values()), default=math.inf)
                if linger and first == math.inf and self._linger_until > time.monotonic():
                    first = self._linger_until
                if limit is not None:
                    first = min(first, time.monotonic() + limit)
                self._waits_until = first
            timeout = None if first == math.inf else max(0.0, first - time.monotonic())
            for fd in self._wait(watched, timeout):
                if fd == self._wake_read:
                    self._drain()
                elif fd in watched:
                    self._receive(fd, *watched[fd])
                else:
                    self._unregister(fd)
            with self._lock:
                self._waits_until = -math.inf  # not waiting: the next round reads every watch anyway
            now = time.monotonic()
            for fd, (_, deadline, ended) in watched.items():
                if deadline <= now:
                    self._end(fd, ended, "late")
        finally:
            self._round.release()

    def _epoll_wait(self, _watched: Mapping[int, object], timeout: float | None) -> list[int]:
        assert self._epoll is not None
        # Rounded up to the millisecond epoll waits in, so that a deadline is never woken for too early.
        wait = -1 if timeout is None else math.ceil(timeout * 1000) / 1000
        return [fd for fd, _ in self._epoll.poll(wait)]

    def _poll_wait(self) -> Callable[[Mapping[int, object], float | None], list[int]]:
        """A wait on poll(), which registers the watched pipes anew before each round."""
        poller = select.poll()
        poller.register(self._wake_read, select.POLLIN)
        registered: set[int] = set()

        def wait(watched: Mapping[int, object], timeout: float | None) -> list[int]:
            nonlocal registered
            for fd in watched.keys() - registered:
                poller.register(fd, select.POLLIN)
            for fd in registered - watched.keys():
                poller.unregister(fd)
            registered = set(watched)
            return [fd for fd, _ in poller.poll(None if timeout is None else math.ceil(timeout * 1000))]

        return wait

    def _receive(self, fd: int, watched: Watched, _deadline: float, ended: Callable[[Event], None]) -> None:
        try:
            event = watched.receive()
        except OSError:
            event = "died"
        if event is not None:
            self._end(fd, ended, event)

    def _end(self, fd: int, ended: Callable[[Event], None], event: Event) -> None:
        with self._lock:
            if self._watched.get(fd, (None, 0.0, None))[2] is not ended:
                return  # ended already (a reply and its deadline in one round)
            del self._watched[fd]
            self._linger_until = time.monotonic() + LINGER
            if threading.current_thread() is self._thread:
                self.ended_on_thread += 1
        try:
            ended(event)
        except Exception:  # a bug in one call's ending must not stop the replies of the others
            log.exception("the end of a python call could not be handled")

    def _unregister(self, fd: int) -> None:
        """Takes a pipe that fired while nobody watched it out of the epoll set (its worker died idle, or
        it was closed while registered): level-triggered, it would fire at every wait."""
        with self._lock:
            if fd in self._watched or self._epoll is None:
                return  # watched again since the wait returned: its next round reads it
            self._registered.pop(fd, None)
            with contextlib.suppress(OSError):
                self._epoll.unregister(fd)

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_read, 4096):
                pass

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # the pipe is full of wake-ups already
            os.write(self._wake_write, b".")


class Pump:
    """What `Replies.pumping` hands the thread that pumps."""

    def __init__(self, replies: Replies, owner: int) -> None:
        self._replies = replies
        self.owner = owner  # the pumping thread's ident

    def wait(self, limit: float) -> None:
        """Waits at most `limit` seconds for a reply, a death, a deadline or `wake`, and ends the calls
        that did: their `ended` callbacks run here, on the pumping thread."""
        self._replies._do_round(max(0.0, limit), linger=False)

    def wake(self) -> None:
        """From another thread: ends the pump's wait now (something it waits for happened elsewhere)."""
        self._replies._wake()


def _close_all(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
