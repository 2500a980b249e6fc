"""Semantic 34, overlap allow, as users run it: a real `cronwright serve` on SQLite and the real CLI. A
job due every second whose command takes about three runs its occurrences side by side: their intervals
intersect, each fire_id runs once, and the row counts the ones that started beside another."""

from __future__ import annotations

import itertools
import json
import shlex
from collections import Counter
from pathlib import Path

from cli.blackbox import Cronwright, serving, wait_for

NAP = (
    'echo "$CRONWRIGHT_FIRE_ID start $(date +%s.%N)" >> {log}; /bin/sleep 3; '
    'echo "$CRONWRIGHT_FIRE_ID end $(date +%s.%N)" >> {log}'
)


def _with_nap(cw: Cronwright) -> Path:
    """Adds the action `sh.nap` (three seconds of sleep, its start and end logged); returns its log."""
    log = cw.folder / "naps.log"
    argv = ["/bin/sh", "-c", NAP.format(log=shlex.quote(str(log)))]
    with cw.config.open("a", encoding="utf-8") as config:
        config.write(f'\n[targets.sh.actions.nap]\nargv = {json.dumps(argv)}\ntimeout = "1m"\n')
    return log


def _naps(log: Path) -> dict[str, dict[str, float]]:
    """fire_id -> {"start": t, "end": t} as the commands themselves logged them (real clock)."""
    seen: dict[str, dict[str, float]] = {}
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    for line in lines:
        fire_id, what, instant = line.split()
        assert what not in seen.setdefault(fire_id, {}), f"{fire_id} logged {what} twice"
        seen[fire_id][what] = float(instant)
    return seen


def test_serve_runs_an_allow_job_s_occurrences_side_by_side_each_once(tmp_path: Path) -> None:
    cw = Cronwright(tmp_path, min_period="1s")
    log = _with_nap(cw)
    with serving(cw):
        # Added once the node is up (the CLI wakes it): the 5 s lifetime is not spent while a loaded
        # machine starts `serve`, which once left too few occurrences to run side by side.
        cw.json("add", "naps", "--target", "sh", "--action", "nap", "--every", "1s", "--overlap", "allow",
                "--lifetime", "5s")  # fmt: skip
        # Bounded polls on what the commands write, then on the row: the job expires once the last of
        # its occurrences in flight is recorded.
        wait_for("three naps to end", lambda: sum("end" in t for t in _naps(log).values()) >= 3, 30)
        wait_for(
            "every nap to end",
            lambda: all("end" in times for times in _naps(log).values()),
            timeout=30,
        )
        wait_for("the job to expire", lambda: cw.json("show", "naps")["job"]["state"] == "expired", 30)
    naps = _naps(log)
    shown = cw.json("show", "naps")["job"]
    runs = cw.json("history", "naps", "--limit", "100")["runs"]

    fire_ids = [run["fire_id"] for run in runs]
    assert len(fire_ids) == len(set(fire_ids)) == len(naps) >= 3, (fire_ids, naps)
    assert set(fire_ids) == set(naps) and Counter(run["outcome"] for run in runs) == {"ok": len(runs)}
    # Side by side: each nap after the first started before the one before it ended.
    ordered = sorted(naps.values(), key=lambda times: times["start"])
    beside = sum(later["start"] < earlier["end"] for earlier, later in itertools.pairwise(ordered))
    assert beside >= 2, naps
    # The row counts every occurrence that started while another was in flight (a claim comes before its
    # command starts, and an outcome is recorded after it ends, so at least those the commands saw).
    assert beside <= shown["overlapped"] <= len(runs) - 1, (shown, naps)
    assert (shown["overlap"], shown["in_flight"], shown["skipped"]["overlap"]) == ("allow", 0, 0)
    human = cw.ok("show", "naps").stdout
    assert f"overlap allow ({shown['overlapped']} started beside another, 0 in flight)" in human
