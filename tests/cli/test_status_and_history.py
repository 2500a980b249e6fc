"""`status` and `history` from another process, black-box (issue 11, defect 8): the real binary on a real
SQLite file, the clock moved by faketime. Instants are in Berlin time, the node zone."""

from __future__ import annotations

import json

from .blackbox import TIMEOUT, Cronwright, needs_faketime, wait_for

pytestmark = needs_faketime


def test_status_shows_a_run_in_flight_in_another_process(cw: Cronwright) -> None:
    cw.add("slow", "--cron", "0 10 * * *", action="slow", at="2026-03-02T09:59:00+01:00")
    ticking = cw.popen("tick", "--json", at="2026-03-02T10:00:05+01:00")
    try:
        wait_for("the slow command to start", cw.started.exists)
        status = cw.json("status", at="2026-03-02T10:00:10+01:00")
        assert (status["running"], status["counts"]["running"]) == (1, 1)
        assert "running: 1" in cw.ok("status", at="2026-03-02T10:00:10+01:00").stdout.splitlines()
    finally:
        cw.release.touch()
        stdout, stderr = ticking.communicate(timeout=TIMEOUT)
    assert ticking.returncode == 0, stderr
    assert json.loads(stdout)["fired"] == 1
    assert cw.json("status", at="2026-03-02T10:01:00+01:00")["running"] == 0


def test_history_pages_on_with_before(cw: Cronwright) -> None:
    cw.add("beat", "--cron", "* * * * *", at="2026-03-02T09:59:30+01:00")
    for minute in range(3):
        assert cw.tick(at=f"2026-03-02T10:0{minute}:05+01:00")["fired"] == 1
    page = cw.json("history", "beat", "--limit", "2", at="2026-03-02T10:03:00+01:00")
    assert [run["scheduled_for"] for run in page["runs"]] == [
        "2026-03-02T10:02:00+01:00",
        "2026-03-02T10:01:00+01:00",
    ]
    hint = cw.ok("history", "beat", "--limit", "2", at="2026-03-02T10:03:00+01:00").stdout
    assert f"More follow: add --before {page['next_before']} for the next page." in hint
    rest = cw.json(
        "history",
        "beat",
        "--limit",
        "2",
        "--before",
        str(page["next_before"]),
        at="2026-03-02T10:03:00+01:00",
    )
    assert [run["scheduled_for"] for run in rest["runs"]] == ["2026-03-02T10:00:00+01:00"]
    assert "next_before" not in rest


def test_show_of_a_schedule_that_never_ran_says_so_in_words(cw: Cronwright) -> None:
    cw.add("fresh", "--cron", "0 10 * * *", at="2026-03-02T09:00:00+01:00")

    lines = cw.ok("show", "fresh", at="2026-03-02T09:00:00+01:00").stdout.splitlines()

    assert "    last: -" in lines
    assert any(line.startswith("  policy: ") and ", 1 attempt, " in line for line in lines)
