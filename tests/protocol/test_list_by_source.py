"""`list` takes `source`: the operator's filter by who made a schedule (the dashboard's source filter). A
source sees only its own schedules whatever it asks: another's name lists none."""

from __future__ import annotations

from conftest import Harness
from cronwright.core.sources import Source, operator

AGENT = Source("agent", ("reports.*",))
OTHER = Source("other", ("reports.*",))


def _make(harness: Harness, source: Source, name: str) -> None:
    job = {"name": name, "target": "reports", "action": "daily", "schedule": {"cron": "0 7 * * *"}}
    reply = harness.protocol.dispatch({"action": "create_job", "job": job}, source)
    assert reply["ok"], reply


def _names(harness: Harness, asker: Source, **fields: object) -> list[str]:
    reply = harness.protocol.dispatch({"action": "list", **fields}, asker)
    assert reply["ok"], reply
    return [job["name"] for job in reply["jobs"]]


def test_the_operator_lists_one_sources_schedules(harness: Harness) -> None:
    _make(harness, AGENT, "a-1")
    _make(harness, OTHER, "o-1")
    _make(harness, AGENT, "a-2")
    harness.create("mine", {"cron": "0 7 * * *"})

    assert _names(harness, operator(), source="agent") == ["a-1", "a-2"]
    assert _names(harness, operator(), source="cli") == ["mine"]
    assert _names(harness, operator(), source="agent", limit=1) == ["a-1"]
    assert _names(harness, operator()) == ["a-1", "a-2", "mine", "o-1"]


def test_a_source_asking_for_anothers_schedules_gets_none(harness: Harness) -> None:
    _make(harness, AGENT, "a-1")
    _make(harness, OTHER, "o-1")

    assert _names(harness, AGENT, source="other") == []
    assert _names(harness, AGENT, source="agent") == ["a-1"]
    assert _names(harness, AGENT) == ["a-1"]
