"""`notify-test CHANNEL`: one test notification sent through a channel now, and what became of it.

It goes straight to the channel, not through the outbox, so the answer is the channel's own: delivered, or
why not. Its id is new at each call, so a receiver that drops repeats still shows every test.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.core.notifications import TEST
from cronwright.notify.channels import Channel, DeliveryFailed
from cronwright.timing.iso import render


@dataclass(frozen=True, slots=True)
class Probe:
    payload: dict[str, Any]
    error: str | None = None

    @property
    def delivered(self) -> bool:
        return self.error is None


def test_payload(node: str, now: datetime, zone: ZoneInfo) -> dict[str, Any]:
    """A body shaped like every other (semantic 38), with the transition `test` and no job."""
    return {
        "id": "t_" + secrets.token_hex(16),
        "transition": TEST,
        "at": render(now, zone),
        "job": None,
        "message": f"a test notification from cronwright notify-test on node {node}",
    }


def probe(channel: Channel, node: str, now: datetime, zone: ZoneInfo) -> Probe:
    payload = test_payload(node, now, zone)
    try:
        channel.send(payload)
    except DeliveryFailed as error:
        return Probe(payload, error.message)
    except Exception as error:  # a channel's own bug: said, not raised at the operator
        return Probe(payload, f"{type(error).__name__}: {error}")
    return Probe(payload)
