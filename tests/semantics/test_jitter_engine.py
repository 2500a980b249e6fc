"""Semantic 32, through the service and node: jitter delays each occurrence by a stable offset in
[0, jitter), capped below the gap to the next nominal instant; next_run_at, get's next firings and the
envelope show it, and misfire grace counts from the jittered instant."""

from __future__ import annotations

from datetime import timedelta

from conftest import Harness, at, make_harness
from cronwright.timing.iso import render
from cronwright.timing.jitter import jittered, offset

BERLIN_RENDER = "Europe/Berlin"


def _fires(job_id: int, nominal: str, spread: timedelta, following: str) -> str:
    from zoneinfo import ZoneInfo

    return render(jittered(job_id, at(nominal), spread, at(following)), ZoneInfo(BERLIN_RENDER))


def test_next_run_at_and_the_next_firings_carry_the_jitter(harness: Harness) -> None:
    job = harness.create("spread", {"every": "10m", "jitter": "5m"})
    assert job["schedule"] == {"every": "10m", "every_ms": 600_000, "jitter": "5m"}
    # Created at 09:00:00: the grid is 09:10, 09:20, ...; each fires at its own offset below 5m.
    expected = _fires(
        job["id"], "2026-03-02T09:10:00+01:00", timedelta(minutes=5), "2026-03-02T09:20:00+01:00"
    )
    assert job["next_run_at"] == expected
    firings = harness.ok("get", name="spread")["next_firings"]
    assert [f["nominal"] for f in firings] == [f"2026-03-02T09:{m}:00+01:00" for m in (10, 20, 30, 40, 50)]
    for firing in firings:
        delay = at(firing["at"]) - at(firing["nominal"])
        assert timedelta(0) <= delay < timedelta(minutes=5)
    assert len({at(f["at"]) - at(f["nominal"]) for f in firings}) > 1  # spread, not one fixed delay


def test_it_fires_at_the_jittered_instant_with_scheduled_for_and_nominal(harness: Harness) -> None:
    job = harness.create("spread", {"cron": "0 * * * *", "jitter": "20m"})
    due = at(job["next_run_at"])
    assert at("2026-03-02T10:00:00+01:00") <= due < at("2026-03-02T10:20:00+01:00")
    if due > at("2026-03-02T10:00:00+01:00"):
        harness.clock.set(due - timedelta(seconds=1))
        assert harness.tick()["fired"] == 0
    harness.clock.set(due + timedelta(seconds=1))
    assert harness.tick()["fired"] == 1
    call = harness.runner.calls[0]
    assert call.nominal_for == at("2026-03-02T10:00:00+01:00")
    assert call.scheduled_for.replace(microsecond=0) == due
    history = harness.ok("history", name="spread")["runs"]
    assert history[0]["scheduled_for"] == job["next_run_at"]


def test_misfire_grace_counts_from_the_jittered_instant(harness: Harness) -> None:
    job = harness.create("late", {"cron": "0 * * * *", "jitter": "30m"})
    delay = offset(
        job["id"], at("2026-03-02T10:00:00+01:00"), timedelta(minutes=30), at("2026-03-02T11:00:00+01:00")
    )
    assert delay > timedelta(minutes=2)  # fixed by the hash: job 1 at 10:00 waits this long
    # 90 s after the jittered instant: past the grace (60 s) from it, though the nominal 10:00 is further.
    harness.clock.set(at("2026-03-02T10:00:00+01:00") + delay + timedelta(seconds=90))
    assert harness.tick()["fired"] == 0
    assert harness.job("late")["skipped"]["misfire"] == 1
    # The next one, 30 s after its jittered instant, is on time.
    nxt = at(harness.job("late")["next_run_at"])
    harness.clock.set(nxt + timedelta(seconds=30))
    assert harness.tick()["fired"] == 1


def test_a_nominal_instant_that_passed_before_its_jittered_one_is_not_missed(harness: Harness) -> None:
    job = harness.create("gap", {"every": "10m", "jitter": "9m"})
    grid = [at("2026-03-02T09:10:00+01:00") + timedelta(minutes=10 * k) for k in range(6)]
    fires = [jittered(job["id"], n, timedelta(minutes=9), n + timedelta(minutes=10)) for n in grid]
    # Find an occurrence whose jitter leaves room: stand between its nominal and its jittered instant.
    k = next(i for i in range(1, 6) if fires[i] - grid[i] > timedelta(seconds=2))
    harness.clock.set(grid[k] + timedelta(seconds=1))  # nominal k passed; it is not due yet
    reply = harness.tick()
    assert (reply["fired"], reply["skipped"]) == (0, k)  # the k before it were missed
    assert at(harness.job("gap")["next_run_at"]) == fires[k].replace(microsecond=0)
    harness.clock.set(fires[k] + timedelta(seconds=1))
    assert harness.tick()["fired"] == 1
    assert harness.runner.calls[0].nominal_for == grid[k]


def test_a_restarted_node_computes_the_same_instants(harness: Harness) -> None:
    harness.create("stable", {"every": "10m", "jitter": "5m"})
    before = harness.ok("get", name="stable")["next_firings"]
    again = make_harness(harness.raw_store, harness.clock)
    assert again.ok("get", name="stable")["next_firings"] == before
    again.runner.close()


def test_jitter_is_refused_on_a_one_shot_and_beyond_a_day(harness: Harness) -> None:
    spec = {"name": "x", "target": "reports", "action": "daily"}
    once = harness.call(
        "create_job", job={**spec, "schedule": {"at": "2026-03-03T09:00:00+01:00", "jitter": "5m"}}
    )
    assert (once["ok"], once["error"]) == (False, "invalid")
    long = harness.call("create_job", job={**spec, "schedule": {"every": "1h", "jitter": "2d"}})
    assert (long["ok"], long["field"]) == (False, "schedule.jitter")
