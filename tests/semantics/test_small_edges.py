"""Small edges of issue 11 (defect 8), through the protocol on a real SQLite store: a deleted job's run keeps
its schedule's name, resume announces the misfire skip it counts, paused_by says who paused, and `status`
counts the runs in flight in the store."""

from __future__ import annotations

import threading

from conftest import Harness, at
from cronwright.core.events import EventKind
from cronwright.core.sources import Source

AGENT = Source("agent", targets=("reports.*",))


def test_a_run_whose_job_is_deleted_meanwhile_is_recorded_under_the_jobs_name(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    harness.ok("delete", name="slow")
    gate.set()
    harness.node.wait_for_runs()
    runs = harness.ok("history")["runs"]
    assert [(run["schedule"], run["fire_id"], run["outcome"]) for run in runs] == [("slow", "1-1", "ok")]


def test_resume_announces_the_misfire_skip_it_counts(harness: Harness) -> None:
    harness.create("job", {"cron": "*/10 * * * *"})
    harness.ok("pause", name="job")
    harness.clock.set(at("2026-03-02T09:35:00+01:00"))  # 09:10, 09:20 and 09:30 pass while paused
    resumed = harness.ok("resume", name="job")["job"]
    assert (resumed["skipped"]["misfire"], resumed["next_run_at"]) == (3, "2026-03-02T09:40:00+01:00")
    skips = [event for event in harness.events.events if event.kind is EventKind.JOB_SKIPPED]
    assert [(event.job_name, event.fields["reason"], event.fields["count"]) for event in skips] == [
        ("job", "misfire", 3)
    ]


def test_a_resume_with_nothing_missed_announces_nothing(harness: Harness) -> None:
    harness.create("job", {"cron": "*/10 * * * *"})
    harness.ok("pause", name="job")
    harness.ok("resume", name="job")
    assert EventKind.JOB_SKIPPED not in harness.events.kinds()


def test_paused_by_says_whether_the_operator_or_the_jobs_own_source_paused_it(harness: Harness) -> None:
    create = {"action": "create_job", "job": {"name": "mine", "target": "reports", "action": "daily",
                                               "schedule": {"every": "1h"}}}  # fmt: skip
    assert harness.protocol.dispatch(create, AGENT)["ok"]
    paused = harness.protocol.dispatch({"action": "pause", "name": "mine"}, AGENT)["job"]
    assert (paused["paused_by"], paused["created_by"]) == ("source", "agent")
    harness.ok("resume", name="mine")
    assert harness.ok("pause", name="mine")["job"]["paused_by"] == "operator"


def test_status_counts_the_runs_in_flight_in_the_store_not_only_this_processs(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "0 10 * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    other = harness.restart()  # another process on the same store, running nothing itself
    assert (harness.ok("status")["running"], other.ok("status")["running"]) == (1, 1)
    gate.set()
    harness.node.wait_for_runs()
    assert other.ok("status")["running"] == 0


def test_history_pages_on_before_through_every_run_once_newest_first(harness: Harness) -> None:
    harness.create("beat", {"every": "1m"})
    harness.create("other", {"every": "1m"})
    for minute in range(1, 6):
        harness.clock.set(at(f"2026-03-02T09:0{minute}:00+01:00"))
        harness.tick()
    everything = harness.ok("history", limit=1000)["runs"]
    assert len(everything) == 10 and "next_before" not in harness.ok("history", limit=10)

    pages, before = [], None
    while True:
        reply = harness.ok("history", limit=3, **({} if before is None else {"before": before}))
        pages.append(reply["runs"])
        before = reply.get("next_before")
        if before is None:
            break
        assert before == reply["runs"][-1]["id"]
    assert [len(page) for page in pages] == [3, 3, 3, 1]
    assert [run for page in pages for run in page] == everything

    beat = harness.ok("history", name="beat", limit=2)
    older = harness.ok("history", name="beat", limit=2, before=beat["next_before"])
    assert [run["schedule"] for run in beat["runs"] + older["runs"]] == ["beat"] * 4
    assert beat["runs"][-1]["finished_at"] >= older["runs"][0]["finished_at"]


def test_history_before_a_run_that_is_not_kept_is_refused(harness: Harness) -> None:
    reply = harness.call("history", before=424242)
    assert (reply["ok"], reply["error"]) == (False, "not_found")
    assert "without 'before'" in reply["message"]


def test_a_sources_history_pages_over_its_own_jobs_only(harness: Harness) -> None:
    for name in ("mine-1", "mine-2"):
        job = {"name": name, "target": "reports", "action": "daily", "schedule": {"every": "1m"}}
        assert harness.protocol.dispatch({"action": "create_job", "job": job}, AGENT)["ok"]
    harness.create("theirs", {"every": "1m"})
    for minute in range(1, 4):
        harness.clock.set(at(f"2026-03-02T09:0{minute}:00+01:00"))
        harness.tick()
    first = harness.protocol.dispatch({"action": "history", "limit": 4}, AGENT)
    rest = harness.protocol.dispatch({"action": "history", "limit": 4, "before": first["next_before"]}, AGENT)
    runs = first["runs"] + rest["runs"]
    assert len(runs) == 6 and "next_before" not in rest
    assert {run["schedule"] for run in runs} == {"mine-1", "mine-2"}
    assert len({run["id"] for run in runs}) == 6
