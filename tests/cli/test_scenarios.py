"""The scenarios of issue 5, black-box: the real binary, a real SQLite file, and the clock moved by faketime.

Each `at=` is the instant the cronwright process starts at; its clock then runs on. Instants are written in
Berlin time, the node zone, with their offset.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

from .blackbox import TIMEOUT, Cronwright, needs_faketime, utc, wait_for

pytestmark = needs_faketime


def outcomes(cw: Cronwright, name: str, at: str) -> list[tuple[str, str, int]]:
    """(scheduled_for, outcome, attempt) of each run, oldest first."""
    runs = cw.json("history", name, at=at)["runs"]
    return [(run["scheduled_for"], run["outcome"], run["attempt"]) for run in reversed(runs)]


def test_a_daily_job_runs_at_its_minute_and_skips_a_missed_day(cw: Cronwright) -> None:
    job = cw.add("daily", "--cron", "0 10 * * *", at="2026-03-02T09:59:30+01:00")
    assert job["next_run_at"] == "2026-03-02T10:00:00+01:00"

    first = cw.tick(at="2026-03-02T10:00:05+01:00")
    assert (first["fired"], first["skipped"]) == (1, 0)
    assert cw.fires() == [f"{first['fire_ids'][0]} 1"]
    assert cw.show("daily", at="2026-03-02T10:01:00+01:00")["job"]["next_run_at"] == (
        "2026-03-03T10:00:00+01:00"
    )

    # Tuesday's 10:00 passes with no tick at all (the host was down); Wednesday's tick runs once.
    third = cw.tick(at="2026-03-04T10:00:05+01:00")
    assert (third["fired"], third["skipped"]) == (1, 1)
    assert cw.fires() == [f"{first['fire_ids'][0]} 1", f"{third['fire_ids'][0]} 1"]

    job = cw.show("daily", at="2026-03-04T10:01:00+01:00")["job"]
    assert job["skipped"] == {"overlap": 0, "misfire": 1, "calendar": 0}
    assert job["next_run_at"] == "2026-03-05T10:00:00+01:00"
    assert (job["state"], job["last_run"]["outcome"], job["last_run"]["fire_id"]) == (
        "active",
        "ok",
        third["fire_ids"][0],
    )
    assert outcomes(cw, "daily", at="2026-03-04T10:01:00+01:00") == [
        ("2026-03-02T10:00:00+01:00", "ok", 1),
        ("2026-03-04T10:00:00+01:00", "ok", 1),
    ]
    # Another tick the same day finds nothing due.
    assert cw.tick(at="2026-03-04T10:30:00+01:00")["fired"] == 0
    assert len(cw.fires()) == 2


def test_a_daily_job_keeps_its_wall_time_across_spring_forward(cw: Cronwright) -> None:
    """Europe/Berlin, Sunday 2026-03-29: 02:00 CET becomes 03:00 CEST, so 10:00 is 08:00Z, not 09:00Z."""
    cw.add("daily", "--cron", "0 10 * * *", at="2026-03-27T12:00:00+01:00")
    assert cw.tick(at="2026-03-28T10:00:05+01:00")["fired"] == 1
    assert cw.show("daily", at="2026-03-28T10:01:00+01:00")["job"]["next_run_at"] == (
        "2026-03-29T10:00:00+02:00"
    )

    # Sunday's 10:00 CEST is missed; Monday's tick at 10:00 CEST (08:00Z) runs it once, on time.
    monday = cw.tick(at="2026-03-30T10:00:05+02:00")
    assert (monday["fired"], monday["skipped"]) == (1, 1)
    job = cw.show("daily", at="2026-03-30T10:01:00+02:00")["job"]
    assert job["skipped"] == {"overlap": 0, "misfire": 1, "calendar": 0}
    assert job["next_run_at"] == "2026-03-31T10:00:00+02:00"
    assert outcomes(cw, "daily", at="2026-03-30T10:01:00+02:00") == [
        ("2026-03-28T10:00:00+01:00", "ok", 1),
        ("2026-03-30T10:00:00+02:00", "ok", 1),
    ]
    # 09:00Z, where a zone-blind 10:00 +01:00 would have fired, runs nothing.
    assert cw.tick(at="2026-03-30T11:00:05+02:00")["fired"] == 0
    assert len(cw.fires()) == 2


def test_a_firing_in_the_spring_forward_gap_runs_at_the_first_instant_after_it(cw: Cronwright) -> None:
    cw.add("gap", "--cron", "30 2 * * *", at="2026-03-28T12:00:00+01:00")
    assert cw.show("gap", at="2026-03-28T12:00:10+01:00")["job"]["next_run_at"] == (
        "2026-03-29T03:00:00+02:00"
    )
    assert cw.tick(at="2026-03-29T03:00:05+02:00")["fired"] == 1
    assert cw.tick(at="2026-03-30T02:30:05+02:00")["fired"] == 1
    assert outcomes(cw, "gap", at="2026-03-30T02:31:00+02:00") == [
        ("2026-03-29T03:00:00+02:00", "ok", 1),
        ("2026-03-30T02:30:00+02:00", "ok", 1),
    ]


def test_a_fixed_time_job_in_the_repeated_fall_back_hour_runs_once(cw: Cronwright) -> None:
    """Europe/Berlin, Sunday 2026-10-25: 03:00 CEST becomes 02:00 CET, so 02:30 happens twice, at 00:30Z
    and at 01:30Z. A `30 2 * * *` job fires at the first, once."""
    cw.add("night", "--cron", "30 2 * * *", at="2026-10-24T12:00:00+02:00")
    first = cw.tick(at="2026-10-25T02:30:05+02:00")
    assert (first["fired"], first["skipped"]) == (1, 0)
    second = cw.tick(at="2026-10-25T02:30:05+01:00")
    assert (second["fired"], second["skipped"]) == (0, 0)
    assert cw.fires() == [f"{first['fire_ids'][0]} 1"]

    job = cw.show("night", at="2026-10-25T02:31:00+01:00")["job"]
    assert job["next_run_at"] == "2026-10-26T02:30:00+01:00"
    assert job["skipped"] == {"overlap": 0, "misfire": 0, "calendar": 0}
    assert outcomes(cw, "night", at="2026-10-25T02:31:00+01:00") == [("2026-10-25T02:30:00+02:00", "ok", 1)]
    assert cw.tick(at="2026-10-26T02:30:05+01:00")["fired"] == 1


def test_a_lifetime_runs_out_and_an_update_renews_it(cw: Cronwright) -> None:
    end = "2026-03-03T09:59:30+01:00"
    job = cw.add("short", "--cron", "0 10 * * *", "--lifetime", end, at="2026-03-02T09:59:30+01:00")
    assert job["ends_at"] == end
    assert cw.tick(at="2026-03-02T10:00:05+01:00")["fired"] == 1
    # Tuesday's 10:00 lies after the end: no next firing, though the job lives until its end.
    job = cw.show("short", at="2026-03-02T10:01:00+01:00")["job"]
    assert (job["state"], job["next_run_at"]) == ("active", None)

    assert cw.tick(at="2026-03-03T10:00:05+01:00")["fired"] == 0
    job = cw.show("short", at="2026-03-03T10:01:00+01:00")["job"]
    assert (job["state"], job["next_run_at"]) == ("expired", None)
    assert cw.tick(at="2026-03-04T10:00:05+01:00")["fired"] == 0
    expired = cw.json("list", "--state", "expired", at="2026-03-04T10:01:00+01:00")["jobs"]
    assert [row["name"] for row in expired] == ["short"]
    assert len(cw.fires()) == 1

    # The renewal reads the lifetime from the moment of the update (the process's clock has run a little).
    renewed = cw.json("update", "short", "--lifetime", "2d", at="2026-03-05T09:00:00+01:00")
    assert renewed["persistence"] == "persisted"
    job = renewed["job"]
    assert (job["state"], job["next_run_at"]) == ("active", "2026-03-05T10:00:00+01:00")
    assert "2026-03-07T09:00:00+01:00" <= job["ends_at"] <= "2026-03-07T09:00:09+01:00"
    assert cw.tick(at="2026-03-05T10:00:05+01:00")["fired"] == 1
    assert len(cw.fires()) == 2
    assert cw.show("short", at="2026-03-05T10:01:00+01:00")["job"]["state"] == "active"


def test_the_breaker_pauses_a_failing_job_and_resume_clears_it(cw: Cronwright) -> None:
    cw.add("flaky", "--cron", "*/10 * * * *", "--breaker", "2", action="fail", at="2026-03-02T09:55:00+01:00")
    assert cw.tick(at="2026-03-02T10:00:05+01:00")["fired"] == 1
    job = cw.show("flaky", at="2026-03-02T10:01:00+01:00")["job"]
    assert (job["state"], job["consecutive_failures"], job["last_run"]["outcome"]) == ("active", 1, "error")
    assert job["last_run"]["message"] == "exited with code 1: failing on purpose"

    assert cw.tick(at="2026-03-02T10:10:05+01:00")["fired"] == 1
    job = cw.show("flaky", at="2026-03-02T10:11:00+01:00")["job"]
    assert (job["state"], job["paused_by"], job["consecutive_failures"]) == ("paused", "breaker", 2)
    assert len(cw.fires()) == 2

    listing = cw.ok("list", at="2026-03-02T10:11:00+01:00").stdout.splitlines()
    row = next(line for line in listing if line.startswith("flaky "))
    assert "(breaker)" in row and row.split()[-1] == "paused", row
    assert cw.tick(at="2026-03-02T10:20:05+01:00")["fired"] == 0, "a paused job does not fire"

    resumed = cw.ok("resume", "flaky", at="2026-03-02T10:25:00+01:00")
    assert resumed.stdout.startswith("resumed flaky: active")
    job = cw.show("flaky", at="2026-03-02T10:25:10+01:00")["job"]
    assert (job["state"], job["paused_by"], job["consecutive_failures"]) == ("active", None, 0)
    # The occurrence missed while paused (10:20) is skipped; 10:30 runs.
    assert cw.tick(at="2026-03-02T10:30:05+01:00")["fired"] == 1
    assert len(cw.fires()) == 3
    job = cw.show("flaky", at="2026-03-02T10:31:00+01:00")["job"]
    assert (job["state"], job["consecutive_failures"], job["skipped"]["misfire"]) == ("active", 1, 1)
    assert outcomes(cw, "flaky", at="2026-03-02T10:31:00+01:00") == [
        ("2026-03-02T10:00:00+01:00", "error", 1),
        ("2026-03-02T10:10:00+01:00", "error", 1),
        ("2026-03-02T10:30:00+01:00", "error", 1),
    ]


def test_resume_applies_the_misfire_policy_at_once(cw: Cronwright) -> None:
    """Semantic 6: the misfire policy applies at resume. With `skip`, the resumed job's next run is its next
    future occurrence, and the missed one is counted, before any pass."""
    cw.add("job", "--cron", "*/10 * * * *", at="2026-03-02T09:55:00+01:00")
    cw.ok("pause", "job", at="2026-03-02T09:56:00+01:00")
    resumed = cw.json("resume", "job", at="2026-03-02T10:05:00+01:00")["job"]
    assert resumed["next_run_at"] == "2026-03-02T10:10:00+01:00"
    assert resumed["skipped"]["misfire"] == 1


def test_resume_on_an_active_job_is_refused_with_exit_1(cw: Cronwright) -> None:
    cw.add("daily", "--cron", "0 10 * * *", at="2026-03-02T09:00:00+01:00")
    before = cw.show("daily", at="2026-03-02T09:00:10+01:00")

    refused = cw.run("resume", "daily", at="2026-03-02T09:00:20+01:00")
    assert refused.rc == 1
    assert refused.stdout == ""
    assert "job_not_paused" in refused.stderr and len(refused.stderr.splitlines()) == 1
    reply = cw.json("resume", "daily", at="2026-03-02T09:00:30+01:00", rc=1)
    assert (reply["error"], reply["state"]) == ("job_not_paused", "active")

    assert cw.show("daily", at="2026-03-02T09:00:40+01:00") == before
    assert cw.fires() == []


def test_once_dedupe_creates_at_most_once_ever(cw: Cronwright) -> None:
    once = ("--dedupe-key", "k", "--once")
    first = cw.json(
        "add", "report", "--target", "sh", "--action", "log", "--at", "2026-03-02T10:00:00+01:00",
        *once, at="2026-03-02T09:59:00+01:00",
    )  # fmt: skip
    assert not first.get("deduped") and first["persistence"] == "persisted"
    second = cw.json(
        "add", "report-again", "--target", "sh", "--action", "log", "--at", "2026-03-02T10:00:00+01:00",
        *once, at="2026-03-02T09:59:10+01:00",
    )  # fmt: skip
    assert second["deduped"] is True
    assert (second["job"]["id"], second["job"]["name"]) == (first["job"]["id"], "report")

    assert cw.tick(at="2026-03-02T10:00:05+01:00")["fired"] == 1
    assert cw.show("report", at="2026-03-02T10:01:00+01:00")["job"]["state"] == "done"

    # The job ran and is over; the key still makes a create a no-op, with a later instant too.
    third = cw.json(
        "add", "report-third", "--target", "sh", "--action", "log", "--at", "2026-03-02T10:30:00+01:00",
        *once, at="2026-03-02T10:05:00+01:00",
    )  # fmt: skip
    assert third["deduped"] is True
    assert (third["job"]["id"], third["job"]["state"]) == (first["job"]["id"], "done")
    assert cw.tick(at="2026-03-02T10:30:05+01:00")["fired"] == 0
    assert len(cw.fires()) == 1
    names = [row["name"] for row in cw.json("list", at="2026-03-02T10:31:00+01:00")["jobs"]]
    assert names == ["report"]


def test_a_firing_while_the_previous_run_is_in_flight_is_skipped(cw: Cronwright) -> None:
    """Two ticks, as a host crontab starts them a minute apart, while the first one's command still runs."""
    cw.add("slow", "--cron", "* * * * *", action="slow", at="2026-03-02T09:59:50+01:00")
    first = cw.popen("tick", "--json", at="2026-03-02T10:00:30+01:00")
    try:
        wait_for("the slow command to start", cw.started.exists)
        second = cw.tick(at="2026-03-02T10:01:02+01:00")
        assert (second["fired"], second["skipped"]) == (0, 1)
        job = cw.show("slow", at="2026-03-02T10:01:03+01:00")["job"]
        assert (job["state"], job["skipped"]["overlap"]) == ("running", 1)
        assert job["next_run_at"] == "2026-03-02T10:02:00+01:00"
    finally:
        cw.release.touch()
        stdout, stderr = first.communicate(timeout=TIMEOUT)
    assert first.returncode == 0, stderr
    report = json.loads(stdout)
    assert report["fired"] == 1
    assert cw.fires() == [f"{report['fire_ids'][0]} 1"]
    assert cw.started.read_text().split() == report["fire_ids"], "the slow command started once"

    job = cw.show("slow", at="2026-03-02T10:01:10+01:00")["job"]
    assert (job["state"], job["last_run"]["outcome"]) == ("active", "ok")
    assert job["skipped"] == {"overlap": 1, "misfire": 0, "calendar": 0}
    assert outcomes(cw, "slow", at="2026-03-02T10:01:10+01:00") == [("2026-03-02T10:00:00+01:00", "ok", 1)]


def test_a_tick_waiting_for_a_long_run_keeps_its_lease(tmp_path: Path) -> None:
    """A tick that waits for a run renews its lease, so the next tick (a crontab's, a minute later) does
    not take the run of a live process for dead (semantic 19). Leases are shortened to keep it quick."""
    cw = Cronwright(tmp_path, lease_beat="200ms", lease_ttl="2s")
    cw.add("slow", "--cron", "0 10 * * *", action="slow", at="2026-03-02T09:59:00+01:00")
    start = utc("2026-03-02T10:00:05+01:00")
    began = time.monotonic()
    first = cw.popen("tick", "--json", at=start.isoformat())

    def now() -> str:
        """The first tick's clock, so that every later process reads the same time as it does."""
        return (start + timedelta(seconds=time.monotonic() - began)).isoformat()

    def renewed() -> bool:
        peers = cw.json("status", at=now())["node"]["peers"]
        # Beats are shown to the second. Without renewal the beat would stay at `start`, more than a
        # lease_ttl before the second tick's now.
        return any(utc(peer["last_beat"]) >= start + timedelta(seconds=3) for peer in peers)

    try:
        wait_for("the slow command to start", cw.started.exists)
        wait_for("the first tick to renew its lease", renewed, timeout=10)
        second = cw.tick(at=now())
        assert (second["fired"], second["skipped"]) == (0, 0)
        job = cw.show("slow", at=now())["job"]
        assert job["state"] == "running", "the run of a live tick was taken for dead"
    finally:
        cw.release.touch()
        stdout, stderr = first.communicate(timeout=TIMEOUT)
    assert first.returncode == 0, stderr
    assert json.loads(stdout)["fired"] == 1
    assert [outcome for _, outcome, _ in outcomes(cw, "slow", at=now())] == ["ok"]


def test_the_fake_clock_reaches_the_binary(cw: Cronwright) -> None:
    """A guard for the harness itself: the process reads the instant faketime gives it."""
    status = cw.json("status", at="2026-03-02T10:00:00+01:00")
    assert status["node"]["now"].startswith("2026-03-02T10:00:0")
    assert status["node"]["zone"] == "Europe/Berlin"
