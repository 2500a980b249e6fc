"""The HTTP status of a protocol reply: one table, shared by the API and the dashboard."""

from __future__ import annotations

from typing import Any

STATUS = {
    "invalid_json": 400,
    "invalid": 400,
    "unknown_action": 400,
    "args_invalid": 400,
    "immutable_field": 400,
    "target_not_allowed": 403,
    "quota_exceeded": 403,
    "period_too_short": 403,
    "lifetime_too_long": 403,
    "not_found": 404,
    # Well-formed, naming what this node does not define: like not_found, not a malformed request.
    "unknown_calendar": 404,
    "name_taken": 409,
    "job_running": 409,
    "job_not_paused": 409,
    "job_not_active": 409,
    "job_not_pending": 409,
    "job_terminal": 409,
    "message_too_large": 413,
    "at_max_concurrency": 429,
    "rate_limited": 429,
    "store_unavailable": 503,
    "outcome_unknown": 503,
}

Reply = dict[str, Any]


def status_of(reply: Reply) -> int:
    if reply.get("ok"):
        return 200
    return STATUS.get(str(reply.get("error")), 400)
