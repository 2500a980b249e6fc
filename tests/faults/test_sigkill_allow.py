"""SIGKILL of a real `cronwright serve` while two occurrences of one overlap-allow job are in flight
(semantics 19 and 34): the next process records exactly those started runs `interrupted`, each once, and
no occurrence the dead node had claimed is left behind."""

from __future__ import annotations

import os
import signal
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cli.blackbox import Cronwright, wait_for
from faketime import needs_faketime


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@needs_faketime
def test_a_killed_node_s_side_by_side_runs_are_each_interrupted_once(tmp_path: Path) -> None:
    cw = Cronwright(tmp_path, min_period="1s")
    now = datetime.now(UTC).replace(microsecond=0)
    cw.json("add", "held", "--target", "sh", "--action", "slow", "--every", "1s", "--overlap", "allow",
            "--lifetime", "30s")  # fmt: skip
    serve = cw.popen("serve")
    try:
        wait_for("two runs side by side", lambda: len(_lines(cw.started)) >= 2, timeout=30)
        os.kill(serve.pid, signal.SIGKILL)
        serve.wait(timeout=30)
    finally:
        if serve.poll() is None:
            serve.kill()
        serve.communicate(timeout=30)
    assert serve.returncode == -signal.SIGKILL
    # The dead node's commands outlive it (their own process groups): let them end, and count the starts.
    cw.release.touch()
    wait_for("the orphaned commands to end", lambda: len(cw.fires()) == len(_lines(cw.started)), timeout=30)
    started = Counter(_lines(cw.started))
    assert len(started) >= 2 and max(started.values()) == 1, started
    before = cw.json("show", "held")["job"]
    assert (before["state"], before["in_flight"]) == ("running", len(started)), before  # claimed = started

    # Past the dead node's lease (and the job's lifetime), a tick records its runs interrupted.
    later = (now + timedelta(minutes=3)).isoformat()
    tick = cw.json("tick", at=later)
    assert tick["fired"] == 0
    runs = cw.json("history", "held", at=later)["runs"]
    assert sorted(run["fire_id"] for run in runs) == sorted(started), (runs, started)
    assert {run["outcome"] for run in runs} == {"interrupted"}
    assert all("stopped renewing its lease" in run["message"] for run in runs)
    after = cw.json("show", "held", at=later)["job"]
    assert (after["state"], after["in_flight"]) == ("expired", 0), after
    assert cw.json("tick", at=later)["fired"] == 0  # nothing of it runs again
