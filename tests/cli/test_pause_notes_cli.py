"""Pause notes, black-box: `pause --note` through the real binary on a real SQLite file; `show`, `list`
and `get --json` say why and since when, `resume` clears it, and `audit` keeps both notes."""

from __future__ import annotations

from .blackbox import Cronwright


def test_pause_with_a_note_is_shown_and_resume_clears_it(cw: Cronwright) -> None:
    cw.ok("add", "report", "--target", "sh", "--action", "log", "--every", "1h")
    paused = cw.json("pause", "report", "--note", "disk full on the backup host")["job"]
    shown = cw.ok("show", "report").stdout
    listed = cw.ok("list", "--wide").stdout
    got = cw.json("show", "report")["job"]
    cw.ok("resume", "report", "--note", "disk replaced")
    after = cw.json("show", "report")["job"]
    entries = cw.json("audit", "report")["entries"]

    assert paused["pause_note"] == "disk full on the backup host" and paused["paused_at"]
    assert f"since {paused['paused_at']}: disk full on the backup host" in shown
    assert "paused (disk full on the backup host)" in listed
    assert (got["pause_note"], got["paused_at"]) == (paused["pause_note"], paused["paused_at"])
    assert (after["pause_note"], after["paused_at"], after["state"]) == (None, None, "active")
    assert [(e["action"], e["note"]) for e in entries[:2]] == [
        ("resume", "disk replaced"),
        ("pause", "disk full on the backup host"),
    ]
