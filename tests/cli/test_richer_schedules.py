"""Issue 14, black-box: the real binary, a real SQLite file and faketime, for semantics 31-35.

Instants are written in Berlin time, the node zone, with their offset.
"""

from __future__ import annotations

from .blackbox import Cronwright, needs_faketime

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
