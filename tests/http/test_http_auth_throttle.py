"""Wrong tokens and failed logins are throttled per client address (issue 35, defect 2): over /v1/call,
/mcp and the dashboard's login form, a client's 11th wrong token in a row gets 429 with Retry-After, not
401; its allowance comes back with time (the node's clock: a ManualClock here, never a sleep). A right
token is never throttled, from any address, and another client keeps its own allowance. Failures are
counted in `cronwright_auth_failures_total` and logged.

Real uvicorn on loopback; "another client" connects from 127.0.0.2, a second loopback address.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest

from cronwright.clock import ManualClock
from cronwright.fronts.http.throttle import FAILURE_BURST
from serving import TOKENS, Live, bearer

WRONG = {"Authorization": "Bearer not-the-token"}
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def elsewhere(live: Live) -> Iterator[httpx.Client]:
    """A client of the same server from another address (127.0.0.2)."""
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=live.url, transport=transport, timeout=30) as client:
        yield client


def clock(live: Live) -> ManualClock:
    found = live.app.node.clock
    assert isinstance(found, ManualClock)
    return found


def statuses(replies: list[httpx.Response]) -> list[int]:
    return [reply.status_code for reply in replies]


def failures(live: Live) -> dict[tuple[str, str], float]:
    """cronwright_auth_failures_total's series, by (front, answer), read from /metrics."""
    text = live.http.get("/metrics", headers=bearer("agent")).text
    found: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        if line.startswith("cronwright_auth_failures_total{"):
            labels, value = line.removeprefix("cronwright_auth_failures_total{").split("} ")
            pairs = dict(pair.split("=") for pair in labels.split(","))
            found[(pairs["front"].strip('"'), pairs["answer"].strip('"'))] = float(value)
    return found


def test_thirty_wrong_tokens_get_ten_401s_then_429_with_retry_after(live: Live) -> None:
    replies = [live.http.post("/v1/call", json={"action": "list"}, headers=WRONG) for _ in range(30)]

    assert statuses(replies) == [401] * FAILURE_BURST + [429] * (30 - FAILURE_BURST)
    assert replies[-1].headers["retry-after"] == "6"  # 10 failures a minute: one every 6 s
    assert replies[-1].content == b""  # still no detail for a caller nobody knows
    assert failures(live)[("api", "401")] == 10
    assert failures(live)[("api", "429")] == 20


def test_a_forwarded_for_header_never_buys_a_fresh_allowance(live: Live) -> None:
    # Any caller can set X-Forwarded-For: a guesser naming a new address each time stays throttled.
    replies = [
        live.http.post(
            "/v1/call", json={"action": "list"}, headers={**WRONG, "X-Forwarded-For": f"203.0.113.{number}"}
        )
        for number in range(FAILURE_BURST + 5)
    ]
    assert statuses(replies) == [401] * FAILURE_BURST + [429] * 5


def test_the_allowance_comes_back_with_time_on_the_nodes_clock(live: Live) -> None:
    for _ in range(FAILURE_BURST + 1):
        live.http.post("/v1/call", json={"action": "list"}, headers=WRONG)

    clock(live).advance(timedelta(seconds=6))
    after_six = [live.http.post("/v1/call", json={"action": "list"}, headers=WRONG) for _ in range(2)]
    clock(live).advance(timedelta(minutes=1))
    after_a_minute = [live.http.post("/v1/call", json={"action": "list"}, headers=WRONG) for _ in range(11)]

    assert statuses(after_six) == [401, 429]
    assert statuses(after_a_minute) == [401] * 10 + [429]


def test_a_right_token_is_never_throttled_and_another_client_keeps_its_allowance(
    live: Live, elsewhere: httpx.Client
) -> None:
    for _ in range(30):
        live.http.post("/v1/call", json={"action": "list"}, headers=WRONG)

    right_here = live.http.post("/v1/call", json={"action": "list"}, headers=bearer("agent"))
    right_elsewhere = elsewhere.post("/v1/call", json={"action": "list"}, headers=bearer("agent"))
    wrong_elsewhere = elsewhere.post("/v1/call", json={"action": "list"}, headers=WRONG)
    still_throttled = live.http.post("/v1/call", json={"action": "list"}, headers=WRONG)

    assert right_here.status_code == 200 and right_here.json()["ok"] is True
    assert right_elsewhere.status_code == 200
    assert wrong_elsewhere.status_code == 401
    assert still_throttled.status_code == 429


def test_no_token_at_all_guesses_nothing_and_is_not_counted(live: Live) -> None:
    replies = [live.http.post("/v1/call", json={"action": "list"}) for _ in range(30)]

    assert statuses(replies) == [401] * 30
    assert failures(live)[("api", "401")] == 0


def test_mcp_and_the_api_share_the_clients_allowance(live: Live) -> None:
    headers = {**WRONG, **MCP_HEADERS}
    over_mcp = [live.http.post("/mcp", json=MCP_LIST, headers=headers) for _ in range(FAILURE_BURST)]
    then_api = live.http.post("/v1/call", json={"action": "list"}, headers=WRONG)
    then_mcp = live.http.post("/mcp", json=MCP_LIST, headers=headers)
    right = live.http.post("/mcp", json=MCP_LIST, headers={**bearer("agent"), **MCP_HEADERS})

    assert statuses(over_mcp) == [401] * FAILURE_BURST
    assert then_api.status_code == 429 and then_mcp.status_code == 429
    assert int(then_mcp.headers["retry-after"]) > 0
    assert right.status_code == 200
    assert failures(live)[("mcp", "401")] == 10 and failures(live)[("mcp", "429")] == 1


def test_wrong_tokens_on_the_dashboards_login_form_are_throttled_too(
    live: Live, elsewhere: httpx.Client
) -> None:
    origin = {"Origin": live.url}
    replies = [
        live.http.post("/ui/login", data={"token": "not-the-token"}, headers=origin) for _ in range(30)
    ]
    right_elsewhere = elsewhere.post(
        "/ui/login", data={"token": TOKENS["agent"]}, headers=origin, follow_redirects=False
    )
    right_here = live.http.post(
        "/ui/login", data={"token": TOKENS["agent"]}, headers=origin, follow_redirects=False
    )

    assert statuses(replies) == [401] * FAILURE_BURST + [429] * (30 - FAILURE_BURST)
    assert replies[-1].headers["retry-after"] == "6"
    assert "try again in 6 s" in replies[-1].text
    assert right_elsewhere.status_code == 303 and "set-cookie" in right_elsewhere.headers
    assert right_here.status_code == 303
    assert failures(live)[("dashboard", "429")] == 20


def test_each_wrong_token_is_logged_and_a_throttled_client_once(
    live: Live, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="cronwright.auth"):
        for _ in range(30):
            live.http.post("/v1/call", json={"action": "list"}, headers=WRONG)

    said = [record.getMessage() for record in caplog.records if record.name == "cronwright.auth"]
    assert said == ["a wrong token from 127.0.0.1 (api)"] * 10 + [
        "127.0.0.1 is throttled: too many wrong tokens (api); retry after 6 s"
    ]
    # `fields` is the record's extra (telemetry/logs.py `say`): set on the record, not declared by LogRecord.
    assert vars(caplog.records[-1])["fields"] == {"client": "127.0.0.1", "front": "api", "retry_after": 6}
