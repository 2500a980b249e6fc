"""A notification as the protocol shows it (`notifications`), every instant in the node zone."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.core.notifications import Notification, Status
from cronwright.timing.iso import render


def delivery_row(note: Notification, zone: ZoneInfo) -> dict[str, Any]:
    job = note.payload.get("job")
    message = note.payload.get("message")
    if note.transition == "digest":
        message = f"a digest of {len(note.payload.get('items') or [])} notifications"
    return {
        "id": note.id,
        "channel": note.channel,
        "transition": note.transition,
        "state": note.status.value,
        "attempts": note.attempts,
        "created_at": render(note.created_at, zone),
        "next_attempt_at": render(note.next_attempt_at, zone) if note.status is Status.PENDING else None,
        "delivered_at": _instant(note.delivered_at, zone),
        "last_error": note.last_error,
        "digest_id": note.digest_id,
        "job": dict(job) if isinstance(job, Mapping) else None,
        "message": str(message or ""),
    }


def _instant(value: datetime | None, zone: ZoneInfo) -> str | None:
    return None if value is None else render(value, zone)
