"""`run-now` waits for its run and exits 3 when the run ended other than ok (DESIGN, CLI section)."""

from __future__ import annotations

import json

from .blackbox import Cronwright


def test_run_now_exits_0_for_an_ok_run_and_3_for_a_failed_one(cw: Cronwright) -> None:
    cw.ok("add", "fine", "--target", "sh", "--action", "log", "--cron", "0 10 * * *")
    cw.ok("add", "broken", "--target", "sh", "--action", "fail", "--cron", "0 10 * * *")

    fine = cw.run("run-now", "fine")
    assert fine.rc == 0, fine
    assert fine.stdout.startswith("ran fine (1-") and ": ok in " in fine.stdout

    broken = cw.run("run-now", "broken")
    assert broken.rc == 3, broken
    assert broken.stdout.startswith("ran broken (2-") and ": error in " in broken.stdout
    as_json = cw.run("run-now", "broken", "--json")
    assert as_json.rc == 3, as_json
    reply = json.loads(as_json.stdout)
    assert reply["ok"] is True and reply["job"]["last_run"]["outcome"] == "error"
    assert len(cw.fires()) == 3, "each run-now ran once"


def test_run_now_refused_is_still_exit_1(cw: Cronwright) -> None:
    cw.ok("add", "fine", "--target", "sh", "--action", "log", "--cron", "0 10 * * *")
    cw.ok("pause", "fine")
    refused = cw.run("run-now", "fine")
    assert (refused.rc, refused.stdout) == (1, ""), refused
    assert "job_not_active" in refused.stderr


def test_show_and_history_output_print_each_runs_captured_output(cw: Cronwright) -> None:
    cw.ok("add", "broken", "--target", "sh", "--action", "fail", "--cron", "0 10 * * *")
    assert cw.run("run-now", "broken").rc == 3
    fire_id = cw.json("show", "broken")["job"]["last_run"]["fire_id"]

    for args in (("history", "broken", "--output"), ("show", "broken", "--output")):
        shown = cw.ok(*args).stdout.splitlines()
        header = next(
            i for i, line in enumerate(shown) if line.startswith(f"--- {fire_id} attempt 1: error at ")
        )
        assert shown[header + 1] == "failing on purpose", shown
    assert f"--- {fire_id}" not in cw.ok("history", "broken").stdout, "output only on request"
    assert f"--- {fire_id}" not in cw.ok("show", "broken").stdout
