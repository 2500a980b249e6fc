"""The JSON protocol: one object in, one object out, for every front.

`handle` takes the raw bytes (or text) of one message and the source that sent it, and answers with
the reply object; None for an untrusted sender, which gets nothing at all.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from cronwright.errors import InvalidJson, MessageTooLarge, Refusal, StoreError, UnknownAction
from cronwright.service import Service
from cronwright.sources import Source

log = logging.getLogger("cronwright.protocol")

REQUEST_ID_LIMIT = 200
MAX_DEPTH = 32

Handler = Callable[[Service, Mapping[str, Any], Source], dict[str, Any]]

ACTIONS: dict[str, tuple[Handler, dict[str, Any]]] = {
    "create_job": (
        Service.create_job,
        {"job": {"name": "nightly-report", "target": "reports", "action": "daily",
                 "args": {"team": "ops"}, "schedule": {"cron": "0 7 * * *", "tz": "Europe/Berlin"},
                 "lifetime": "30d"}},
    ),
    "update": (Service.update, {"name": "nightly-report", "changes": {"schedule": {"cron": "30 7 * * *"}}}),
    "get": (Service.get, {"name": "nightly-report"}),
    "list": (Service.list, {"state": "active"}),
    "pause": (Service.pause, {"name": "nightly-report"}),
    "resume": (Service.resume, {"name": "nightly-report"}),
    "run_now": (Service.run_now, {"name": "nightly-report"}),
    "delete": (Service.delete, {"name": "nightly-report"}),
    "history": (Service.history, {"name": "nightly-report", "limit": 10}),
    "tick": (Service.tick, {}),
    "status": (Service.status, {}),
    "preview": (Service.preview, {"expression": "0 7 * * MON-FRI", "tz": "Europe/Berlin", "count": 3}),
    "targets": (Service.targets, {}),
}  # fmt: skip


def interface() -> dict[str, Any]:
    actions = [
        {"action": name, "example": {"action": name, **example}} for name, (_, example) in ACTIONS.items()
    ]
    actions.append({"action": "interface", "example": {"action": "interface"}})
    return {"actions": actions}


class Protocol:
    def __init__(self, service: Service, max_message_bytes: int = 65536) -> None:
        self.service = service
        self.max_message_bytes = max_message_bytes

    def handle(self, message: bytes | str, source: Source | None) -> dict[str, Any] | None:
        """Answers one message. An untrusted sender (no source) is dropped silently: None."""
        if source is None:
            return None
        raw = message.encode("utf-8", "surrogatepass") if isinstance(message, str) else message
        if len(raw) > self.max_message_bytes:
            return MessageTooLarge(
                f"the message is {len(raw)} bytes; the limit is {self.max_message_bytes} (max_message_bytes)"
            ).reply()
        try:
            request = json.loads(raw, parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as error:
            return InvalidJson(f"the message is not valid JSON: {str(error)[:200]}").reply()
        return self.dispatch(request, source)

    def dispatch(self, request: object, source: Source) -> dict[str, Any]:
        """Answers one decoded request. Every reply has `ok`, and echoes a valid `request_id`."""
        request_id: str | None = None
        try:
            if not isinstance(request, dict):
                raise InvalidJson('the message must be a JSON object such as {"action": "list"}')
            if _depth(request) > MAX_DEPTH:
                raise InvalidJson(f"the message nests deeper than {MAX_DEPTH} levels")
            request_id = _request_id(request)
            reply = self._act(request, source)
        except Refusal as refusal:
            reply = refusal.reply()
        except StoreError as error:
            log.warning("store failure: %s", error)
            reply = {
                "ok": False,
                "error": "store_unavailable",
                "message": f"the store failed: {error}; try again",
            }
        if request_id is not None:
            reply["request_id"] = request_id
        return reply

    def _act(self, request: dict[str, Any], source: Source) -> dict[str, Any]:
        action = request.get("action")
        if action == "interface":
            return {"ok": True, **interface()}
        if not isinstance(action, str) or action not in ACTIONS:
            known = ", ".join([*ACTIONS, "interface"])
            raise UnknownAction(f"unknown action {str(action)[:50]!r}; the actions are: {known}")
        handler, _ = ACTIONS[action]
        return {"ok": True, **handler(self.service, request, source)}


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _request_id(request: Mapping[str, Any]) -> str | None:
    value = request.get("request_id")
    if value is None:
        return None
    if not isinstance(value, str):
        raise Refusal("'request_id' must be a string of at most 200 bytes", field="request_id")
    if len(value.encode("utf-8", "surrogatepass")) > REQUEST_ID_LIMIT:
        raise Refusal(f"'request_id' is longer than {REQUEST_ID_LIMIT} bytes", field="request_id")
    return value


def _depth(value: object, level: int = 0) -> int:
    """How deep a decoded value nests; it stops counting past the limit, so it is cheap on hostile input."""
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level
