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
    assert reply.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer wrong-token",
        "Bearer agent-secret-token-but-longer",
        "Bearer",
        "Basic YWdlbnQ6YWdlbnQtc2VjcmV0LXRva2Vu",
        "agent-secret-token",
        "Token agent-secret-token",
    ],
)
def test_a_wrong_token_gets_401_with_no_detail(live: Live, authorization: str) -> None:
    reply = live.http.post("/v1/call", json={"action": "list"}, headers={"Authorization": authorization})

    assert reply.status_code == 401
    assert reply.content == b""


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
