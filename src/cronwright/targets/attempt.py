"""What every executor shares: one attempt as it is handed over (`Call`), how it ended (`Finished`), its
captured output, bounded (`Output`, `Capture`), and how a child process is stopped and its end described.

Standard library only: python workers import it too, and they must not import the scheduler.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

OUTPUT_LIMIT = 64 * 1024  # bytes of captured output kept per run: the first half and the last half
MESSAGE_LIMIT = 4096  # characters of a run's message

# The values of model.Outcome. Spelled out here because this module runs inside workers, which should not
# import the scheduler's model (and with it cronsim and the time math) just to name an outcome.
Kind = Literal["ok", "error", "timeout", "crashed", "refused", "interrupted", "cancelled"]


class Masker(Protocol):
    """What masks secrets in output (`secrets.Masker`), named here so that this module needs no other."""

    def mask(self, text: str) -> str: ...

    def mask_cut_end(self, text: str) -> str: ...

    def mask_cut_start(self, text: str) -> str: ...


class Stop:
    """A request to stop one attempt (overlap replace), and what the executor running it does then.

    The executor `hook`s how to stop what it started (kill a process group, abandon a call) as soon as
    it has started it; `request` runs that hook from another thread, or, if it comes first, the hook
    runs as it is set. So a request is never lost between the two.
    """

    __slots__ = ("_hook", "_lock", "_requested")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requested = False
        self._hook: Callable[[], None] | None = None

    @property
    def requested(self) -> bool:
        return self._requested

    def request(self) -> None:
        with self._lock:
            self._requested = True
            hook = self._hook
        if hook is not None:
            hook()

    def hook(self, stop: Callable[[], None] | None) -> None:
        """What stops the attempt now; None once there is nothing left to stop."""
        with self._lock:
            self._hook = stop
            now = self._requested and stop is not None
        if now:
            assert stop is not None
            stop()


@dataclass(frozen=True, slots=True)
class Call:
    """One attempt as an executor sees it: what to send, which secrets it may use, and how long it has."""

    envelope: Mapping[str, Any]
    secrets: Mapping[str, str]
    timeout: float
    deadline: datetime
    # Requested when overlap replace cancels the attempt; the executor then stops what it runs.
    stop: Stop = field(default_factory=Stop)
    # The job's creation instant (UTC, ISO, to the second): with its id and name, what tells it from a job
    # of another store (a fresh one reuses ids). Broker message ids derive from it (brokers/message.py).
    created: str = ""


@dataclass(frozen=True, slots=True)
class Output:
    """Captured output, bounded: `head`, then `omitted` bytes left out, then `tail`."""

    head: str
    tail: str = ""
    omitted: int = 0
    label: str = ""

    def render(self, masker: Masker) -> str:
        """The text with every secret masked, including pieces of one cut at the truncation marker."""
        if self.omitted:
            body = (
                masker.mask_cut_end(self.head)
                + f"\n[… {self.omitted} bytes omitted …]\n"
                + masker.mask_cut_start(self.tail)
            )
        else:
            body = masker.mask(self.head + self.tail)
        return f"[{self.label}]\n{body}" if self.label and body else body


@dataclass(frozen=True, slots=True)
class Finished:
    """How an attempt ended, before the runner masks it and measures it.

    `cut` says the message was truncated at its end, so that the runner also masks a piece of a secret there.
    """

    kind: Kind
    message: str
    output: tuple[Output, ...] = ()
    cut: bool = False


def render_output(outputs: Iterable[Output], masker: Masker) -> str:
    return "\n".join(text for text in (output.render(masker) for output in outputs) if text)


class Capture:
    """An unnamed temp file that a child writes its output into, read back bounded by the node.

    One open file, O_APPEND, shared by the node (which only preads, truncates and fstats it) and the child:
    `reset()` (a truncate between runs) makes the child's next write land at the start. Output lives on disk
    rather than in a pipe: nobody must drain it, and it survives a crash.
    """

    def __init__(self) -> None:
        self._fd: int | None = _unnamed_file()
        # The last `take` found the file empty: a `reset` then has nothing to truncate. What a child
        # writes between runs (a thread of its own) goes to the next run's output instead of nowhere.
        self._empty = False

    @property
    def child_fd(self) -> int:
        """What the child's stream is made of (a copy of the same open file: its writes append)."""
        assert self._fd is not None
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd is None

    def reset(self) -> None:
        assert self._fd is not None
        if not self._empty:  # most runs print nothing: no system call for them
            os.ftruncate(self._fd, 0)
            self._empty = True

    def take(self, limit: int = OUTPUT_LIMIT, label: str = "") -> Output:
        """The output so far; beyond `limit` bytes, its first and last halves."""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        self._empty = size == 0
        if size == 0:
            return Output("", label=label)  # most runs print nothing: no read for it
        if size <= limit:
            return Output(_decode(os.pread(self._fd, size, 0)), label=label)
        half = limit // 2
        head = os.pread(self._fd, half, 0)
        tail = os.pread(self._fd, half, size - half)
        return Output(_decode_head(head), _decode_tail(tail), size - 2 * half, label)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _unnamed_file() -> int:
    """A new empty file in the temp dir, open O_RDWR | O_APPEND, with no name to unlink.

    O_TMPFILE where Linux has it: one system call. mkstemp, then an unlink and a fcntl, took three times
    as long, and a command run makes two such files (stdout, stderr).
    """
    directory = tempfile.gettempdir()
    try:
        return os.open(directory, os.O_RDWR | os.O_APPEND | os.O_TMPFILE | os.O_CLOEXEC, 0o600)
    except (AttributeError, OSError):  # not Linux, or a file system without O_TMPFILE
        pass
    fd, path = tempfile.mkstemp(prefix="cronwright-output-", dir=directory)
    try:
        os.unlink(path)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    except OSError:
        os.close(fd)
        raise
    return fd


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _decode_head(data: bytes) -> str:
    # Not final: a character cut in two at the end is dropped, not turned into a replacement character.
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)


def _decode_tail(data: bytes) -> str:
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1  # continuation bytes of a character cut in two at the start
    return _decode(data[skip:])


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    """Signals a child started with `start_new_session` and everything it spawned.

    Only while the child is not yet reaped: until then its pid, which is the group's id, cannot be reused.
    """
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


def why_exited(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"
