"""Semantic 34, black-box: overlap `replace` through the real binary on SQLite.

Under `serve` on the real clock, a job every 3 s whose command runs for up to 30 s: each occurrence that
comes due stops the one running (its process group is killed, its run ends `cancelled`) and starts once that
one has ended, never beside it. Under `tick` (faketime), a later tick asks an earlier one, still waiting for
its run, to stop it.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

from .blackbox import TIMEOUT, Cronwright, needs_faketime, serving, slow_tick, utc, wait_for


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
    said = re.search(r"overlap replace[^,]*, (\d+) cancelled", " ".join(human_show.split()))  # lines fit 80
    assert said is not None and int(said.group(1)) >= 1, human_show
    assert "cancelled" in human_history


@needs_faketime
def test_a_later_tick_stops_the_run_an_earlier_tick_still_waits_for(tmp_path: Path) -> None:
    # A one-second beat, so the first tick looks at its rows soon; a lease long enough that the second
    # process, on its own faked clock, never takes the first one's live run for dead.
    cw = Cronwright(tmp_path, lease_beat="1s", lease_ttl="10m")
    job = cw.add(
        "long", "--cron", "* * * * *", "--overlap", "replace", action="slow", at="2026-10-25T01:00:30+02:00"
    )
    with slow_tick(cw, at="2026-10-25T01:01:30+02:00") as first:
        second = cw.tick(at="2026-10-25T01:02:03+02:00")  # 01:02 comes due while 01:01 runs: it is replaced
        assert second["fired"] == 0

        def lines() -> list[str]:
            return cw.started.read_text(encoding="utf-8").split()

        # The first tick stops its run at its next beat; if its own clock has passed 01:02 by then, it
        # starts the waiting occurrence itself (which then waits for the release).
        wait_for("the first tick to stop its run", lambda: first.poll() is not None or len(lines()) > 1)
        cw.release.touch()
        out, err = first.communicate(timeout=TIMEOUT)
    assert first.returncode == 0, err
    if json.loads(out)["fired"] == 1:
        assert cw.tick(at="2026-10-25T01:02:30+02:00")["fired"] == 1  # the waiting occurrence starts
    runs = cw.json("history", "long", at="2026-10-25T01:03:10+02:00")["runs"]
    assert [(run["scheduled_for"], run["outcome"]) for run in reversed(runs)] == [
        ("2026-10-25T01:01:00+02:00", "cancelled"),
        ("2026-10-25T01:02:00+02:00", "ok"),
    ]
    assert cw.fires() == [f"{job['id']}-2 1"]  # only the second reached the end of its script
    shown = cw.show("long", at="2026-10-25T01:03:20+02:00")["job"]
    assert (shown["cancelled"], shown["consecutive_failures"], shown["state"]) == (1, 0, "active")
