"""`cronwright list --source S`, black-box: only the schedules that source made (the CLI's are `cli`'s)."""

from __future__ import annotations

from .blackbox import Cronwright

NOW = "2026-03-02T09:00:00+01:00"


def test_list_by_source_shows_only_what_that_source_made(cw: Cronwright) -> None:
    cw.add("mine", "--every", "1h", at=NOW)
    assert [j["name"] for j in cw.json("list", "--source", "cli", at=NOW)["jobs"]] == ["mine"]
    assert cw.json("list", "--source", "agent", at=NOW)["jobs"] == []
    assert "no schedules" in cw.ok("list", "--source", "agent", at=NOW).stdout
