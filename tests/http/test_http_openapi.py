"""/openapi.json: a valid OpenAPI 3.1 document that names every route, and whose schemas the replies meet.

The fuzz test sends what the document allows, and much that it does not: no input may get a 5xx.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from starlette.routing import Route

from cronwright.declare.requests import MODELS
from cronwright.fronts.http.asgi import create_app
from cronwright.fronts.openapi import document
from serving import Live, bearer, make_app


def test_the_document_is_valid_openapi_3_1(live: Live) -> None:
    reply = live.http.get("/openapi.json", headers=bearer("agent"))

    assert reply.status_code == 200
    served = reply.json()
    assert served["openapi"] == "3.1.0"
    validate(served)


ACTIONS = list(MODELS)


def test_the_document_names_every_route_and_method_the_app_serves_mcp_included(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    try:
        asgi: Any = create_app(app)
        routes = {
            (route.path, method.lower())
            for route in asgi.app.routes
            if isinstance(route, Route)
            for method in (route.methods or ())
            if method != "HEAD"
        }
    finally:
        app.close()
    documented = {(path, method) for path, item in document()["paths"].items() for method in item}

    assert routes == documented
    assert ("/mcp", "post") in documented and ("/mcp", "get") not in routes, "stateless MCP: POST only"


def test_the_mcp_envelope_is_the_sdk_s_own_schema_held_strictly(live: Live) -> None:
    """What the document says of /mcp is what the route enforces: a message its schema refuses gets a
    JSON-RPC error (400), though the SDK alone would coerce it (`"code": false` read as 0)."""
    body = document()["paths"]["/mcp"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {ref["$ref"].rsplit("/", 1)[-1] for ref in body["anyOf"]} == {
        "JSONRPCRequest", "JSONRPCNotification", "JSONRPCResponse", "JSONRPCError"
    }  # fmt: skip
    agent = {"Accept": "application/json, text/event-stream", **bearer("agent")}
    coerced = {"jsonrpc": "2.0", "id": 1, "error": {"code": False, "message": ""}}
    refused = live.http.post("/mcp", json=coerced, headers=agent)
    not_json = live.http.post("/mcp", content=b"{", headers={**agent, "Content-Type": "application/json"})
    assert refused.status_code == 400 and refused.headers["content-type"] == "application/json"
    assert refused.json()["error"]["code"] == -32600 and "error.code" in refused.json()["error"]["message"]
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == -32700


def test_call_takes_one_schema_per_action_chosen_by_its_action() -> None:
    body = document()["paths"]["/v1/call"]["post"]["requestBody"]["content"]["application/json"]["schema"]

    assert body["discriminator"]["propertyName"] == "action"
    # tick is the local operator's: refused to every source over HTTP, so the document leaves it out.
    assert set(body["discriminator"]["mapping"]) == set(MODELS) - {"tick"}
    assert len(body["oneOf"]) == len(MODELS) - 1
    create = document()["components"]["schemas"]["CreateJob"]
    assert create["additionalProperties"] is False and create["required"] == ["action", "job"]


def test_every_405_carries_an_allow_header(live: Live) -> None:
    for method, path, allowed in (
        ("GET", "/v1/call", "POST"),
        ("DELETE", "/v1/jobs", "GET"),
        ("POST", "/v1/jobs/x", "GET"),
        ("PUT", "/v1/runs", "GET"),
        ("POST", "/v1/status", "GET"),
        ("POST", "/healthz", "GET"),
    ):
        reply = live.http.request(method, path, headers=bearer("agent"))

        assert reply.status_code == 405, (method, path)
        assert allowed in reply.headers["allow"], (method, path, reply.headers)
        assert reply.json()["ok"] is False


def test_every_route_but_healthz_asks_for_the_bearer_token() -> None:
    doc = document()

    assert doc["security"] == [{"bearer": []}]
    assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    open_operations = [
        path for path, item in doc["paths"].items() for op in item.values() if op.get("security") == []
    ]
    assert open_operations == ["/healthz"]


def test_the_protocols_actions_are_the_documents() -> None:
    from cronwright.protocol import interface

    assert sorted(ACTIONS) == sorted(action["action"] for action in interface()["actions"])


def conforms(value: object, schema_name: str) -> None:
    registry: Registry[Any] = Registry().with_resource(
        "urn:cronwright", DRAFT202012.create_resource(document())
    )
    schema = {"$ref": f"urn:cronwright#/components/schemas/{schema_name}"}
    jsonschema.Draft202012Validator(schema, registry=registry).validate(value)


def test_the_replies_meet_the_documents_schemas(live: Live) -> None:
    created = live.create("agent", "report", args={"team": "ops"}).json()
    live.call("agent", {"action": "run_now", "name": "report"})
    live.app.node.wait_for_runs(30)

    conforms(created, "JobReply")
    conforms(live.http.get("/v1/jobs/report", headers=bearer("agent")).json(), "GetReply")
    conforms(live.http.get("/v1/jobs", headers=bearer("agent")).json(), "ListReply")
    conforms(live.http.get("/v1/runs", headers=bearer("agent")).json(), "HistoryReply")
    conforms(live.http.get("/v1/status", headers=bearer("agent")).json(), "StatusReply")
    conforms(live.call("agent", {"action": "targets"}).json(), "TargetsReply")
    conforms(live.call("agent", {"action": "interface"}).json(), "InterfaceReply")
    conforms(live.call("agent", {"action": "preview", "expression": "@daily"}).json(), "PreviewReply")
    conforms(live.create("agent", "report").json(), "Refused")
    conforms(live.create("agent", "x", lifetime="99d").json(), "Refused")
    conforms(live.http.get("/healthz").json(), "Health")
    conforms({"action": "create_job", "job": {"name": "n", "target": "t", "action": "a"}}, "CreateJob")


# --- fuzz ------------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
schedules = st.one_of(
    st.fixed_dictionaries({"cron": st.sampled_from(["0 7 * * *", "*/5 * * * *", "0 0 30 2 *", "nope"])}),
    st.fixed_dictionaries({"every": st.sampled_from(["5m", "1s", "10d", "x"])}),
    st.fixed_dictionaries({"at": st.sampled_from(["2026-03-03T07:00:00+01:00", "2020-01-01T00:00:00Z"])}),
    json_values,
)
jobs = st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "b", "", "x" * 101]) | json_values},
    optional={
        "target": st.sampled_from(["reports", "backup", "x"]) | json_values,
        "action": st.sampled_from(["daily", "nightly"]) | json_values,
        "schedule": schedules,
        "run_at": json_values,
        "args": json_values,
        "lifetime": st.sampled_from(["1d", "40d", "P1D", "2026-03-05T00:00:00"]) | json_values,
        "misfire": json_values,
        "max_attempts": json_values,
        "dedupe_key": json_values,
        "once": json_values,
        "origin": json_values,
    },
)
requests = st.fixed_dictionaries(
    {"action": st.sampled_from(ACTIONS) | json_values},
    optional={
        "request_id": json_values,
        "job": jobs | json_values,
        "job_id": st.integers(-2, 5) | json_values,
        "name": st.sampled_from(["a", "b"]) | json_values,
        "changes": json_values,
        "state": json_values,
        "limit": json_values,
        "expression": st.sampled_from(["0 7 * * *", "@daily", "61 * * * *"]) | json_values,
        "tz": json_values,
        "after": json_values,
        "after_name": st.sampled_from(["a", "", "\U0010ffff"]) | json_values,
        "count": json_values,
    },
)
queries = st.dictionaries(
    st.sampled_from(["name", "job_id", "limit", "after_name", "state", "target", "other"]),
    st.text(max_size=20),
    max_size=3,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests | json_values)
def test_no_call_gets_a_5xx(live: Live, request: object) -> None:
    if isinstance(request, dict) and request.get("action") == "tick":
        request = {**request, "action": "status"}  # tick is refused to sources anyway, and waits for runs
    reply = live.http.post("/v1/call", json=request, headers=bearer("agent"))

    assert reply.status_code < 500, reply.text
    assert reply.json()["ok"] is (reply.status_code == 200)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/v1/jobs", "/v1/jobs/a", "/v1/runs", "/v1/status"]), query=queries)
def test_no_read_gets_a_5xx(live: Live, path: str, query: dict[str, str]) -> None:
    reply = live.http.get(path, params=query, headers=bearer("agent"))

    assert reply.status_code < 500, reply.text


@pytest.mark.parametrize(
    "body",
    [b"", b"null", b"[]", b'"list"', b"\xff\xfe", b'{"action": NaN}', b'{"action": "list", "x": 1e999}'],
)
def test_odd_bodies_get_invalid_json(live: Live, body: bytes) -> None:
    reply = live.http.post("/v1/call", content=body, headers=bearer("agent"))

    assert reply.status_code == 400
    assert reply.json()["error"] == "invalid_json"


# Characters where readings of `\s` part: Python's str.isspace() takes the first five for spaces, an
# ASCII reading of the pattern (ECMA-262 validators, schemathesis) does not; U+FEFF the other way round.
EDGE_CHARACTERS = ["\x1d", "\x1c", "\x85", "\u3000", "\ufeff", "\x00", "x"]


def read_parameters() -> list[tuple[str, str, dict[str, Any]]]:
    """Every string query parameter of the document's reads, with its schema."""
    return [
        (path, parameter["name"], parameter["schema"])
        for path, item in document()["paths"].items()
        if "{" not in path
        for parameter in item.get("get", {}).get("parameters", [])
        if parameter["schema"].get("type") == "string" and "pattern" in parameter["schema"]
    ]


def test_a_query_value_of_one_odd_character_is_refused_exactly_when_the_document_refuses_it(
    live: Live,
) -> None:
    """One rule (issue 35, defect 14): `name=%1D` was stripped to nothing and refused as blank, while the
    document's `\\S`, read over ASCII as a validator does, admitted it."""
    parameters = read_parameters()
    assert {(path, name) for path, name, _ in parameters} >= {
        ("/v1/jobs", "target"), ("/v1/jobs", "source"), ("/v1/runs", "name"), ("/v1/audit", "name"),
        ("/v1/audit", "source"),
    }  # fmt: skip
    for path, name, schema in parameters:
        for character in EDGE_CHARACTERS:
            readings = {
                jsonschema.Draft202012Validator(schema).is_valid(character),
                re.search(schema["pattern"], character, re.ASCII) is not None,
                re.search(schema["pattern"], character) is not None,
            }
            assert len(readings) == 1, f"{path}?{name}={character!r}: the pattern reads two ways"
            reply = live.http.get(path, params={name: character}, headers=bearer("agent"))
            refused = reply.status_code == 400 and reply.json()["error"] == "invalid"
            assert refused is (readings == {False}), (path, name, character, reply.text)


def test_the_document_s_calendar_example_is_the_starter_config_s_and_an_unknown_one_is_not_a_400(
    live: Live,
) -> None:
    """The `exclude` example names a calendar the starter config (`cronwright init`) defines; on a node
    without it the request is well-formed and names what is not there: 404 `unknown_calendar`, never
    the 400 of a request the document calls malformed."""
    example = document()["components"]["schemas"]["CronSpec"]["properties"]["exclude"]["examples"][0]
    starter = tomllib.loads(resources.files("cronwright.templates").joinpath("cronwright.toml").read_text())
    assert set(example) <= set(starter["calendars"]), example

    preview = {"action": "preview", "expression": "0 7 * * MON-FRI", "exclude": example}
    reply = live.call("agent", preview)

    assert (reply.status_code, reply.json()["error"]) == (404, "unknown_calendar")
