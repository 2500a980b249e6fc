"""The OpenAPI 3.1 document of the HTTP API, generated from the protocol's models (`cronwright.declare`).

`POST /v1/call` takes one schema per action (a oneOf with a discriminator on `action`); the read routes
take the query parameters of the action they stand for, with the same types and ranges. `POST /mcp` takes
one JSON-RPC message of MCP over streamable HTTP: the document gives its envelope and every answer the
route can give; the methods are the MCP specification's, and the tools list their own schemas
(`tools/list`).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from mcp.types import JSONRPCMessage
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from cronwright.declare import replies
from cronwright.declare.requests import MODELS, Audit, History, ListJobs
from cronwright.declare.types import NAME_PATTERN

REF = "#/components/schemas/{model}"
LOCAL_ONLY = ("tick",)

REFUSALS = {
    "400": "A malformed request (invalid_json, invalid, unknown_action, args_invalid, immutable_field).",
    "403": "Beyond what the source may do: target_not_allowed, quota_exceeded, period_too_short, "
    "lifetime_too_long.",
    "404": "No such job that this source may see (not_found), or a calendar the node does not define "
    "(unknown_calendar).",
    "409": "The job's state forbids it: name_taken, job_running, job_not_paused, job_not_active, "
    "job_not_pending, job_terminal.",
    "413": "The body is over max_message_bytes (message_too_large); it was not parsed.",
    "429": "The node is at max_concurrency (at_max_concurrency), or the source made more changes than "
    "its max_mutations_per_minute (rate_limited, with retry_after and a Retry-After header); or, with no "
    "body, too many wrong tokens from this client address (Retry-After says when it may try again).",
    "503": "The store failed (store_unavailable: nothing changed; try again), or stopped answering while a"
    " create was written (outcome_unknown: it may have landed; `get` it by name before trying again).",
}
READ_CODES = ("400", "404", "503")
# Every guarded route: a missing or wrong token, and a client past its allowance of wrong tokens.
UNAUTHORIZED = {
    "description": "A missing or unknown bearer token. No body, no detail.",
    "headers": {
        "WWW-Authenticate": {
            "description": 'RFC 6750: `Bearer realm="cronwright"`, with `error="invalid_token"` when the '
            "token given matches no source.",
            "schema": {"type": "string"},
        }
    },
}
THROTTLED = {
    "description": "Too many wrong tokens from this client address; no body. Retry-After says when it may "
    "try again. A right token is never throttled.",
    "headers": {"Retry-After": {"description": "Whole seconds.", "schema": {"type": "integer"}}},
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def _schemas() -> dict[str, Any]:
    models: list[tuple[type[BaseModel], Any]] = [(model, "validation") for model in MODELS.values()]
    answers: list[type[BaseModel]] = [*dict.fromkeys(replies.REPLIES.values()), replies.Refused]
    models += [(model, "serialization") for model in answers]
    _, top = models_json_schema(models, ref_template=REF)
    schemas: dict[str, Any] = {**top["$defs"], **_JSON_RPC["$defs"]}
    return schemas


def _refusal(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref("Refused")}}}


def _responses(ok: dict[str, Any], codes: tuple[str, ...]) -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {"description": "Done.", "content": {"application/json": {"schema": ok}}},
        "401": UNAUTHORIZED,
        "405": {
            "description": "The method is not one this route serves.",
            "headers": {"Allow": {"description": "The methods it serves.", "schema": {"type": "string"}}},
            "content": {"application/json": {"schema": _ref("Refused")}},
        },
    }
    responses.update({code: _refusal(REFUSALS[code]) for code in codes})
    responses.setdefault("429", THROTTLED)
    return responses


def _query(model: type[BaseModel], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    """The query parameters of a read route: its action's fields, as strings of the same types and ranges.

    A query string cannot say null, so each field's schema is its non-null form."""
    properties = schemas[model.__name__]["properties"]
    parameters = []
    for name, schema in properties.items():
        if name in ("action", "request_id"):
            continue
        shape = next((s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"), schema)
        described = {"description": schema.get("description", "")}
        parameters.append({"name": name, "in": "query", "required": False, "schema": shape, **described})
    return parameters


def _get(operation: str, summary: str, ok: str, parameters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation,
            "summary": summary,
            "parameters": parameters,
            "responses": _responses(_ref(ok), READ_CODES),
        }
    }


def _plain(operation: str, summary: str, content: dict[str, Any], open_route: bool = False) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": summary, "content": content}}
    if not open_route:
        responses["401"] = UNAUTHORIZED
        responses["429"] = THROTTLED
    responses["405"] = _responses({}, ())["405"]
    operation_object: dict[str, Any] = {"operationId": operation, "summary": summary, "responses": responses}
    if open_route:
        operation_object["security"] = []
    return {"get": operation_object}


def _paths(schemas: dict[str, Any]) -> dict[str, Any]:
    # `tick` is the local operator's (`cronwright tick`): every source over HTTP is refused it.
    requests = {action: _ref(model.__name__) for action, model in MODELS.items() if action not in LOCAL_ONLY}
    call = {
        "oneOf": list(requests.values()),
        "discriminator": {"propertyName": "action", "mapping": {a: r["$ref"] for a, r in requests.items()}},
    }
    reply = {"anyOf": [_ref(model.__name__) for model in dict.fromkeys(replies.REPLIES.values())]}
    return {
        "/v1/call": {
            "post": {
                "operationId": "call",
                "summary": "Send one protocol message; the reply is the protocol's.",
                "requestBody": {"required": True, "content": {"application/json": {"schema": call}}},
                "responses": _responses(reply, tuple(REFUSALS)),
            }
        },
        "/v1/jobs": _get(
            "listJobs",
            "The source's jobs, ordered by name (the protocol's `list`).",
            "ListReply",
            _query(ListJobs, schemas),
        ),
        "/v1/jobs/{name}": _get(
            "getJob",
            "One job and its recent runs (the protocol's `get`).",
            "GetReply",
            [
                {
                    "name": "name",
                    "in": "path",
                    "required": True,
                    "description": "The schedule's name.",
                    "schema": {"type": "string", "pattern": NAME_PATTERN},
                }
            ],
        ),
        "/v1/runs": _get(
            "listRuns",
            "Recent runs, newest first (the protocol's `history`).",
            "HistoryReply",
            _query(History, schemas),
        ),
        "/v1/audit": _get(
            "listAudit",
            "Who changed what, newest first (the protocol's `audit`): a source reads its own entries.",
            "AuditReply",
            _query(Audit, schemas),
        ),
        "/v1/status": _get("status", "The node, counts by state, runs in flight.", "StatusReply", []),
        "/metrics": _plain(
            "metrics",
            "Prometheus metrics in the text exposition format.",
            {"text/plain": {"schema": {"type": "string"}}},
        ),
        "/healthz": _plain(
            "health",
            "Whether the server answers. Needs no token.",
            {"application/json": {"schema": _ref("Health")}},
            open_route=True,
        ),
        "/mcp": _mcp(),
        "/openapi.json": _plain(
            "openapi", "This document.", {"application/json": {"schema": {"type": "object"}}}
        ),
    }


# MCP over streamable HTTP, stateless: one JSON-RPC 2.0 message a POST, answered in JSON. The message's
# schema is the one the MCP SDK validates it with (mcp.types.JSONRPCMessage); its methods and their params
# are the MCP specification's, and the tools' own schemas come from `tools/list`.
_JSON_RPC: dict[str, Any] = TypeAdapter(JSONRPCMessage).json_schema(ref_template=REF)
_JSON_RPC_REPLY = {"anyOf": [_ref("JSONRPCResponse"), _ref("JSONRPCError")]}


def _mcp() -> dict[str, Any]:
    reply = {"application/json": {"schema": _JSON_RPC_REPLY}}
    return {
        "post": {
            "operationId": "mcp",
            "summary": "MCP over streamable HTTP (stateless; the bearer token picks the source).",
            "description": "One JSON-RPC message: initialize, ping, tools/list or tools/call, or a "
            "notification. MCP clients send `Accept: application/json, text/event-stream`.",
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"anyOf": _JSON_RPC["anyOf"]},
                        "example": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    }
                },
            },
            "responses": {
                "200": {"description": "The response to a request, or its error.", "content": reply},
                "202": {"description": "A notification or response, accepted; no body."},
                "400": {
                    "description": "Not a JSON-RPC message: not JSON, or not of its shape.",
                    "content": {**reply, "text/plain": {"schema": {"type": "string"}}},
                },
                "401": UNAUTHORIZED,
                "405": _responses({}, ())["405"],
                "406": {"description": "The Accept header lacks application/json or text/event-stream.",
                        "content": reply},
                "413": {"description": "The body is over the node's max_message_bytes.", "content": reply},
                "415": {"description": "The body is not application/json.", "content": reply},
                "429": THROTTLED,
            },
        }
    }  # fmt: skip


@functools.cache
def _document() -> dict[str, Any]:
    schemas = _schemas()
    schemas["Health"] = {
        "type": "object",
        "properties": {"ok": {"const": True}},
        "required": ["ok"],
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "cronwright",
            "version": "1",
            "description": "The cronwright protocol over HTTP. Every route but /healthz needs a bearer "
            "token, which picks the source; a source sees and changes only its own schedules. /mcp is MCP "
            "over streamable HTTP: JSON-RPC, whose methods the MCP specification describes, and whose tools "
            "list their own input and output schemas (`tools/list`).",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": _paths(schemas),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (a fresh copy, so a caller may change it)."""
    return copy.deepcopy(_document())
