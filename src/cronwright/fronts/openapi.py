"""The OpenAPI 3.1 document of the HTTP API, written by hand from the contract (DESIGN: Protocol, HTTP).

A test validates it against the OpenAPI schema and checks that it names every route the app serves.
"""

from __future__ import annotations

from typing import Any

CODES = [
    "unknown_action", "invalid_json", "message_too_large", "invalid", "not_found", "name_taken",
    "target_not_allowed", "args_invalid", "immutable_field", "job_running", "job_not_paused",
    "job_not_active", "job_terminal", "at_max_concurrency", "quota_exceeded", "period_too_short",
    "lifetime_too_long", "store_unavailable",
]  # fmt: skip
ACTIONS = [
    "create_job", "update", "get", "list", "pause", "resume", "run_now", "delete", "history", "tick",
    "status", "preview", "targets", "interface",
]  # fmt: skip
STATES = ["active", "paused", "running", "expired", "done", "failed"]
OUTCOMES = ["ok", "error", "timeout", "crashed", "refused", "interrupted"]

ISO = {"type": "string", "description": "ISO-8601 with its offset, in the node zone, to the second."}
NULLABLE_ISO = {"type": ["string", "null"], "description": ISO["description"]}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(properties: dict[str, Any], required: list[str] | None = None, **more: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **more}
    if required:
        schema["required"] = required
    return schema


SCHEDULE = {
    "description": "When a job fires: a cron expression in a zone, a fixed period, or one instant.",
    "oneOf": [
        _obj({"cron": {"type": "string"}, "tz": {"type": "string"}}, ["cron"], additionalProperties=False),
        _obj(
            {"every": {"type": "string", "examples": ["5m", "PT5M"]}}, ["every"], additionalProperties=False
        ),
        _obj({"every_ms": {"type": "integer", "minimum": 1}}, ["every_ms"], additionalProperties=False),
        _obj({"at": ISO}, ["at"], additionalProperties=False),
    ],
}
SCHEDULE_ROW = {
    "description": "The schedule as stored (`every` rows show both `every` and `every_ms`).",
    "type": "object",
    "properties": {
        "cron": {"type": "string"},
        "tz": {"type": "string"},
        "every": {"type": "string"},
        "every_ms": {"type": "integer"},
        "at": ISO,
    },
}
KNOBS: dict[str, Any] = {
    "lifetime": {"type": "string", "description": "A duration (30d, 12h, P30D) or an end instant."},
    "misfire": {"type": "string", "enum": ["skip", "coalesce"]},
    "max_attempts": {"type": "integer", "minimum": 1, "maximum": 100},
    "retry_backoff_ms": {"type": "integer", "minimum": 0, "maximum": 86_400_000},
    "breaker_threshold": {"type": "integer", "minimum": 0, "maximum": 1000},
}
JOB_SPEC = _obj(
    {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"},
        "target": {"type": "string"},
        "action": {"type": "string", "description": "The target's action (not the protocol's)."},
        "args": {"type": "object"},
        "schedule": _ref("Schedule"),
        "run_at": {**ISO, "description": "The one-shot shorthand for {'at': ISO}."},
        **KNOBS,
        "dedupe_key": {"type": "string"},
        "once": {"type": "boolean"},
        "origin": {
            "type": "object",
            "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
        },
    },
    ["name", "target", "action"],
    additionalProperties=False,
)
CHANGES = _obj(
    {"name": JOB_SPEC["properties"]["name"], "args": {"type": "object"}, "schedule": _ref("Schedule"),
     "run_at": ISO, **KNOBS},
    additionalProperties=False,
    minProperties=1,
)  # fmt: skip
JOB = _obj(
    {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "target": {"type": "string"},
        "action": {"type": "string"},
        "args": {"type": "object"},
        "kind": {"type": "string", "enum": ["cron", "every", "at"]},
        "schedule": SCHEDULE_ROW,
        "state": {"type": "string", "enum": STATES},
        "paused_by": {"type": ["string", "null"]},
        "next_run_at": NULLABLE_ISO,
        # A row edited behind the service's back into an unreadable schedule (see docs/protocol.md).
        "schedule_error": {"type": ["string", "null"], "description": "Why the schedule is unreadable."},
        "ends_at": ISO,
        "last_run": {
            "oneOf": [
                {"type": "null"},
                _obj(
                    {"fire_id": {"type": "string"}, "fired_at": ISO, "attempt": {"type": "integer"},
                     "outcome": {"type": "string", "enum": OUTCOMES}, "message": {"type": "string"},
                     "took_ms": {"type": "integer"}},
                    ["fire_id", "fired_at", "attempt", "outcome", "message", "took_ms"],
                ),
            ]
        },
        "consecutive_failures": {"type": "integer"},
        "skipped": _obj({"overlap": {"type": "integer"}, "misfire": {"type": "integer"}}),
        "misfire": {"type": "string", "enum": ["skip", "coalesce"]},
        "max_attempts": {"type": "integer"},
        "retry_backoff_ms": {"type": "integer"},
        "breaker_threshold": {"type": "integer"},
        "dedupe_key": {"type": ["string", "null"]},
        "once": {"type": "boolean"},
        "origin": {"type": "object"},
        "created_by": {"type": "string", "description": "The source that created it."},
        "created_at": ISO,
        "updated_at": ISO,
    },
    ["id", "name", "target", "action", "args", "kind", "schedule", "state", "next_run_at", "ends_at",
     "last_run", "created_by"],
)  # fmt: skip
RUN = _obj(
    {
        "id": {"type": ["integer", "null"], "description": "The run's id: what `before` pages on."},
        "job_id": {"type": "integer"},
        "schedule": {"type": "string"},
        "fire_id": {"type": "string"},
        "attempt": {"type": "integer"},
        "scheduled_for": ISO,
        "started_at": ISO,
        "finished_at": ISO,
        "outcome": {"type": "string", "enum": OUTCOMES},
        "message": {"type": "string"},
        "took_ms": {"type": "integer"},
        "node": {"type": "string"},
        "output": {"type": "string"},
    },
    ["job_id", "fire_id", "attempt", "scheduled_for", "outcome"],
)
PERSISTENCE = {"type": "string", "enum": ["persisted", "degraded", "memory_only"]}
OK = {"type": "boolean", "const": True}
REQUEST_ID = {"type": "string", "maxLength": 200, "description": "Echoed in the reply; at most 200 bytes."}


def _ok(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return _obj({"ok": OK, "request_id": REQUEST_ID, **properties}, ["ok", *required])


SCHEMAS: dict[str, Any] = {
    "Schedule": SCHEDULE,
    "JobSpec": JOB_SPEC,
    "Changes": CHANGES,
    "Job": JOB,
    "Run": RUN,
    "CallRequest": _obj(
        {
            "action": {"type": "string", "enum": ACTIONS, "description": "The verb (see `interface`)."},
            "request_id": REQUEST_ID,
            "job": _ref("JobSpec"),
            "job_id": {"type": "integer", "minimum": 1},
            "name": {"type": "string"},
            "changes": _ref("Changes"),
            "state": {"type": "string", "enum": STATES},
            "target": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
            "after_name": {"type": "string"},
            "before": {"type": "integer", "minimum": 1},
            "expression": {"type": "string"},
            "tz": {"type": "string"},
            "after": ISO,
            "count": {"type": "integer", "minimum": 1, "maximum": 1000},
        },
        ["action"],
        description="One protocol message: `action` names the verb; the other fields are its own (DESIGN).",
        examples=[{"action": "list", "state": "active"}],
    ),
    "JobReply": _ok(
        {
            "job": _ref("Job"),
            "persistence": PERSISTENCE,
            "deduped": {"type": "boolean"},
            "runs": {"type": "array", "items": _ref("Run")},
        },
        ["job"],
    ),
    "JobsReply": _ok(
        {"jobs": {"type": "array", "items": _ref("Job")}, "next_after_name": {"type": "string"}}, ["jobs"]
    ),
    "RunsReply": _ok(
        {"runs": {"type": "array", "items": _ref("Run")}, "next_before": {"type": "integer"}}, ["runs"]
    ),
    "StatusReply": _ok(
        {
            "node": _obj(
                {
                    "id": {"type": "string"},
                    "now": ISO,
                    "zone": {"type": "string"},
                    "store": {"type": "string"},
                    "persistence": PERSISTENCE,
                    "peers": {"type": "array", "items": {"type": "object"}},
                }
            ),
            "counts": {
                "type": "object",
                "additionalProperties": {"type": "integer"},
                "description": "Jobs by state (for a source: its own).",
            },
            "running": {"type": "integer"},
        },
        ["node", "counts", "running"],
    ),
    "CallReply": {
        "description": "The protocol's reply: its fields depend on the action (DESIGN: Protocol).",
        "anyOf": [
            _ref("JobReply"),
            _ref("JobsReply"),
            _ref("RunsReply"),
            _ref("StatusReply"),
            _ok({}, []),
        ],
    },
    "Refusal": _obj(
        {
            "ok": {"type": "boolean", "const": False},
            "error": {"type": "string", "enum": CODES},
            "message": {"type": "string", "description": "What was wrong, and how to fix it."},
            "field": {"type": "string"},
            "state": {"type": "string"},
            "max_schedules": {"type": "integer"},
            "min_period": {"type": "string"},
            "max_lifetime": {"type": "string"},
            "request_id": REQUEST_ID,
        },
        ["ok", "error", "message"],
    ),
    "Health": _obj({"ok": OK}, ["ok"]),
}

REFUSALS = {
    "400": "A malformed request (invalid_json, invalid, unknown_action, args_invalid, immutable_field).",
    "403": "Beyond what the source may do: target_not_allowed, quota_exceeded, period_too_short, "
    "lifetime_too_long.",
    "404": "No such job that this source may see (not_found).",
    "409": "The job's state forbids it: name_taken, job_running, job_not_paused, job_not_active, "
    "job_terminal.",
    "413": "The body is over max_message_bytes (message_too_large); it was not parsed.",
    "429": "The node is at max_concurrency (at_max_concurrency); try again shortly.",
    "503": "The store failed (store_unavailable); try again.",
}


def _responses(ok: str, codes: tuple[str, ...]) -> dict[str, Any]:
    refusal = {"application/json": {"schema": _ref("Refusal")}}
    responses: dict[str, Any] = {
        "200": {"description": "Done.", "content": {"application/json": {"schema": _ref(ok)}}},
        "401": {"description": "A missing or unknown bearer token. No body, no detail."},
    }
    responses.update({code: {"description": REFUSALS[code], "content": refusal} for code in codes})
    return responses


READ_CODES = ("400", "404", "503")
ALL_CODES = tuple(REFUSALS)


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _get(operation: str, summary: str, ok: str, parameters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation,
            "summary": summary,
            "parameters": parameters,
            "responses": _responses(ok, READ_CODES),
        }
    }


PATHS: dict[str, Any] = {
    "/v1/call": {
        "post": {
            "operationId": "call",
            "summary": "Send one protocol message; the reply is the protocol's.",
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref("CallRequest")}},
            },
            "responses": _responses("CallReply", ALL_CODES),
        }
    },
    "/v1/jobs": _get(
        "listJobs",
        "The source's jobs, ordered by name (the protocol's `list`).",
        "JobsReply",
        [
            _query("state", {"type": "string", "enum": STATES}, "Only jobs in this state."),
            _query("target", {"type": "string"}, "Only jobs of this target."),
            _query(
                "limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "At most this many (a page)."
            ),
            _query(
                "after_name",
                {"type": "string"},
                "Only jobs whose name sorts after this one: the `next_after_name` of the previous page.",
            ),
        ],
    ),
    "/v1/jobs/{name}": _get(
        "getJob",
        "One job and its recent runs (the protocol's `get`).",
        "JobReply",
        [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
    ),
    "/v1/runs": _get(
        "listRuns",
        "Recent runs, newest first (the protocol's `history`).",
        "RunsReply",
        [
            _query("name", {"type": "string"}, "Only this job's runs."),
            _query("job_id", {"type": "integer", "minimum": 1}, "Only this job's runs, by id."),
            _query("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "At most this many (20)."),
            _query(
                "before",
                {"type": "integer", "minimum": 1},
                "Only runs older than the run with this id: the `next_before` of the previous page.",
            ),
        ],
    ),
    "/v1/status": _get("status", "The node, counts by state, runs in flight.", "StatusReply", []),
    "/metrics": {
        "get": {
            "operationId": "metrics",
            "summary": "Prometheus metrics: runs by outcome, run durations, skips, jobs by state, runs "
            "in flight, breaker pauses, expirations and persistence failures.",
            "responses": {
                "200": {"description": "The text exposition format.", "content": {"text/plain": {}}},
                "401": {"description": "A missing or unknown bearer token."},
            },
        }
    },
    "/healthz": {
        "get": {
            "operationId": "health",
            "summary": "Whether the server answers. Needs no token.",
            "security": [],
            "responses": {
                "200": {"description": "Up.", "content": {"application/json": {"schema": _ref("Health")}}}
            },
        }
    },
    "/openapi.json": {
        "get": {
            "operationId": "openapi",
            "summary": "This document.",
            "responses": {
                "200": {"description": "OpenAPI 3.1.", "content": {"application/json": {}}},
                "401": {"description": "A missing or unknown bearer token."},
            },
        }
    },
    "/mcp": {
        op: {
            "operationId": f"mcp_{op}",
            "summary": "MCP over streamable HTTP (JSON-RPC): the schedules_* tools, as the token's source.",
            "responses": {
                "200": {"description": "A JSON-RPC reply.", "content": {"application/json": {}}},
                "401": {"description": "A missing or unknown bearer token."},
            },
        }
        for op in ("post", "get", "delete")
    },
}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (a fresh copy, so a caller may change it)."""
    import copy

    return copy.deepcopy(
        {
            "openapi": "3.1.0",
            "info": {
                "title": "cronwright",
                "version": "1",
                "description": "The cronwright protocol over HTTP. Every route but /healthz needs a bearer "
                "token, which picks the source; a source sees and changes only its own schedules.",
            },
            "servers": [{"url": "/"}],
            "security": [{"bearer": []}],
            "paths": PATHS,
            "components": {
                "schemas": SCHEMAS,
                "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            },
        }
    )
