"""Waking a node that serves on this host, so that a change made by another process lands at once.

The node sleeps until its next due instant. A CLI change made in another process signals each live local
node (found by its beat in the store) with SIGUSR1, which makes it re-read the store. Without the signal
the change still lands, at the node's next safety wake-up.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cronwright.store.base import Storage


def wake_local_nodes(store: Storage) -> int:
    """Signals every serving cronwright node on this host; returns how many were woken."""
    from cronwright.node.node_ids import is_serving  # here: most verbs wake nobody

    host = socket.gethostname()
    woken = 0
    for beat in store.beats():
        parts = beat.node.split(":")
        if not is_serving(beat.node) or parts[0] != host or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or not _is_cronwright(pid):
            continue
        try:
            os.kill(pid, signal.SIGUSR1)
            woken += 1
        except OSError:
            continue  # it ended meanwhile
    return woken


def is_alive(pid: int) -> bool:
    """Whether a process of this pid runs (one of another user's counts: it cannot be signalled, but is)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_cronwright(pid: int) -> bool:
    """Only a process that still runs cronwright is signalled: a pid may have been reused since its beat."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"cronwright" in command and b"serve" in command
