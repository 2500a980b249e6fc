"""What the fronts' process shows of the node's process: its events (the Prometheus counters, the
dashboard's live updates), its wake-ups and how it stands (runs in flight, its last pass), sent down a pipe.

`serve` runs the node in one process and the fronts (HTTP, MCP, the dashboard, /metrics) in another, so
that no request can take what a firing needs (semantic 42). The node's side writes and never waits: the
pipe is non-blocking, and a message that does not fit (the fronts' process stopped dead, or too slow) is
dropped and counted, never queued in the node. Each message is one short JSON line, well under PIPE_BUF,
so a write either lands whole or not at all. The fronts' side reads on a thread that blocks in `read`: an
idle serve wakes neither process, and the end of the pipe (the node's process is gone, even killed) tells
the fronts' process to exit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cronwright.core.events import Event, EventKind, EventSink
from cronwright.core.model import Persistence

if TYPE_CHECKING:
    from cronwright.node.scheduler import Node

log = logging.getLogger("cronwright.relay")

# The event fields the fronts' counters read (sinks.py MetricsSink); the rest stays in the node's logs.
_COUNTED = ("outcome", "took_ms", "reason", "count")
# Room for bursts while the fronts' process is busy: 1 MiB, the most an unprivileged process may ask
# for (/proc/sys/fs/pipe-max-size), about 10,000 messages; the kernel's default is 64 KiB.
PIPE_SIZE = 1 << 20
_CHANGED = b'{"c":1}\n'


class RelayWriter:
    """The node's side: an event sink, a wake-up and a pass's state, each written without waiting."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self.dropped = 0  # messages the fronts' process had no room for, since this node started
        self._dropping = False

    def attach(self, fd: int) -> None:
        """Writes to `fd` (a pipe's write end) from now on, and closes the one before."""
        os.set_blocking(fd, False)
        with contextlib.suppress(OSError):  # a smaller pipe only drops sooner
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        with self._lock:
            previous, self._fd, self._dropping = self._fd, fd, False
        if previous is not None:
            os.close(previous)

    def detach(self) -> None:
        """Writes nothing until the next `attach` (the fronts' process ended): its pipe is closed."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def emit(self, event: Event) -> None:
        fields = {key: event.fields[key] for key in _COUNTED if key in event.fields}
        self._send(_line({"e": event.kind._value_, "f": fields}))

    def changed(self) -> None:
        """Something a reader may show changed (a wake-up, notifications written)."""
        self._send(_CHANGED)

    def passed(self, node: Node) -> None:
        """A pass ended: how the node stands now, for the fronts' gauges."""
        at = node.last_pass_at
        degraded = node.store.persistence is Persistence.DEGRADED
        state = [node.in_flight(), at.timestamp() if at is not None else None, degraded, self.dropped]
        self._send(_line({"s": state}))

    def _send(self, line: bytes) -> None:
        with self._lock:
            if self._fd is None:
                return  # no fronts' process now: a new one starts from what the node does next
            try:
                os.write(self._fd, line)
            except BlockingIOError:
                self.dropped += 1
                if not self._dropping:
                    self._dropping = True
                    log.warning(
                        "the fronts' process reads no more of the node's events (stopped, or too busy): "
                        "they are dropped, and counted in cronwright_relay_dropped_total, until it reads"
                    )
                return
            except OSError:
                return  # the fronts' process died: its watcher starts another
            if self._dropping:
                self._dropping = False
                log.warning("the fronts' process reads the node's events again; %d dropped so far",
                            self.dropped)  # fmt: skip


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class RelayReader:
    """The fronts' side: feeds the node's events to `sinks`, calls `changed` after each batch of messages,
    keeps the node's last state (a NodeView for /metrics), and calls `ended` at the end of the pipe."""

    def __init__(
        self, fd: int, sinks: Sequence[EventSink], changed: Callable[[], None], ended: Callable[[], None]
    ) -> None:
        self._fd = fd
        self._sinks = list(sinks)
        self._changed = changed
        self._ended = ended
        self._in_flight = 0
        self.last_pass_at: datetime | None = None
        self.degraded = False
        self.dropped = 0
        self._thread = threading.Thread(target=self._read, name="cronwright-relay", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def in_flight(self) -> int:
        return self._in_flight

    def _read(self) -> None:
        pending = b""
        try:
            while chunk := os.read(self._fd, 1 << 16):  # blocks: an idle node sends nothing
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                if self._apply(lines):
                    self._changed()  # once a batch: a burst of firings is one change to show
        except OSError as error:
            log.warning("the node's events could not be read: %s", error)
        finally:
            os.close(self._fd)
            self._ended()

    def _apply(self, lines: list[bytes]) -> bool:
        changed = False
        for line in lines:
            try:
                message = json.loads(line)
                if "e" in message:
                    event = Event(EventKind(message["e"]), None, None, message["f"])
                    for sink in self._sinks:
                        sink.emit(event)
                    changed = True
                elif "s" in message:
                    self._in_flight, at, self.degraded, self.dropped = message["s"]
                    self.last_pass_at = datetime.fromtimestamp(at, UTC) if at is not None else None
                else:
                    changed = True
            except (ValueError, KeyError, TypeError) as error:
                log.warning("a message from the node could not be read: %s", error)
        return changed
