"""Zones at the edges, black-box (issue 11, defects 4 and 7): the real binary on a real SQLite file.

- `update --cron` keeps the job's zone, and `update --tz` alone moves it (DESIGN semantic 26);
- `preview` gives one answer: the CLI and a protocol `preview` read an offset-less --after in --tz.
"""

from __future__ import annotations

import json
from pathlib import Path

from .blackbox import Cronwright, needs_faketime


@needs_faketime
def test_update_cron_keeps_the_zone_given_at_add_and_tz_alone_moves_it(tmp_path: Path) -> None:
    cw = Cronwright(tmp_path, zone="UTC")  # the node zone is not the job's
    now = "2026-03-02T06:00:00+00:00"
    cw.add("berlin", "--cron", "0 9 * * *", "--tz", "Europe/Berlin", at=now)

    job = cw.json("update", "berlin", "--cron", "0 10 * * *", at=now)["job"]
    assert job["schedule"] == {"cron": "0 10 * * *", "tz": "Europe/Berlin"}
    assert job["next_run_at"] == "2026-03-02T09:00:00+00:00"  # 10:00 in Berlin (+01:00)

    moved = cw.json("update", "berlin", "--tz", "Asia/Tokyo", at=now)["job"]
    assert moved["schedule"] == {"cron": "0 10 * * *", "tz": "Asia/Tokyo"}
    assert moved["next_run_at"] == "2026-03-03T01:00:00+00:00"  # 10:00 in Tokyo (+09:00), re-armed

    # The first firing after the move is at 10:00 Tokyo, and nothing fired at 10:00 in the node zone.
    assert cw.tick(at="2026-03-02T10:00:05+00:00")["fired"] == 0
    assert cw.tick(at="2026-03-03T01:00:05+00:00")["fired"] == 1


def test_update_tz_alone_on_an_every_job_is_refused(cw: Cronwright) -> None:
    cw.ok("add", "beat", "--target", "sh", "--action", "log", "--every", "1h")
    refused = cw.run("update", "beat", "--tz", "Asia/Tokyo")
    assert refused.rc == 1
    assert "invalid (schedule.tz)" in refused.stderr
    usage = cw.run("update", "beat", "--every", "2h", "--tz", "Asia/Tokyo")
    assert (usage.rc, usage.stderr.strip()) == (2, "cronwright: error: --tz goes with --cron")


def test_preview_reads_an_offset_less_after_in_tz_through_the_cli_and_the_protocol_alike(
    cw: Cronwright,
) -> None:
    """The node zone is Europe/Berlin, six hours ahead of New York: one reading of --after, not two."""
    options = ("--tz", "America/New_York", "--after", "2026-06-01T00:00:00", "--count", "2")
    shown = cw.ok("preview", "0 * * * *", *options, "--json").json()
    request = {"action": "preview", "expression": "0 * * * *", "tz": "America/New_York",
               "after": "2026-06-01T00:00:00", "count": 2}  # fmt: skip
    answered = cw.ok("call", json.dumps(request)).json()
    assert {"ok": True, **shown} == answered
    # Midnight in New York (EDT, -04:00); the firings are shown in the zone the expression is read in.
    assert shown["firings"] == ["2026-06-01T01:00:00-04:00", "2026-06-01T02:00:00-04:00"]
