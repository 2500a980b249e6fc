"""Arbitrary JSON values and bytes thrown at the protocol: every reply is well-formed, nothing raises, and
a refused request leaves the store exactly as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.sources import Source, operator
from cronwright.declare.job_fields import Changes, CronSpec, EveryMsSpec, EverySpec, JobSpec
from cronwright.protocol import ACTIONS
from cronwright.store.sqlite import SqliteStore

from .support import agent, snapshot

ACTION_NAMES = [*ACTIONS, "interface"]
# The keys a job, a change and a schedule have, as the request models declare them.
JOB_FIELDS = set(JobSpec.model_fields)
MUTABLE = set(Changes.model_fields)
SCHEDULE_KEYS = {*CronSpec.model_fields, *EverySpec.model_fields, *EveryMsSpec.model_fields, "at"}
REQUEST_KEYS = [
    "action", "request_id", "job", "job_id", "name", "changes", "state", "target", "limit", "expression",
    "tz", "after", "after_name", "count",
]  # fmt: skip
KEYS = sorted({*REQUEST_KEYS, *JOB_FIELDS, *MUTABLE, *SCHEDULE_KEYS, "id", "created_by"})
# Values that mean something somewhere, so that the fuzz reaches past the first check now and then.
MEANINGFUL = [
    "daily", "weekly", "reports", "backup", "nightly", "seeded", "other", "k", "skip", "coalesce", "active",
    "paused", "0 10 * * *", "*/5 * * * *", "0 0 30 2 *", "@daily", "Europe/Berlin", "5m", "1m", "30d", "91d",
    "P30D", "2026-03-02T09:30:00+01:00", "2026-03-01T00:00:00Z", "", "\ud800", "a\udfffb",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=30),
    # Lone surrogates too: JSON's \ud800 escape decodes to one.
    st.text(st.characters(exclude_categories=()), max_size=5),
    st.sampled_from(MEANINGFUL),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=10))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=6)),
    max_leaves=25,
)
loose = st.builds(
    lambda action, fields: {**fields, "action": action} if action is not None else fields,
    st.one_of(st.sampled_from(ACTION_NAMES), st.none(), values),
    st.dictionaries(keys, values, max_size=6),
)


names = st.one_of(
    st.sampled_from(["daily", "weekly", "nightly", "fresh", "x y", "\ud83d"]),
    st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True),
)
meaningful = st.one_of(st.sampled_from(MEANINGFUL), st.integers(0, 5), values)


def perturbed(
    base: st.SearchStrategy[dict[str, Any]], fields: list[str]
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid object with up to two of its fields replaced, added or dropped."""
    return st.builds(
        lambda valid, changes, dropped: {
            **{k: v for k, v in valid.items() if k not in dropped},
            **changes,
        },
        base,
        st.one_of(
            st.just({}), st.dictionaries(st.one_of(st.sampled_from(fields), keys), meaningful, max_size=2)
        ),
        st.one_of(st.just(set()), st.sets(st.sampled_from(fields), max_size=1)),
    )


schedules = st.sampled_from(
    [
        {"cron": "0 10 * * *"},
        {"cron": "*/5 * * * *", "tz": "UTC"},
        {"every": "5m"},
        {"every_ms": 600_000},
        {"at": "2026-03-02T09:30:00+01:00"},
    ]
)
jobs = perturbed(
    st.fixed_dictionaries(
        {"name": names, "target": st.just("reports"), "action": st.just("daily"), "schedule": schedules},
        optional={
            "args": st.dictionaries(st.text(max_size=5), scalars, max_size=2),
            "lifetime": st.sampled_from(["1h", "30d", "P30D"]),
            "dedupe_key": st.sampled_from(["k", "j"]),
            "once": st.booleans(),
            "misfire": st.sampled_from(["skip", "coalesce"]),
            "max_attempts": st.integers(1, 3),
        },
    ),
    sorted(JOB_FIELDS),
)
changes = perturbed(
    st.fixed_dictionaries(
        {},
        optional={
            "schedule": schedules,
            "lifetime": st.sampled_from(["2h", "30d"]),
            "name": names,
            "misfire": st.sampled_from(["skip", "coalesce"]),
            "breaker_threshold": st.integers(0, 5),
            "args": st.just({"team": "ops"}),
        },
    ),
    sorted(MUTABLE),
)
by_name = st.one_of(
    st.builds(lambda n: {"name": n}, names), st.builds(lambda i: {"job_id": i}, st.integers(1, 6))
)
shaped_fields: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "create_job": st.builds(lambda job: {"job": job}, jobs),
    "update": st.builds(lambda who, change: {**who, "changes": change}, by_name, changes),
    "get": by_name,
    "pause": by_name,
    "resume": by_name,
    "run_now": by_name,
    "delete": by_name,
    "history": st.fixed_dictionaries({}, optional={"name": names, "limit": st.integers(1, 5)}),
    "list": st.fixed_dictionaries({}, optional={"state": st.sampled_from(["active", "paused"])}),
    "preview": st.fixed_dictionaries(
        {"expression": st.sampled_from(["0 7 * * *", "@daily", "0 0 30 2 *"])},
        optional={"count": st.integers(1, 3), "tz": st.just("UTC")},
    ),
}
structured = st.sampled_from(ACTION_NAMES).flatmap(
    lambda action: perturbed(
        st.builds(lambda fields: {"action": action, **fields}, shaped_fields.get(action, st.just({}))),
        REQUEST_KEYS,
    )
)
requests = st.one_of(loose, structured)
sources = st.sampled_from([operator(), agent(), agent(targets=("*",), max_schedules=50)])


def well_formed(reply: object) -> dict[str, Any]:
    assert isinstance(reply, dict), reply
    assert isinstance(reply.get("ok"), bool), reply
    if not reply["ok"]:
        assert isinstance(reply.get("error"), str) and reply["error"], reply
        assert isinstance(reply.get("message"), str) and reply["message"], reply
    json.dumps(reply, allow_nan=False).encode("utf-8")
    return reply


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """One node for all examples, so that state builds up: some jobs exist, some ran, some were removed."""
    path: Path = tmp_path_factory.mktemp("fuzz") / "cronwright.db"
    harness = make_harness(SqliteStore(path), ManualClock(at("2026-03-02T09:00:00+01:00")))
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.create("weekly", {"cron": "0 10 * * MON"}, dedupe_key="k")
    harness.create("nightly", {"cron": "0 3 * * *"}, target="backup", action="nightly", args={"dest": "/m"})
    harness.ok("pause", name="weekly")
    yield harness
    harness.runner.close()
    harness.node.wait_for_runs()


FUZZ = settings(max_examples=300, deadline=None)


@FUZZ
@given(request=requests, source=sources)
def test_dispatch_answers_any_json_value(node: Harness, request: dict[str, Any], source: Source) -> None:
    before = snapshot(node)
    reply = well_formed(node.protocol.dispatch(request, source))
    node.node.wait_for_runs()
    action = request.get("action")
    shown = action if isinstance(action, str) and action in ACTION_NAMES else type(action).__name__
    event(f"{shown}: {reply.get('error', 'ok')}")
    if not reply["ok"]:
        assert snapshot(node) == before, (request, reply)
    if isinstance(request.get("request_id"), str) and reply.get("field") != "request_id":
        assert reply.get("request_id") == request["request_id"], reply


@FUZZ
@given(request=values)
def test_dispatch_answers_any_decoded_value(node: Harness, request: object) -> None:
    before = snapshot(node)
    reply = well_formed(node.protocol.dispatch(request, operator()))
    node.node.wait_for_runs()
    if not reply["ok"]:
        assert snapshot(node) == before, (request, reply)


@FUZZ
@given(message=st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_handle_answers_any_bytes(node: Harness, message: bytes | str) -> None:
    before = snapshot(node)
    reply = well_formed(node.protocol.handle(message, operator()))
    if not reply["ok"]:
        assert snapshot(node) == before
    assert node.protocol.handle(message, None) is None


@FUZZ
@given(request=requests)
def test_handle_answers_any_json_text(node: Harness, request: dict[str, Any]) -> None:
    """The same requests through the wire format, including \\uXXXX escapes for every non-ASCII char."""
    before = snapshot(node)
    reply = well_formed(node.protocol.handle(json.dumps(request), operator()))
    node.node.wait_for_runs()
    if not reply["ok"]:
        assert snapshot(node) == before, (request, reply)
    assert node.protocol.handle(json.dumps(request), None) is None
