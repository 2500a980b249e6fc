"""Semantic 34, black-box: overlap `replace` under a real `cronwright serve` on SQLite, on the real clock.

A job every 3 s whose command runs for up to 30 s: each occurrence that comes due stops the one running
(its process group is killed, its run ends `cancelled`) and starts once that one has ended, never beside it.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from .blackbox import Cronwright, serving, utc, wait_for


def test_replace_cancels_the_running_command_and_starts_the_next_after_it(tmp_path: Path) -> None:
    cw = Cronwright(tmp_path, min_period="1s")
    added = cw.json(
        "add", "swap", "--target", "sh", "--action", "slow", "--every", "3s", "--overlap", "replace"
    )
    assert added["job"]["overlap"] == "replace"
    job_id = added["job"]["id"]

    def started() -> list[str]:
        return cw.started.read_text(encoding="utf-8").split() if cw.started.exists() else []

    with serving(cw):
        wait_for("a second occurrence to start", lambda: len(started()) >= 2, timeout=30)
        runs = cw.json("history", "swap")["runs"]
        shown = cw.json("show", "swap")["job"]
        human_show = cw.ok("show", "swap").stdout
        human_history = cw.ok("history", "swap").stdout
        cw.release.touch()  # lets whatever runs now end, so that serve stops promptly

    assert started()[:2] == [f"{job_id}-1", f"{job_id}-2"]
    first = next(run for run in runs if run["fire_id"] == f"{job_id}-1")
    assert first["outcome"] == "cancelled"
    assert "its process group was killed" in first["message"]
    assert first["took_ms"] < 20_000  # stopped, not run to its 30 s end
    assert f"{job_id}-1 1" not in cw.fires()  # it never reached the end of its script
    # Never two side by side: each run started once the one before it had ended.
    ordered = sorted(runs, key=lambda run: (utc(run["started_at"]), run["fire_id"]))
    for before, after in itertools.pairwise(ordered):
        assert utc(after["started_at"]) >= utc(before["finished_at"]), (before, after)
    cancelled = sum(run["outcome"] == "cancelled" for run in runs)
    assert shown["cancelled"] >= cancelled >= 1  # read a moment later: another may have been cancelled
    assert shown["consecutive_failures"] == 0
    assert "overlap replace" in human_show and f"{shown['cancelled']} cancelled" in human_show
    assert "cancelled" in human_history
