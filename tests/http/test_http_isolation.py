"""A source sees and changes only its own schedules; the operator sees all (docs/security.md)."""

from __future__ import annotations

import pytest

from cronwright.core.sources import operator
from serving import Live, bearer


@pytest.fixture
def theirs(live: Live) -> int:
    reply = live.create("other", "their-report", dedupe_key="daily-report")
    assert reply.status_code == 200
    job_id: int = reply.json()["job"]["id"]
    return job_id


def test_a_source_does_not_see_another_sources_schedules(live: Live, theirs: int) -> None:
    live.create("agent", "my-report")

    listed = live.http.get("/v1/jobs", headers=bearer("agent")).json()

    assert [job["name"] for job in listed["jobs"]] == ["my-report"]


@pytest.mark.parametrize("action", ["get", "pause", "resume", "run_now", "delete", "history"])
def test_a_source_cannot_reach_another_sources_schedule_by_name_or_id(
    live: Live, theirs: int, action: str
) -> None:
    by_name = live.call("agent", {"action": action, "name": "their-report"})
    by_id = live.call("agent", {"action": action, "job_id": theirs})

    for reply in (by_name, by_id):
        assert reply.status_code == 404
        assert reply.json()["error"] == "not_found"
    kept = live.app.service.store.get(theirs)
    assert kept is not None and kept.state.value == "active"


def test_a_source_cannot_update_another_sources_schedule(live: Live, theirs: int) -> None:
    reply = live.call(
        "agent", {"action": "update", "name": "their-report", "changes": {"args": {"to": "me"}}}
    )

    assert reply.status_code == 404
    kept = live.app.service.store.get(theirs)
    assert kept is not None and kept.args == {}


def test_get_by_path_of_another_sources_schedule_is_not_found(live: Live, theirs: int) -> None:
    reply = live.http.get("/v1/jobs/their-report", headers=bearer("agent"))

    assert reply.status_code == 404
    assert reply.json()["error"] == "not_found"


def test_a_dedupe_key_never_hands_over_another_sources_schedule(live: Live, theirs: int) -> None:
    reply = live.create("agent", "my-report", dedupe_key="daily-report")

    assert reply.status_code == 200
    job = reply.json()["job"]
    assert "deduped" not in reply.json()
    assert (job["name"], job["created_by"]) == ("my-report", "agent")


def test_a_sources_status_counts_only_its_own(live: Live, theirs: int) -> None:
    live.create("agent", "my-report")

    status = live.http.get("/v1/status", headers=bearer("agent")).json()

    assert status["counts"]["active"] == 1


def test_a_sources_history_holds_only_its_own_runs(live: Live, theirs: int) -> None:
    live.create("agent", "my-report")
    assert live.call("other", {"action": "run_now", "name": "their-report"}).status_code == 200
    assert live.call("agent", {"action": "run_now", "name": "my-report"}).status_code == 200
    live.app.node.wait_for_runs(30)

    mine = live.http.get("/v1/runs", headers=bearer("agent")).json()["runs"]
    everyone = live.app.protocol.dispatch({"action": "history"}, operator())["runs"]

    assert [run["schedule"] for run in mine] == ["my-report"]
    assert sorted(run["schedule"] for run in everyone) == ["my-report", "their-report"]


def test_the_operator_sees_every_sources_schedules(live: Live, theirs: int) -> None:
    live.create("agent", "my-report")

    listed = live.app.protocol.dispatch({"action": "list"}, operator())

    assert [(job["name"], job["created_by"]) for job in listed["jobs"]] == [
        ("my-report", "agent"),
        ("their-report", "other"),
    ]
