"""The writers' turnstile of a SQLite store: a firing node's write waits for the one write in flight at
most, however fast the callers write (semantic 42).

SQLite has one write lock, and a writer that finds it taken sleeps (1, 2, 5, 10 ... 100 ms) before it
looks again. A front writing back to back (an agent's burst of creates) takes the lock again in the
moment between two of those looks, nearly every time: behind a burst of 2,000 creates made through HTTP,
a serving node's write waited 330 and 430 ms (bench/README.md, session 5).

The turnstile is a file beside the store, locked with flock(2). Every write transaction passes it
before it begins: a caller's (a front, a CLI) takes it shared and lets go at once; the node holds it
exclusively from before it begins until SQLite grants its write lock. Once the node waits, no caller
begins a write, so what it waits for is the write that had already begun. A lock, not a flag in a
file: the kernel drops it when its holder dies.

It is advisory: SQLite's own lock keeps the writes atomic, the turnstile only orders who asks next. So
it is never waited on without bound, and never fails a write: a caller that finds it held looks again
every half millisecond until its wait's bound and then goes on; the node waits only for a caller
passing through it (a moment) or another firing process on the same store, for 50 ms at most, and then
begins without it. A file that cannot be opened (a read-only folder) leaves the store without one.

The file lives while the store is open, as SQLite's -wal and -shm do: a store that closes removes it
when no one is in it at that moment, and a process whose file was removed under it (or replaced) makes
it again at its next write, so that every process orders its writes on the same file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

# How often a write that finds the turnstile held looks again.
CALLER_STEP = 0.0005
NODE_STEP = 0.00005
# How long the node tries for it before it begins without it: only a caller between its two flock
# calls, or another firing process beginning a write, holds it against the node.
NODE_BOUND = 0.05


def turnstile_path(database: Path) -> Path:
    return database.with_name(database.name + "-turnstile")


class Turnstile:
    """The turnstile of one store, for one connection: `first` for a firing node, else a caller.

    `sleep` and `monotonic` are injectable so that a test can tell each look apart without waiting."""

    def __init__(
        self,
        path: Path,
        first: bool,
        bound: float,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.first = first
        self._path = path
        self._bound = NODE_BOUND if first else bound
        self._step = NODE_STEP if first else CALLER_STEP
        self._sleep = sleep
        self._monotonic = monotonic
        self._fd: int | None = self._open()

    def _open(self) -> int | None:
        with contextlib.suppress(OSError):
            # Shared by every process of the store, whoever runs it, as the store's -shm file is.
            return os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        with contextlib.suppress(OSError):
            return os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)  # flock needs no write access
        return None

    @contextlib.contextmanager
    def entering(self) -> Iterator[bool]:
        """Around a write's BEGIN: yields whether the turnstile was taken (False: went on without it)."""
        if self._fd is None:
            yield False
            return
        if not self.first:
            yield self._pass()
            return
        held = self._take(fcntl.LOCK_EX)
        try:
            yield held
        finally:
            if held:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _pass(self) -> bool:
        """A caller's passage: shared for a moment, as soon as no node holds it."""
        if not self._take(fcntl.LOCK_SH):
            return False
        assert self._fd is not None
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        return True

    def _take(self, mode: int) -> bool:
        """Takes the flock in `mode` within the bound, looking again every step; False if it could not."""
        deadline: float | None = None
        while self._fd is not None:
            try:
                fcntl.flock(self._fd, mode | fcntl.LOCK_NB)
                if self._current():
                    return True
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = self._open()  # removed or replaced under it: the file the others use now
                continue
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                    return False  # a file system without flock: no turnstile, the writes go on
            now = self._monotonic()
            if deadline is None:
                deadline = now + self._bound
            elif now >= deadline:
                return False
            self._sleep(self._step)
        return False

    def _current(self) -> bool:
        """Whether the open file is still the one at the path."""
        assert self._fd is not None
        try:
            return os.path.samestat(os.fstat(self._fd), os.stat(self._path))
        except OSError:
            return False

    def close(self) -> None:
        """Lets go of the file, and removes it if no write is in it at this moment (as SQLite removes its
        -wal and -shm): a process still using it makes it again at its next write."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if self._current():
                os.unlink(self._path)
        os.close(self._fd)
        self._fd = None
