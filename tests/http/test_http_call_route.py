"""`POST /v1/call` answered around Starlette (call_route.py): the same reply, byte for byte, as the
Starlette route's JSONResponse gave, a bare 500 for a crash, and nothing for a client that left."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.responses import JSONResponse
from starlette.types import Message

from cronwright.core.sources import Source
from cronwright.fronts.http.call_route import CallRoute, rendered
from cronwright.fronts.http.statuses import status_of

SOURCE = Source(name="agent")
KEY = "cronwright.source"


@pytest.mark.parametrize(
    "reply",
    [
        {"ok": True, "job": {"name": "ünïcode ✓", "id": 7}, "request_id": "r-1"},
        {"ok": False, "error": "rate_limited", "message": "slow down", "retry_after": 3},
        {"ok": False, "error": "name_taken", "message": "a job named 'x' exists"},
    ],
)
def test_a_reply_is_rendered_as_jsonresponse_renders_it(reply: dict[str, Any]) -> None:
    retry_after = reply.get("retry_after")
    headers = {"Retry-After": str(retry_after)} if isinstance(retry_after, int) else None
    expected = JSONResponse(reply, status_code=status_of(reply), headers=headers)

    assert rendered(reply) == (expected.status_code, expected.raw_headers, expected.body)


def exchange(
    route: CallRoute,
    body: list[Message],
    headers: list[tuple[bytes, bytes]] | None = None,
    sent: list[Message] | None = None,
) -> list[Message]:
    """What the route sends (into `sent`, if given) for a request whose body arrives as `body`."""
    scope = {"type": "http", "method": "POST", "path": "/v1/call", "headers": headers or [], KEY: SOURCE}
    arriving = iter(body)
    sent = [] if sent is None else sent

    async def receive() -> Message:
        return next(arriving)

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(route(scope, receive, send))
    return sent


def test_the_body_is_handed_to_the_protocol_whole_with_the_scopes_source() -> None:
    seen: list[tuple[bytes, Source]] = []

    def handle(body: bytes, source: Source) -> dict[str, Any]:
        seen.append((body, source))
        return {"ok": True}

    parts: list[Message] = [
        {"type": "http.request", "body": b'{"action":', "more_body": True},
        {"type": "http.request", "body": b'"list"}', "more_body": False},
    ]
    sent = exchange(CallRoute(handle, 4096, KEY), parts)

    assert seen == [(b'{"action":"list"}', SOURCE)]
    assert [message["type"] for message in sent] == ["http.response.start", "http.response.body"]
    assert (sent[0]["status"], sent[1]["body"]) == (200, b'{"ok":true}')


def test_a_body_over_the_limit_is_refused_unread_by_the_protocol() -> None:
    def handle(body: bytes, source: Source) -> dict[str, Any]:
        raise AssertionError("a body over the limit reached the protocol")

    declared = exchange(CallRoute(handle, 10, KEY), [], headers=[(b"content-length", b"11")])
    streamed = exchange(CallRoute(handle, 10, KEY), [{"type": "http.request", "body": b"x" * 11}])

    for sent in (declared, streamed):
        assert sent[0]["status"] == 413
        assert b'"error":"message_too_large"' in sent[1]["body"]


def test_a_client_that_left_before_its_body_gets_no_answer_and_runs_nothing() -> None:
    def handle(body: bytes, source: Source) -> dict[str, Any]:
        raise AssertionError("the protocol ran for a client that had left")

    assert exchange(CallRoute(handle, 4096, KEY), [{"type": "http.disconnect"}]) == []


def test_a_crash_answers_a_bare_500_and_is_raised_for_the_servers_log() -> None:
    def handle(body: bytes, source: Source) -> dict[str, Any]:
        raise RuntimeError("secret detail")

    sent: list[Message] = []
    with pytest.raises(RuntimeError, match="secret detail"):
        exchange(CallRoute(handle, 4096, KEY), [{"type": "http.request", "body": b"{}"}], sent=sent)

    assert sent[0]["status"] == 500
    assert sent[1]["body"] == (
        b'{"ok":false,"error":"internal","message":"the server failed on this request; see its log"}'
    )
    assert b"secret" not in sent[1]["body"]
