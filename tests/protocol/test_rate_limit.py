"""max_mutations_per_minute: a token bucket per source over its changes, on the node's clock (issue 15)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from conftest import Harness
from cronwright.core.sources import Source

from .support import agent, create, refused


def test_a_source_past_its_rate_is_refused_until_a_token_refills(harness: Harness) -> None:
    source = agent(max_schedules=None, max_mutations_per_minute=3)
    for name in ("one", "two", "three"):
        assert harness.protocol.dispatch(create(name), source)["ok"]

    reply = refused(harness, create("four"), "rate_limited", source, max_mutations_per_minute=3)

    # One token every 20 s; none has refilled yet on the unmoved clock.
    assert reply["retry_after"] == 20
    assert "max_mutations_per_minute" in reply["message"] and "retry after 20 s" in reply["message"]
    harness.clock.advance(timedelta(seconds=19))
    assert refused(harness, create("four"), "rate_limited", source)["retry_after"] == 1
    harness.clock.advance(timedelta(seconds=1))
    assert harness.protocol.dispatch(create("four"), source)["ok"]
    assert refused(harness, create("five"), "rate_limited", source)["retry_after"] == 20


def test_every_change_counts_and_reads_do_not(harness: Harness) -> None:
    source = agent(max_schedules=None, max_mutations_per_minute=6)
    assert harness.protocol.dispatch(create("job"), source)["ok"]
    for action in ("update", "pause", "resume", "run_now", "delete"):
        request: dict[str, object] = {"action": action, "name": "job"}
        if action == "update":
            request["changes"] = {"args": {"n": 1}}
        assert harness.protocol.dispatch(request, source)["ok"], action
        # Reads in between spend nothing.
        for read in ({"action": "list"}, {"action": "status"}, {"action": "targets"}):
            assert harness.protocol.dispatch(read, source)["ok"]

    refused(harness, create("again"), "rate_limited", source)


def test_a_refused_change_spends_a_token_but_a_rate_limited_one_does_not(harness: Harness) -> None:
    source = agent(max_schedules=None, max_mutations_per_minute=2)
    assert harness.protocol.dispatch({"action": "delete", "name": "missing"}, source)["error"] == "not_found"
    assert harness.protocol.dispatch(create("one"), source)["ok"]
    for _ in range(5):
        refused(harness, create("two"), "rate_limited", source)

    harness.clock.advance(timedelta(seconds=30))

    assert harness.protocol.dispatch(create("two"), source)["ok"]


def test_a_bucket_holds_a_minute_at_most_and_is_per_source(harness: Harness) -> None:
    source = agent(max_schedules=None, max_mutations_per_minute=2)
    other = Source("other", targets=("reports.*",), max_mutations_per_minute=2)
    harness.clock.advance(timedelta(hours=1))  # an idle hour refills no more than a minute's worth
    for name in ("a", "b"):
        assert harness.protocol.dispatch(create(name), source)["ok"]
    refused(harness, create("c"), "rate_limited", source)

    assert harness.protocol.dispatch(create("theirs"), other)["ok"]


def test_a_clock_stepped_back_refills_nothing(harness: Harness) -> None:
    source = agent(max_schedules=None, max_mutations_per_minute=1)
    assert harness.protocol.dispatch(create("one"), source)["ok"]
    harness.clock.advance(timedelta(minutes=-10))
    refused(harness, create("two"), "rate_limited", source)
    harness.clock.advance(timedelta(minutes=10, seconds=59))
    refused(harness, create("two"), "rate_limited", source)
    harness.clock.advance(timedelta(seconds=1))

    assert harness.protocol.dispatch(create("two"), source)["ok"]


def test_the_operator_and_unlimited_sources_are_never_limited(harness: Harness) -> None:
    unlimited = agent(max_schedules=None)
    for index in range(30):
        assert harness.protocol.dispatch(create(f"theirs-{index}"), unlimited)["ok"]
    for index in range(30):
        harness.ok("pause", name=f"theirs-{index}")


@pytest.mark.parametrize("action", [{"create_job": 1}, ["delete"], None, 7])
def test_an_action_of_no_string_is_unknown_for_a_limited_source(harness: Harness, action: object) -> None:
    refused(harness, {"action": action}, "unknown_action", agent(max_mutations_per_minute=1))


def test_a_backfill_spends_a_token_as_any_change(harness: Harness) -> None:
    source = agent(max_schedules=None, max_mutations_per_minute=2)
    assert harness.protocol.dispatch(create("job"), source)["ok"]
    span = {"from": "2026-03-01T00:00:00+01:00", "to": "2026-03-02T00:00:00+01:00"}
    assert harness.protocol.dispatch({"action": "backfill", "name": "job", **span, "dry_run": True}, source)[
        "ok"
    ]
    refused(harness, {"action": "backfill", "name": "job", **span}, "rate_limited", source)
