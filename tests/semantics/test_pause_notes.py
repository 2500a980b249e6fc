"""Pause notes: `pause --note` keeps why and when a schedule was paused on its row (pause_note, paused_at),
shown by get and list, audited with the note, and cleared by resume."""

from __future__ import annotations

from conftest import Harness, at
from cronwright.fronts.mcp import summary


def test_a_pause_note_and_its_instant_stay_on_the_row_until_resume(harness: Harness) -> None:
    harness.create("nightly", {"cron": "0 3 * * *"})
    harness.clock.set(at("2026-03-02T09:15:00+01:00"))
    paused = harness.ok("pause", name="nightly", note="upstream is down")["job"]
    assert (paused["pause_note"], paused["paused_at"]) == ("upstream is down", "2026-03-02T09:15:00+01:00")
    assert harness.job("nightly")["pause_note"] == "upstream is down"
    listed = harness.ok("list")["jobs"][0]
    assert (listed["pause_note"], listed["paused_at"]) == ("upstream is down", "2026-03-02T09:15:00+01:00")
    said = summary("get", {"job": listed})
    assert "paused since 2026-03-02T09:15:00+01:00: upstream is down" in said

    resumed = harness.ok("resume", name="nightly", note="it is back")["job"]
    assert (resumed["pause_note"], resumed["paused_at"]) == (None, None)
    entries = harness.ok("audit", name="nightly")["entries"]
    assert [(e["action"], e["note"]) for e in entries[:2]] == [
        ("resume", "it is back"),
        ("pause", "upstream is down"),
    ]
    assert entries[1]["changes"]["pause_note"] == [None, "upstream is down"]


def test_a_pause_without_a_note_still_says_when(harness: Harness) -> None:
    harness.create("nightly", {"cron": "0 3 * * *"})
    paused = harness.ok("pause", name="nightly")["job"]
    assert (paused["pause_note"], paused["paused_at"]) == (None, "2026-03-02T09:00:00+01:00")


def test_a_note_past_500_characters_is_refused_and_changes_nothing(harness: Harness) -> None:
    harness.create("nightly", {"cron": "0 3 * * *"})
    reply = harness.call("pause", name="nightly", note="x" * 501)
    assert (reply["ok"], reply["error"], reply["field"]) == (False, "invalid", "note")
    assert harness.job("nightly")["state"] == "active"
