"""How a node's lease is kept, by default: the rule every node, store and config agree on.

A node with runs in flight beats at least every `LEASE_BEAT`; one silent for `LEASE_TTL` is dead, and
its runs are recorded `interrupted` by whoever notices (semantics 19 and 24). The config may set both.
"""

from __future__ import annotations

from datetime import timedelta

LEASE_BEAT = timedelta(seconds=10)
LEASE_TTL = timedelta(seconds=45)
