"""Issue 14, black-box: the real binary, a real SQLite file and faketime, for semantics 31-35.

Instants are written in Berlin time, the node zone, with their offset.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from .blackbox import TIMEOUT, Cronwright, needs_faketime, slow_tick, utc

pytestmark = needs_faketime


def test_two_expressions_never_fire_one_instant_twice(cw: Cronwright) -> None:
    # Monday 2026-03-02 09:00 is named by both expressions.
    job = cw.add("union", "--cron", "0 9 * * 1-5", "--cron", "0 9 * * MON", at="2026-03-01T12:00:00+01:00")
    assert job["schedule"]["cron"] == ["0 9 * * 1-5", "0 9 * * MON"]
    assert job["next_run_at"] == "2026-03-02T09:00:00+01:00"

    first = cw.tick(at="2026-03-02T09:00:05+01:00")
    assert first["fired"] == 1
    assert cw.tick(at="2026-03-02T09:00:30+01:00")["fired"] == 0
    assert cw.fires() == [f"{first['fire_ids'][0]} 1"]
    shown = cw.show("union", at="2026-03-02T09:01:00+01:00")["job"]
    assert shown["next_run_at"] == "2026-03-03T09:00:00+01:00"

    listed = cw.ok("list", "--wide", at="2026-03-02T09:01:00+01:00").stdout
    assert "0 9 * * 1-5 | 0 9 * * MON" in listed


def test_preview_takes_several_expressions(cw: Cronwright) -> None:
    shown = cw.ok(
        "preview",
        "0 9 * * 1-5",
        "0 12 * * 6",
        "--after",
        "2026-03-06T10:00:00+01:00",
        "--count",
        "2",
        "--json",
    ).json()
    assert shown["expression"] == ["0 9 * * 1-5", "0 12 * * 6"]
    assert shown["firings"] == ["2026-03-07T12:00:00+01:00", "2026-03-09T09:00:00+01:00"]


def test_jitter_is_in_range_and_identical_across_processes_and_restarts(cw: Cronwright) -> None:
    job = cw.add("spread", "--every", "10m", "--jitter", "5m", at="2026-10-24T23:00:00+02:00")
    assert job["schedule"]["jitter"] == "5m"
    planned = cw.json("show", "spread", at="2026-10-24T23:00:10+02:00")["next_firings"]
    again = cw.json("show", "spread", at="2026-10-24T23:00:20+02:00")["next_firings"]
    assert planned == again  # two processes, one plan
    assert planned[0]["at"] == job["next_run_at"]
    for firing in planned:
        delay = utc(firing["at"]) - utc(firing["nominal"])
        assert timedelta(0) <= delay < timedelta(minutes=5)

    fired = []
    for firing in planned[:2]:
        due = utc(firing["at"])
        tick = cw.tick(at=(due + timedelta(seconds=2)).isoformat())
        assert tick["fired"] == 1
        fired += tick["fire_ids"]
    runs = cw.json("history", "spread", at=planned[2]["nominal"])["runs"]
    assert [run["scheduled_for"] for run in reversed(runs)] == [f["at"] for f in planned[:2]]
    # After two restarts, the plan is the one the first process made.
    assert cw.json("show", "spread", at=planned[2]["nominal"])["next_firings"][:3] == planned[2:]
    assert cw.fires() == [f"{fire_id} 1" for fire_id in fired]


def test_a_holiday_is_skipped_and_counted_and_preview_marks_it(cw: Cronwright) -> None:
    # German holidays (the `holidays` package) and a listed date, in a calendar of the config.
    with cw.config.open("a", encoding="utf-8") as config:
        config.write('\n[calendars.holidays]\ncountry = "DE"\ndates = ["2026-12-23"]\n')
    cw.add("daily", "--cron", "0 9 * * *", "--exclude", "holidays", at="2026-12-22T12:00:00+01:00")
    shown = cw.show("daily", at="2026-12-22T12:00:10+01:00")
    assert [("excluded" in f) for f in shown["next_firings"]] == [True, False, True, True, False]
    assert "Christmas" in shown["next_firings"][2]["excluded"]

    assert cw.tick(at="2026-12-23T09:00:05+01:00")["fired"] == 0  # listed
    fired = cw.tick(at="2026-12-24T09:00:05+01:00")
    assert fired["fired"] == 1
    assert cw.tick(at="2026-12-25T09:00:05+01:00")["fired"] == 0  # Christmas Day
    job = cw.show("daily", at="2026-12-25T09:01:00+01:00")["job"]
    assert job["skipped"] == {"overlap": 0, "misfire": 0, "calendar": 2}
    assert job["next_run_at"] == "2026-12-26T09:00:00+01:00"
    assert cw.fires() == [f"{fired['fire_ids'][0]} 1"]

    marked = cw.ok(
        "preview",
        "0 9 * * *",
        "--exclude",
        "holidays",
        "--after",
        "2026-12-24T10:00:00+01:00",
        "--count",
        "3",
    ).stdout
    # Each excluded firing is marked with why, on a line of its own where one line would pass 80 columns.
    assert "next: 2026-12-25T09:00:00+01:00\n" in marked
    assert "\n                (excluded: 2026-12-25 is Christmas Day (DE))\n" in marked
    assert max(len(line) for line in marked.splitlines()) <= 80, marked
    refused = cw.run(
        "add", "x", "--target", "sh", "--action", "log", "--cron", "0 9 * * *", "--exclude", "nope"
    )
    assert refused.rc == 1 and "unknown_calendar" in refused.stderr


def test_buffer_one_runs_the_buffered_occurrence_once(tmp_path: Path) -> None:
    # Leases long enough that the second process, started a minute later on its own faked clock, never
    # takes the first one's live run for dead.
    cw = Cronwright(tmp_path, lease_beat="1m", lease_ttl="10m")
    cw.add(
        "long",
        "--cron",
        "* * * * *",
        "--overlap",
        "buffer_one",
        action="slow",
        at="2026-10-25T01:00:30+02:00",
    )
    # Each process's faked clock runs on from where it starts, so the first one's clock may not have
    # reached 01:02 yet when its run ends: then a later tick starts the waiting occurrence.
    with slow_tick(cw, at="2026-10-25T01:01:30+02:00") as first:
        second = cw.tick(at="2026-10-25T01:02:03+02:00")  # 01:02 comes due while 01:01 runs: it waits
        assert second["fired"] == 0
        waiting = cw.show("long", at="2026-10-25T01:02:10+02:00")["job"]
        assert (waiting["buffered"], waiting["buffered_for"]) == (1, "2026-10-25T01:02:00+02:00")
        cw.release.touch()
        out, err = first.communicate(timeout=TIMEOUT)
    assert first.returncode == 0, err
    fired = json.loads(out)["fired"]  # its own, and the one that waited once its clock passed 01:02
    if fired == 1:
        assert cw.tick(at="2026-10-25T01:02:30+02:00")["fired"] == 1
    runs = cw.json("history", "long", at="2026-10-25T01:03:30+02:00")["runs"]
    assert sorted(run["scheduled_for"] for run in runs) == [
        "2026-10-25T01:01:00+02:00",
        "2026-10-25T01:02:00+02:00",
    ]
    assert len(cw.fires()) == 2
    assert cw.tick(at="2026-10-25T01:02:40+02:00")["fired"] == 0  # nothing waits any more


def test_show_lists_two_expressions_with_jitter_and_a_holiday_across_the_october_change(
    cw: Cronwright,
) -> None:
    """The closing note's example: Berlin falls back on 31 October 2027, Reformation Day in Saxony."""
    with cw.config.open("a", encoding="utf-8") as config:
        config.write('\n[calendars.holidays]\ncountry = "DE"\nsubdivision = "SN"\n')
    made = "2027-10-29T12:00:00+02:00"
    cw.add("night-and-morning", "--cron", "30 2 * * *", "--cron", "0 9 * * 1-5", "--jitter", "10m",
           "--exclude", "holidays", at=made)  # fmt: skip
    firings = cw.show("night-and-morning", at=made)["next_firings"]
    human = cw.ok("show", "night-and-morning", at=made).stdout

    assert [(f["nominal"], f.get("excluded")) for f in firings] == [
        ("2027-10-30T02:30:00+02:00", None),
        ("2027-10-31T02:30:00+02:00", "2027-10-31 is Reformation Day (DE-SN)"),
        ("2027-11-01T02:30:00+01:00", None),
        ("2027-11-01T09:00:00+01:00", None),
        ("2027-11-02T02:30:00+01:00", None),
    ]
    for firing in firings:  # each within its 10 minutes of jitter, the same in every process (job id 1)
        assert timedelta(0) <= utc(firing["at"]) - utc(firing["nominal"]) < timedelta(minutes=10)
    assert firings[0]["at"] == "2027-10-30T02:36:38+02:00"
    assert "\n            excluded: 2027-10-31 is Reformation Day (DE-SN)\n" in human
    assert max(len(line) for line in human.splitlines()) <= 80, human  # an 80-column terminal
