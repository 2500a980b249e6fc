"""A node's id, `host:pid:random`, and whether it names a serving node (semantic 28).

Kept apart and light: the CLI reads the beats' ids to wake a serving node, at nearly every verb.
"""

from __future__ import annotations

import os
import secrets
import socket

# The last part of a serving node's id (`cronwright serve`): what a short-lived process looks for in the
# beats to hand a run_now to (semantic 28). Other processes' ids have three parts.
SERVING = "serve"


def new_node_id(serving: bool = False) -> str:
    """`host:pid:random`, and `:serve` for a node that runs a scheduling loop until it is stopped."""
    base = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
    return f"{base}:{SERVING}" if serving else base


def is_serving(node_id: str) -> bool:
    return node_id.rsplit(":", 1)[-1] == SERVING
