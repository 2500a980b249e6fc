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
