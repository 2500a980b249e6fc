"""cronwright: a scheduler that scripts, operators and AI agents can safely share."""

# Kept light on purpose: target modules and workers import this, and the decorator imports the stdlib only.
from typing import TYPE_CHECKING

from cronwright._version import __version__
from cronwright.targets.decorator import Context, action

if TYPE_CHECKING:
    from cronwright.client import Client, Refused


__all__ = ["Client", "Context", "Refused", "__version__", "action"]


def __getattr__(name: str) -> object:
    # The client pulls in pydantic and httpx: loaded on first use, not by every worker that imports this.
    if name in ("Client", "Refused"):
        from cronwright import client

        return getattr(client, name)
    raise AttributeError(f"module 'cronwright' has no attribute {name!r}")
