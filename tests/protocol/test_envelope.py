"""The protocol's envelope: request_id, trusted sources, size and depth limits, decoding, strict strings,
and `interface`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import Harness
from cronwright.core.sources import operator
from cronwright.protocol import ACTIONS, RequestHandler

from .support import agent, create, refused, snapshot

CONTRACT_ACTIONS = {
    "create_job", "update", "get", "list", "pause", "resume", "run_now", "delete", "history", "audit",
    "backfill", "approve", "reject", "tick", "status", "preview", "targets", "notifications", "interface",
}  # fmt: skip


# --- request_id -----------------------------------------------------------------------------------


def test_request_id_is_echoed_on_ok_replies(harness: Harness) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    for request in (
        {"action": "list"},
        {"action": "get", "name": "daily"},
        {"action": "pause", "name": "daily"},
        {"action": "interface"},
        {"action": "status"},
        create("other"),
    ):
        reply = harness.protocol.dispatch({**request, "request_id": "r-1"}, operator())
        assert reply["ok"] is True and reply["request_id"] == "r-1", reply


def test_request_id_is_echoed_through_handle(harness: Harness) -> None:
    reply = harness.protocol.handle(b'{"action": "list", "request_id": "abc"}', operator())
    assert reply == {"ok": True, "jobs": [], "request_id": "abc"}
    reply = harness.protocol.handle('{"action": "nope", "request_id": "abc"}', operator())
    assert reply is not None and (reply["error"], reply["request_id"]) == ("unknown_action", "abc")


@pytest.mark.parametrize("request_id", ["r" * 200, "é" * 100, "€" * 66 + "rr", "🙂" * 50])
def test_a_request_id_of_exactly_200_bytes_is_echoed(harness: Harness, request_id: str) -> None:
    assert len(request_id.encode()) == 200
    for request in ({"action": "list"}, {"action": "get", "name": "ghost"}):
        reply = harness.protocol.dispatch({**request, "request_id": request_id}, operator())
        assert reply["request_id"] == request_id
        text = json.dumps({**request, "request_id": request_id}, ensure_ascii=False)
        handled = harness.protocol.handle(text, operator())
        assert handled is not None and handled["request_id"] == request_id


@pytest.mark.parametrize("request_id", ["r" * 201, "é" * 100 + "r", "🙂" * 51, "x" * 10_000])
def test_a_request_id_over_200_bytes_is_refused_and_not_echoed(harness: Harness, request_id: str) -> None:
    assert len(request_id.encode()) > 200
    before = snapshot(harness)
    reply = harness.protocol.dispatch({**create("daily"), "request_id": request_id}, operator())
    assert (reply["ok"], reply["error"], reply["field"]) == (False, "invalid", "request_id")
    assert "200 bytes" in reply["message"]
    assert "request_id" not in reply, "an id that is refused is not echoed"
    assert snapshot(harness) == before, "the refused create changed nothing"


@pytest.mark.parametrize("request_id", [17, 1.5, True, ["r"], {"id": "r"}, "\ud800"])
def test_a_request_id_that_is_not_a_string_is_refused(harness: Harness, request_id: object) -> None:
    before = snapshot(harness)
    reply = harness.protocol.dispatch({**create("daily"), "request_id": request_id}, operator())
    assert (reply["ok"], reply["error"], reply["field"]) == (False, "invalid", "request_id")
    assert "request_id" not in reply
    assert snapshot(harness) == before


def test_a_null_request_id_is_none_given(harness: Harness) -> None:
    reply = harness.protocol.dispatch({"action": "list", "request_id": None}, operator())
    assert reply == {"ok": True, "jobs": []}


# --- strings are strings ----------------------------------------------------------------------------

NOT_STRINGS: list[object] = [["daily"], {"name": "daily"}, 7, 7.5, True, False]


@pytest.mark.parametrize("value", NOT_STRINGS, ids=repr)
@pytest.mark.parametrize("field", ["name", "target", "action", "dedupe_key", "misfire"])
def test_a_non_string_in_a_job_string_field_is_refused(harness: Harness, field: str, value: object) -> None:
    request = create("daily", dedupe_key="k")
    request["job"][field] = value
    reply = refused(harness, request, "invalid", field=field)
    assert "string" in reply["message"]


@pytest.mark.parametrize("value", NOT_STRINGS, ids=repr)
@pytest.mark.parametrize(
    ("base", "field"),
    [
        ({"action": "get"}, "name"),
        ({"action": "delete"}, "name"),
        ({"action": "update", "changes": {"misfire": "skip"}}, "name"),
        ({"action": "list"}, "state"),
        ({"action": "list"}, "target"),
        ({"action": "history"}, "name"),
        ({"action": "preview", "expression": "0 7 * * *"}, "tz"),
    ],
)
def test_a_non_string_in_a_request_string_field_is_refused(
    harness: Harness, base: dict[str, Any], field: str, value: object
) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    refused(harness, {**base, field: value}, "invalid", field=field)


@pytest.mark.parametrize("value", NOT_STRINGS, ids=repr)
def test_a_non_string_in_an_update_is_refused(harness: Harness, value: object) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    for change in ("name", "misfire", "lifetime"):
        update = {"action": "update", "name": "daily", "changes": {change: value}}
        refused(harness, update, "invalid", field=change)


def test_numbers_are_not_coerced_either(harness: Harness) -> None:
    refused(harness, create("daily", max_attempts="3"), "invalid", field="max_attempts")
    refused(harness, create("daily", max_attempts=True), "invalid", field="max_attempts")
    refused(harness, create("daily", max_attempts=2.0), "invalid", field="max_attempts")
    refused(harness, {"action": "get", "job_id": "1"}, "invalid", field="job_id")
    refused(harness, create("daily", once="yes", dedupe_key="k"), "invalid", field="once")


# --- who may ask ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        b'{"action": "list"}',
        '{"action": "create_job", "job": {"name": "x", "target": "reports", "action": "daily",'
        ' "schedule": {"every": "5m"}}}',
        b'{"action": "nope"}',
        b"{not json",
        b"\xff" * 10,
        b" " * 200_000,
        "",
    ],
)
def test_an_untrusted_sender_gets_nothing(harness: Harness, message: bytes | str) -> None:
    before = snapshot(harness)
    assert harness.protocol.handle(message, None) is None
    assert snapshot(harness) == before


def test_a_configured_source_is_trusted(harness: Harness) -> None:
    reply = harness.protocol.handle(b'{"action": "list", "request_id": "a"}', agent())
    assert reply == {"ok": True, "jobs": [], "request_id": "a"}


# --- sizes, depth and what JSON is ------------------------------------------------------------------


def test_the_size_limit_counts_bytes(harness: Harness) -> None:
    protocol = RequestHandler(harness.service, max_message_bytes=1024)
    exact = b'{"action": "list"}'.ljust(1024)
    assert protocol.handle(exact, operator()) == {"ok": True, "jobs": []}
    reply = protocol.handle(exact + b" ", operator())
    assert reply is not None and reply["error"] == "message_too_large"
    assert "1025" in reply["message"] and "1024" in reply["message"]
    # 600 characters, but 1200 bytes.
    reply = protocol.handle('{"action": "list", "request_id": "' + "é" * 600 + '"}', operator())
    assert reply is not None and reply["error"] == "message_too_large"


def test_an_oversized_create_changes_nothing(harness: Harness) -> None:
    before = snapshot(harness)
    request = create("big", args={"blob": "x" * 70_000})
    reply = harness.protocol.handle(json.dumps(request), operator())
    assert reply is not None and reply["error"] == "message_too_large"
    assert snapshot(harness) == before


def test_deep_nesting_is_refused_cleanly(harness: Harness) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for message in (deep, '{"action": "list", "x": ' + deep + "}"):
        reply = RequestHandler(harness.service, max_message_bytes=1_000_000).handle(message, operator())
        assert reply is not None and reply["error"] == "invalid_json", reply
    # The same, decoded already (a Python caller): refused without recursing 100000 levels.
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    before = snapshot(harness)
    reply = refused(harness, create("deep", args={"x": nested}), "invalid_json")
    assert "deeper" in reply["message"]
    assert snapshot(harness) == before
    # Modest nesting is fine.
    shallow: dict[str, Any] = {"leaf": 1}
    for _ in range(10):
        shallow = {"inner": shallow}
    assert harness.call("create_job", job=create("shallow", args=shallow)["job"])["ok"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_non_finite_numbers_are_not_json(harness: Harness, literal: str) -> None:
    message = '{"action": "create_job", "job": {"name": "x", "target": "reports", "action": "daily",'
    message += ' "schedule": {"every": "5m"}, "args": {"ratio": ' + literal + "}}}"
    before = snapshot(harness)
    reply = harness.protocol.handle(message, operator())
    assert reply is not None and reply["error"] == "invalid_json", reply
    assert snapshot(harness) == before


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_from_a_python_caller_are_refused(harness: Harness, value: float) -> None:
    """dispatch takes a decoded request; one that JSON could not carry is refused, never stored."""
    refused(harness, create("x", args={"ratio": value}), "invalid_json")
    refused(harness, create("x", origin={"ratio": value}), "invalid_json")
    refused(harness, {"action": "history", "limit": value}, "invalid_json")


def test_lone_surrogates_are_not_text(harness: Harness) -> None:
    """JSON's \\ud800 escape decodes to a lone surrogate, which no store or reply can encode as UTF-8."""
    for request in (
        {"action": "list", "state": "\ud800"},
        {"action": "get", "name": "\udfff"},
        create("x", args={"note": "a\ud800b"}),
        create("x", dedupe_key="\ud83d"),
        create("x", origin={"\ud800": "key"}),
    ):
        refused(harness, request, "invalid_json")
        message = json.dumps({**request, "request_id": "s"})  # ensure_ascii: the escape, as a wire has it
        reply = harness.protocol.handle(message, operator())
        assert reply is not None and (reply["error"], reply["request_id"]) == ("invalid_json", "s"), reply
    # A real astral character, escaped as its surrogate pair, is fine.
    reply = harness.protocol.handle('{"action": "get", "name": "\\ud83d\\ude42"}', operator())
    assert reply is not None and reply["error"] == "not_found"


def test_values_of_no_json_type_are_refused(harness: Harness) -> None:
    refused(harness, create("x", args={"when": object()}), "invalid_json")
    refused(harness, create("x", args={"pair": (1, 2)}), "invalid_json")
    # The ignore below is kept: deliberate misuse, a key that is not a string (an in-process caller's).
    refused(harness, {"action": "list", 3: "three"}, "invalid_json")  # type: ignore[dict-item]


# --- interface --------------------------------------------------------------------------------------


def test_interface_lists_every_action_with_an_example(harness: Harness) -> None:
    reply = harness.ok("interface")
    listed = {entry["action"]: entry["example"] for entry in reply["actions"]}
    assert set(listed) == CONTRACT_ACTIONS
    assert set(ACTIONS) | {"interface"} == CONTRACT_ACTIONS
    for action, example in listed.items():
        assert example["action"] == action
        json.dumps(example, allow_nan=False)


def test_every_interface_example_is_accepted_as_is(harness: Harness) -> None:
    """In the order listed, on a fresh node, each example does what it says: none is malformed."""
    examples = [entry["example"] for entry in harness.ok("interface")["actions"]]
    for example in examples:
        reply = harness.protocol.handle(json.dumps(example), operator())
        assert reply is not None
        assert reply.get("error") not in ("unknown_action", "invalid_json", "invalid", "args_invalid"), (
            example,
            reply,
        )
        harness.node.wait_for_runs()
    by_action = {example["action"]: example for example in examples}
    # Each example on its own, on a store where it names nothing, is refused only for its state.
    for action in ("get", "update", "pause", "resume", "run_now", "delete"):
        reply = harness.protocol.dispatch(by_action[action], operator())
        assert reply["error"] == "not_found", reply


# --- null ---------------------------------------------------------------------------------------------


def test_a_null_lifetime_in_an_update_never_extends_a_life(harness: Harness) -> None:
    """A null is no lifetime: it is refused, or leaves the end alone. Either way the life is not renewed."""
    ends_at = harness.create("daily", {"cron": "0 10 * * *"}, lifetime="1d")["ends_at"]
    reply = harness.call("update", name="daily", changes={"lifetime": None, "misfire": "coalesce"})
    if reply["ok"]:
        assert reply["job"]["ends_at"] == ends_at
    else:
        assert (reply["error"], reply["field"]) == ("invalid", "lifetime")
    assert harness.job("daily")["ends_at"] == ends_at
