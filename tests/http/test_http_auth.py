"""Bearer tokens pick the source; anything else gets 401 with no detail (DESIGN: HTTP and MCP)."""

from __future__ import annotations

import pytest

from serving import Live, bearer

GUARDED = [
    ("GET", "/v1/jobs"),
    ("GET", "/v1/jobs/anything"),
    ("GET", "/v1/runs"),
    ("GET", "/v1/status"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("POST", "/v1/call"),
    ("POST", "/mcp"),
    ("GET", "/no-such-route"),
]


@pytest.mark.parametrize(("method", "path"), GUARDED)
def test_a_missing_token_gets_401_with_no_detail(live: Live, method: str, path: str) -> None:
    reply = live.http.request(method, path, json={"action": "list"})

    assert reply.status_code == 401
    assert reply.content == b""
    # RFC 6750, 3.1: no token at all gets the scheme and realm, and no error code.
    assert reply.headers["www-authenticate"] == 'Bearer realm="cronwright"'


@pytest.mark.parametrize(
    ("authorization", "challenge"),
    [
        ("Bearer wrong-token", 'Bearer realm="cronwright", error="invalid_token"'),
        ("Bearer agent-secret-token-but-longer", 'Bearer realm="cronwright", error="invalid_token"'),
        ("bearer wrong-token", 'Bearer realm="cronwright", error="invalid_token"'),
        ("Bearer", 'Bearer realm="cronwright", error="invalid_request"'),
        ("Basic YWdlbnQ6YWdlbnQtc2VjcmV0LXRva2Vu", 'Bearer realm="cronwright"'),
        ("agent-secret-token", 'Bearer realm="cronwright"'),
        ("Token agent-secret-token", 'Bearer realm="cronwright"'),
    ],
)
def test_a_wrong_token_gets_401_with_the_rfc_6750_challenge_and_no_body(
    live: Live, authorization: str, challenge: str
) -> None:
    """A wrong bearer token says `invalid_token` (RFC 6750, 3.1), so an MCP client reports a wrong token
    rather than start OAuth; a request with no bearer token at all gets no error code."""
    for path in ("/v1/call", "/mcp"):
        reply = live.http.post(path, json={"action": "list"}, headers={"Authorization": authorization})

        assert reply.status_code == 401
        assert reply.content == b""
        assert reply.headers["www-authenticate"] == challenge


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
    ],
)
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", "Bearer agent-secret-token"])
def test_the_oauth_discovery_paths_are_not_found_with_or_without_a_token(
    live: Live, path: str, authorization: str | None
) -> None:
    """The node serves no OAuth: an MCP client that looks for its metadata finds none (404), rather than
    a 401 that reads as "authorize first" and sends it into dynamic client registration."""
    headers = {"Authorization": authorization} if authorization else {}
    reply = live.http.get(path, headers=headers)

    assert reply.status_code == 404
    assert reply.json()["error"] == "not_found"
    assert "Authorization: Bearer <token>" in reply.json()["message"]
    assert "www-authenticate" not in reply.headers


def test_healthz_answers_without_a_token(live: Live) -> None:
    reply = live.http.get("/healthz")

    assert reply.status_code == 200
    assert reply.json() == {"ok": True}


def test_a_known_token_acts_as_its_source(live: Live) -> None:
    reply = live.create("agent", "morning-report")

    assert reply.status_code == 200
    job = reply.json()["job"]
    assert job["created_by"] == "agent"
    assert job["origin"] == {"source": "agent"}


def test_a_source_without_targets_may_schedule_nothing(live: Live) -> None:
    reply = live.create("nobody", "sneaky")

    assert reply.status_code == 403
    assert reply.json() == {
        "ok": False,
        "error": "target_not_allowed",
        "message": "source 'nobody' may not schedule reports.daily; `targets` lists what it may",
    }
    assert live.app.service.store.find("sneaky") is None


def test_a_source_may_not_schedule_a_target_outside_its_patterns(live: Live) -> None:
    reply = live.create("agent", "backup", target="backup", action="nightly", args={"dest": "/tmp"})

    assert reply.status_code == 403
    assert reply.json()["error"] == "target_not_allowed"


def test_a_source_sees_only_the_targets_it_may_use(live: Live) -> None:
    mine = live.http.post("/v1/call", json={"action": "targets"}, headers=bearer("agent")).json()
    none = live.http.post("/v1/call", json={"action": "targets"}, headers=bearer("nobody")).json()

    assert [t["target"] for t in mine["targets"]] == ["reports"]
    assert none == {"ok": True, "targets": []}


def test_a_source_may_not_run_a_pass(live: Live) -> None:
    reply = live.call("agent", {"action": "tick"})

    assert reply.status_code == 400
    assert reply.json()["field"] == "action"
