"""One declaration, every surface: the OpenAPI document, the MCP tools' input schemas and the service
accept and refuse the same requests, checked on a table of examples."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from cronwright.app import App
from cronwright.fronts.mcp import build_server
from cronwright.fronts.openapi import document
from serving import make_app

BASE = {"target": "reports", "action": "daily"}
# (a job's fields, whether they make a schedule): each valid one makes a schedule of its own name.
JOBS: list[tuple[dict[str, Any], bool]] = [
    ({"name": "cron", "schedule": {"cron": "0 7 * * *", "tz": "Europe/Berlin"}}, True),
    ({"name": "every", "schedule": {"every": "15m"}, "lifetime": "7d", "max_attempts": 3}, True),
    ({"name": "at", "run_at": "2026-03-03T09:00:00+01:00", "misfire": "coalesce"}, True),
    (
        {"name": "ms", "schedule": {"every_ms": 900_000}, "args": {"team": "ops"}, "origin": {"via": "t"}},
        True,
    ),
    ({"name": "keyed", "schedule": {"every": "1h"}, "dedupe_key": "k", "once": True}, True),
    ({"name": "typo", "schedule": {"every": "1h"}, "lifetme": "1h"}, False),
    ({"name": 7, "schedule": {"every": "1h"}}, False),
    ({"name": "has space", "schedule": {"every": "1h"}}, False),
    ({"name": "n1", "schedule": {"every": "1h"}, "max_attempts": "3"}, False),
    ({"name": "n2", "schedule": {"every": "1h"}, "max_attempts": 0}, False),
    ({"name": "n4", "schedule": {"every": "1h"}, "breaker_threshold": True}, False),
    ({"name": "n5", "schedule": {"every": "5m", "cron": "0 7 * * *"}}, False),
    ({"name": "n6", "schedule": {"every": "5m", "tz": "UTC"}}, False),
    ({"name": "n7", "schedule": {"jitter": "1m"}}, False),
    ({"name": "n8", "schedule": "0 7 * * *"}, False),
    ({"name": "n9", "schedule": {"every": "1h"}, "misfire": "sometimes"}, False),
    ({"name": "n10", "schedule": {"every": "1h"}, "once": "yes"}, False),
    ({"name": "n11", "schedule": {"every": "1h"}, "args": [1]}, False),
    ({"name": "n12", "schedule": {"every": "1h"}, "origin": {"a": {"b": 1}}}, False),
    ({"name": "n13", "schedule": {"every": ""}}, False),
    ({"name": "n14", "schedule": {"cron": 5}}, False),
]


def openapi_accepts(schema_name: str, value: object) -> bool:
    registry: Registry[Any] = Registry().with_resource("urn:doc", DRAFT202012.create_resource(document()))
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"urn:doc#/components/schemas/{schema_name}"}, registry=registry
    )
    return validator.is_valid(value)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    made = make_app(tmp_path)
    yield made
    made.close()


def tool_schemas_and_calls(
    app: App, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[dict[str, Any], list[bool]]:
    """The tools' input schemas, and whether each call succeeded, as an MCP client sees them."""
    source = app.config.source("other")
    errors: list[bool] = []
    schemas: dict[str, Any] = {}

    async def main() -> None:
        async with Client(build_server(app.protocol, lambda request: source)) as client:
            schemas.update({tool.name: tool.input_schema for tool in (await client.list_tools()).tools})
            for tool, arguments in calls:
                errors.append(not (await client.call_tool(tool, arguments)).is_error)

    anyio.run(main)
    return schemas, errors


def test_the_document_the_tools_and_the_service_agree_on_creates(app: App) -> None:
    specs = [{**BASE, **job} for job, _ in JOBS]
    # Each job once through the service and once through MCP (renamed, so that neither takes the other's).
    schemas, through_mcp = tool_schemas_and_calls(
        app, [("schedules_create", {**spec, "name": f"m-{spec['name']}"} if isinstance(spec["name"], str)
                                   and " " not in spec["name"] else spec) for spec in specs]
    )  # fmt: skip
    tool = jsonschema.Draft202012Validator(schemas["schedules_create"])
    source = app.config.source("other")

    for (job, valid), spec, by_mcp in zip(JOBS, specs, through_mcp, strict=True):
        request = {"action": "create_job", "job": spec}
        by_service = app.protocol.dispatch(request, source)
        seen = {
            "openapi": openapi_accepts("CreateJob", request),
            "mcp schema": tool.is_valid(spec),
            "mcp call": by_mcp,
            "service": by_service["ok"],
        }
        assert set(seen.values()) == {valid}, (job, seen, by_service)
        if not valid:
            assert by_service["error"] == "invalid" and by_service["field"], by_service


@pytest.mark.parametrize(
    ("fields", "valid"),
    [
        ({}, True),
        ({"state": "paused", "limit": 5, "after_name": "a"}, True),
        ({"stat": "paused"}, False),
        ({"state": "sleeping"}, False),
        ({"limit": 0}, False),
        ({"limit": "5"}, False),
        ({"after_name": ""}, False),
        ({"target": ["reports"]}, False),
    ],
)
def test_the_document_the_tools_and_the_service_agree_on_lists(
    app: App, fields: dict[str, Any], valid: bool
) -> None:
    schemas, (by_mcp,) = tool_schemas_and_calls(app, [("schedules_list", fields)])
    request = {"action": "list", **fields}
    seen = {
        "openapi": openapi_accepts("ListJobs", request),
        "mcp schema": jsonschema.Draft202012Validator(schemas["schedules_list"]).is_valid(fields),
        "mcp call": by_mcp,
        "service": app.protocol.dispatch(request, app.config.source("other"))["ok"],
    }

    assert set(seen.values()) == {valid}, seen


@pytest.mark.parametrize(
    ("fields", "valid"),
    [
        ({"name": "ghost"}, True),
        ({"job_id": 12}, True),
        ({}, False),
        ({"name": None}, False),
        ({"job_id": "12"}, False),
        ({"name": "ghost", "nmae": "x"}, False),
    ],
)
def test_the_document_the_tools_and_the_service_agree_on_naming_a_schedule(
    app: App, fields: dict[str, Any], valid: bool
) -> None:
    request = {"action": "get", **fields}
    reply = app.protocol.dispatch(request, app.config.source("other"))
    seen = {
        "openapi": openapi_accepts("Get", request),
        # A well-formed request for a schedule that is not there is not_found; a malformed one, invalid.
        "service": reply["error"] == "not_found",
    }

    assert set(seen.values()) == {valid}, (seen, reply)


def test_an_integral_float_is_the_one_thing_json_schema_cannot_refuse(app: App) -> None:
    """JSON Schema counts 2.0 as an integer; the contract never coerces, so the server refuses it. The
    schemas cannot say so: the surfaces that validate (the service, an MCP call) both refuse it."""
    spec = {**BASE, "name": "float", "schedule": {"every": "1h"}, "max_attempts": 2.0}
    request = {"action": "create_job", "job": spec}
    _, (by_mcp,) = tool_schemas_and_calls(app, [("schedules_create", spec)])
    reply = app.protocol.dispatch(request, app.config.source("other"))

    assert openapi_accepts("CreateJob", request)
    assert (by_mcp, reply["ok"], reply.get("field")) == (False, False, "max_attempts")
