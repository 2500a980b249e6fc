"""systemd's notify protocol (`Type=notify`), with no dependency: one datagram to `$NOTIFY_SOCKET`.

`serve` says `READY=1` once the store is open, the first pass done and the fronts listen; `RELOADING=1`
and `READY=1` around a reload; `STOPPING=1` as it stops; `STATUS=` lines for `systemctl status`. With
`WatchdogSec=` (systemd sets `WATCHDOG_USEC`), the node's own loop pets the watchdog (`WATCHDOG=1`) each
time it comes round: a loop stuck in a pass (a store that hangs, a deadlock) stops petting, and systemd
restarts the node. Without `WATCHDOG_USEC` nothing here wakes anything (semantic 25); with it, an idle
loop wakes every half watchdog interval, the least the watchdog needs.

Nothing here ever fails its caller: a socket that is gone costs a debug line, never a node.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterable, MutableMapping

log = logging.getLogger("cronwright.node")


class LoopWatch:
    """What the node's loop tells whoever watches it (node/drive.py); this one tells nobody.

    `interval`: the longest the loop may go without coming round (None: no limit, it sleeps until its next
    due instant)."""

    interval: float | None = None

    def booted(self) -> None:
        """The store is open and the first pass done."""

    def alive(self) -> None:
        """The loop came round: a pass ended, or a wait did."""

    def failed(self, error: Exception) -> None:
        """A pass failed; the loop tries again with backoff."""

    def recovered(self) -> None:
        """A pass went well after one or more failed."""


class Systemd(LoopWatch):
    """The notify socket of the service manager that started this process."""

    def __init__(
        self,
        address: str,
        watchdog_usec: int | None = None,
        awaits: Iterable[str] = ("node",),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        # An abstract socket is named with a leading '@', sent as a NUL byte (sd_notify(3)).
        self.address = "\0" + address[1:] if address.startswith("@") else address
        # Pets every half interval, the margin sd_watchdog_enabled(3) advises.
        self.interval = watchdog_usec / 2e6 if watchdog_usec else None
        self._awaited = set(awaits)
        self._monotonic = monotonic
        self._last_pet: float | None = None
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    @classmethod
    def from_environ(
        cls, environ: MutableMapping[str, str] | None = None, awaits: Iterable[str] = ("node",)
    ) -> Systemd | None:
        """The notifier systemd asked for, or None. It takes the variables out of the environment, as
        sd_notify's `unset_environment` does, so that no process this one starts (a target, a worker,
        the fronts' process) speaks to systemd in the node's name."""
        environ = os.environ if environ is None else environ
        address = environ.pop("NOTIFY_SOCKET", "")
        usec, pid = environ.pop("WATCHDOG_USEC", ""), environ.pop("WATCHDOG_PID", "")
        if not address:
            return None
        watchdog = int(usec) if usec.isdigit() and (not pid or pid == str(os.getpid())) else None
        return cls(address, watchdog, awaits)

    def notify(self, *fields: str) -> bool:
        """Sends one datagram of `KEY=VALUE` lines; False (and a debug line) if it could not be sent."""
        message = "\n".join(fields).encode()
        try:
            self._socket.sendto(message, self.address)
        except OSError as error:
            log.debug("systemd notify %s not sent: %s", fields, error)
            return False
        return True

    def part_ready(self, part: str) -> None:
        """One awaited part is ready ("node": booted; "fronts": listening); READY=1 once all are."""
        if part in self._awaited:
            self._awaited.discard(part)
            if not self._awaited:
                self.notify("READY=1", "STATUS=serving")

    def booted(self) -> None:
        self.part_ready("node")

    def alive(self) -> None:
        if self.interval is None:
            return
        now = self._monotonic()
        if self._last_pet is None or now - self._last_pet >= self.interval / 2:
            self._last_pet = now
            self.notify("WATCHDOG=1")

    def failed(self, error: Exception) -> None:
        self.notify(f"STATUS=a scheduling pass failed, trying again: {_one_line(error)}")

    def recovered(self) -> None:
        self.notify("STATUS=serving")

    def reloading(self) -> None:
        """Before a reload: systemd holds `systemctl reload` until the READY=1 that `reloaded` sends."""
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.notify("RELOADING=1", f"MONOTONIC_USEC={usec}", "STATUS=reloading the config")

    def reloaded(self, status: str) -> None:
        self.notify("READY=1", f"STATUS={_one_line(status)}")

    def stopping(self) -> None:
        self.notify("STOPPING=1", "STATUS=stopping: waiting for runs in flight")

    def close(self) -> None:
        self._socket.close()


def _one_line(text: object) -> str:
    return " ".join(str(text).split())[:400]
