"""The JSON protocol: one object in, one object out, for every front.

`handle` takes the raw bytes (or text) of one message and the source that sent it, and answers with
the reply object; None for an untrusted sender, which gets nothing at all.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from cronwright.core.sources import Source
from cronwright.declare.refusals import refusal
from cronwright.declare.requests import MODELS, example
from cronwright.errors import (
    InvalidJson,
    MessageTooLarge,
    OutcomeUnknown,
    Refusal,
    StoreCorrupt,
    StoreError,
    UnknownAction,
)
from cronwright.service import backfilling, lifecycle, reads
from cronwright.service.mutation_rate import MUTATIONS, MutationLimiter
from cronwright.service.operations import Service

log = logging.getLogger("cronwright.protocol")

REQUEST_ID_LIMIT = 200
MAX_DEPTH = 32

# An operation takes the request as its action's model (`MODELS[action]`) validated it: a mapping from
# each action to a function of that action's own model cannot be spelled in one dict type, hence `Any`.
Handler = Callable[[Service, Any, Source], dict[str, Any]]

# The service's operation for each action (but `interface`, which the protocol answers itself). Each
# request is validated with its model in `cronwright.declare.requests` first, and handed over as it is.
ACTIONS: dict[str, Handler] = {
    "create_job": Service.create_job,
    "update": Service.update,
    "get": reads.get,
    "list": reads.list_jobs,
    "pause": lifecycle.pause,
    "resume": lifecycle.resume,
    "run_now": lifecycle.run_now,
    "delete": lifecycle.delete,
    "history": reads.history,
    "audit": reads.audit,
    "backfill": backfilling.backfill,
    "approve": lifecycle.approve,
    "reject": lifecycle.reject,
    "tick": lifecycle.tick,
    "status": reads.status,
    "preview": reads.preview,
    "targets": reads.targets,
    "notifications": reads.notifications,
}


def interface() -> dict[str, Any]:
    return {"actions": [{"action": name, "example": example(name)} for name in MODELS]}


class RequestHandler:
    """Answers the protocol's messages for every front: decodes, bounds, validates each request with its
    action's model, and hands it to the service's operation."""

    def __init__(self, service: Service, max_message_bytes: int = 65536) -> None:
        self.service = service
        self.max_message_bytes = max_message_bytes
        self.mutations = MutationLimiter(service.node.clock)

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
            request = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
        except (ValueError, RecursionError) as error:
            return InvalidJson(f"the message is not valid JSON: {str(error)[:200]}").reply()
        return self.dispatch(request, source)

    def dispatch(self, request: object, source: Source) -> dict[str, Any]:
        """Answers one decoded request. Every reply has `ok`, and echoes a valid `request_id`."""
        request_id: str | None = None
        try:
            if not isinstance(request, dict):
                raise InvalidJson('the message must be a JSON object such as {"action": "list"}')
            # The request_id first, so that every refusal of an object, even of a hostile one, echoes it.
            request_id = _request_id(request)
            problem = _not_json(request)
            if problem is not None:
                raise InvalidJson(problem)
            reply = self._act(request, source)
        except Refusal as refusal:
            reply = refusal.reply()
        except OutcomeUnknown as error:
            log.warning("a write of unknown outcome: %s", error)
            reply = {"ok": False, "error": "outcome_unknown", "message": str(error)}
        except StoreError as error:
            log.warning("store failure: %s", error)
            # A damaged store stays damaged: "try again" would send the caller round in circles.
            advice = "restore it from a backup" if isinstance(error, StoreCorrupt) else "try again"
            reply = {
                "ok": False,
                "error": "store_unavailable",
                "message": f"the store failed: {error}; {advice}",
            }
        if request_id is not None:
            reply["request_id"] = request_id
        return reply

    def _act(self, request: dict[str, Any], source: Source) -> dict[str, Any]:
        action = request.get("action")
        if isinstance(action, str) and action in MUTATIONS:
            # Before any check: a source looping on refused changes costs the node as much as on real ones.
            self.mutations.take(source)
        if not isinstance(action, str) or action not in MODELS:
            known = ", ".join(MODELS)
            meant = difflib.get_close_matches(str(action)[:50], MODELS, n=1)
            hint = f"; did you mean {meant[0]!r}?" if meant else ""
            raise UnknownAction(f"unknown action {str(action)[:50]!r}{hint}; the actions are: {known}")
        model = MODELS[action]
        try:
            # The model checks the request's shape; the service, what its values mean.
            validated = model.model_validate(request)
        except ValidationError as error:
            raise refusal(error, model, f"a `{action}` request") from None
        if action == "interface":
            return {"ok": True, **interface()}
        return {"ok": True, **ACTIONS[action](self.service, validated, source)}


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    # 1e999 would become inf: not JSON either, and no reply could carry it back.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _request_id(request: Mapping[str, Any]) -> str | None:
    value = request.get("request_id")
    if value is None:
        return None
    if not isinstance(value, str):
        raise Refusal("'request_id' must be a string of at most 200 bytes", field="request_id")
    if _SURROGATE.search(value):
        raise Refusal("'request_id' must be Unicode text: it holds a lone surrogate", field="request_id")
    if len(value.encode("utf-8")) > REQUEST_ID_LIMIT:
        raise Refusal(f"'request_id' is longer than {REQUEST_ID_LIMIT} bytes", field="request_id")
    return value


# A lone UTF-16 surrogate: JSON's "\ud800" escape decodes to one, but it is not Unicode text, and no
# store, log or reply could encode it as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT_LIMIT = 10**4000


def _not_json(value: object, level: int = 0) -> str | None:
    """What makes a decoded request more than plain JSON, or None: nesting past MAX_DEPTH, a lone
    surrogate in a string, a number that is not finite (NaN, from a Python caller) or an integer too long
    to print, a key that is not a string, or a value of no JSON type. It stops at the first problem, so
    it is cheap on hostile input."""
    if level > MAX_DEPTH:
        return f"the message nests deeper than {MAX_DEPTH} levels"
    if isinstance(value, str):
        if _SURROGATE.search(value):
            return "the message holds a lone surrogate (such as \\ud800), which is not Unicode text"
        return None
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        # Python neither prints nor parses integers past 4300 digits (sys.int_info): one that only an
        # in-process caller can pass would fail every refusal, row and store write that shows it.
        return (
            None
            if -_INT_LIMIT < value < _INT_LIMIT
            else "an integer of more than 4000 digits is out of range"
        )
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return "every key of a JSON object is a string"
            problem = _not_json(key, level + 1) or _not_json(item, level + 1)
            if problem is not None:
                return problem
        return None
    if isinstance(value, list):
        for item in value:
            problem = _not_json(item, level + 1)
            if problem is not None:
                return problem
        return None
    return f"a {type(value).__name__} is not a JSON value"
