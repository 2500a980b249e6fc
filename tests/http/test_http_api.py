"""The protocol over HTTP: one JSON object in, one out, with a status that tells a refusal's kind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from serving import MAX_MESSAGE_BYTES, Live, bearer


def test_a_call_answers_with_the_protocols_reply_and_echoes_the_request_id(live: Live) -> None:
    reply = live.call("agent", {"action": "list", "request_id": "r-17"})

    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == {"ok": True, "jobs": [], "request_id": "r-17"}


def test_a_refusal_keeps_the_protocols_shape(live: Live) -> None:
    reply = live.create("agent", "never", schedule={"cron": "0 0 30 2 *"})

    assert reply.status_code == 400
    assert reply.json() == {
        "ok": False,
        "error": "invalid",
        "message": "cron expression '0 0 30 2 *' can never fire: February has no 30th "
        "(L means the last day of the month)",
        "field": "schedule.cron",
    }


@pytest.mark.parametrize(
    ("request_", "status", "error"),
    [
        ({"action": "nope"}, 400, "unknown_action"),
        ({"action": "get", "name": "missing"}, 404, "not_found"),
        ({"action": "resume", "name": "taken"}, 409, "job_not_paused"),
    ],
)
def test_each_refusal_gets_its_status(live: Live, request_: dict[str, str], status: int, error: str) -> None:
    live.create("agent", "taken")

    reply = live.call("agent", request_)

    assert (reply.status_code, reply.json()["error"]) == (status, error)


def test_a_name_taken_is_a_conflict(live: Live) -> None:
    live.create("agent", "taken")

    reply = live.create("agent", "taken")

    assert (reply.status_code, reply.json()["error"]) == (409, "name_taken")


def test_a_body_that_is_not_json_gets_invalid_json(live: Live) -> None:
    reply = live.http.post("/v1/call", content=b"{nope", headers=bearer("agent"))

    assert reply.status_code == 400
    assert reply.json()["error"] == "invalid_json"


def test_a_body_over_the_limit_gets_413_before_it_is_parsed(live: Live) -> None:
    # Not JSON at all: a parsed body would be refused as invalid_json, so 413 shows it was never parsed.
    body = b"{" * (MAX_MESSAGE_BYTES + 1)

    reply = live.http.post("/v1/call", content=body, headers=bearer("agent"))

    assert reply.status_code == 413
    assert reply.json() == {
        "ok": False,
        "error": "message_too_large",
        "message": f"the message is larger than the limit of {MAX_MESSAGE_BYTES} bytes (max_message_bytes)",
    }


def test_a_streamed_body_without_a_length_is_cut_off_at_the_limit(live: Live) -> None:
    sent: list[int] = []

    def chunks() -> Iterator[bytes]:
        for _ in range(64):
            sent.append(1024)
            yield b" " * 1024

    reply = live.http.post("/v1/call", content=chunks(), headers=bearer("agent"))

    assert reply.status_code == 413
    assert reply.json()["error"] == "message_too_large"


def test_a_body_at_the_limit_is_read(live: Live) -> None:
    message = b'{"action": "list"}'
    body = message + b" " * (MAX_MESSAGE_BYTES - len(message))

    reply = live.http.post("/v1/call", content=body, headers=bearer("agent"))

    assert reply.status_code == 200


def test_the_read_routes_answer_as_the_protocol(live: Live) -> None:
    live.create("agent", "b-report")
    live.create("agent", "a-report", schedule={"every": "10m"})
    live.call("agent", {"action": "pause", "name": "b-report"})

    jobs = live.http.get("/v1/jobs", headers=bearer("agent")).json()
    active = live.http.get("/v1/jobs", params={"state": "active"}, headers=bearer("agent")).json()
    one = live.http.get("/v1/jobs/b-report", headers=bearer("agent")).json()
    runs = live.http.get("/v1/runs", params={"name": "a-report", "limit": "5"}, headers=bearer("agent"))
    status = live.http.get("/v1/status", headers=bearer("agent")).json()

    assert [job["name"] for job in jobs["jobs"]] == ["a-report", "b-report"]
    assert [job["name"] for job in active["jobs"]] == ["a-report"]
    assert (one["job"]["name"], one["job"]["state"], one["runs"]) == ("b-report", "paused", [])
    assert runs.json() == {"ok": True, "runs": []}
    assert status["counts"]["active"] == 1
    assert status["node"]["zone"] == "Europe/Berlin"


def test_jobs_come_in_pages_over_http(live: Live) -> None:
    for name in ("b-report", "a-report"):  # the agent's quota is two
        live.create("agent", name)

    first = live.http.get("/v1/jobs", params={"limit": "1"}, headers=bearer("agent")).json()
    after = {"limit": "1", "after_name": first["next_after_name"]}
    rest = live.http.get("/v1/jobs", params=after, headers=bearer("agent")).json()

    assert [job["name"] for job in first["jobs"]] == ["a-report"]
    assert first["next_after_name"] == "a-report"
    assert [job["name"] for job in rest["jobs"]] == ["b-report"]
    assert "next_after_name" not in rest


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/v1/runs", {"limit": "ten"}, "limit"),
        ("/v1/runs", {"limit": "0"}, "limit"),
        ("/v1/runs", {"job_id": "-1"}, "job_id"),
        ("/v1/jobs", {"state": "sleeping"}, "state"),
        ("/v1/jobs", {"sort": "name"}, "sort"),
        ("/v1/status", {"verbose": "1"}, "verbose"),
    ],
)
def test_a_bad_query_parameter_is_refused_by_name(
    live: Live, path: str, params: dict[str, str], field: str
) -> None:
    reply = live.http.get(path, params=params, headers=bearer("agent"))

    assert reply.status_code == 400
    assert (reply.json()["error"], reply.json()["field"]) == ("invalid", field)


def test_an_unknown_route_or_method_answers_in_the_protocols_shape(live: Live) -> None:
    missing = live.http.get("/v2/jobs", headers=bearer("agent"))
    wrong_method = live.http.delete("/v1/jobs", headers=bearer("agent"))

    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"
    assert wrong_method.status_code == 405
    assert wrong_method.json()["ok"] is False
