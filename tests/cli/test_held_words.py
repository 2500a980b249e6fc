"""What the CLI says of a schedule that fires nothing until someone acts, and of a zone moved (issue 35,
defect 8): a paused schedule shows no next firing nor a countdown to one, and the audit of `update --tz`
shows the zone that changed, not the same expression twice."""

from __future__ import annotations

from .blackbox import Cronwright


def test_a_paused_schedule_shows_no_next_firing_nor_a_countdown(cw: Cronwright) -> None:
    cw.ok("add", "daily", "--target", "sh", "--action", "log", "--cron", "0 7 * * *")

    paused = cw.ok("pause", "daily", "--note", "holiday").stdout
    assert "it fires no more until resumed" in paused and "next" not in paused, paused
    listed = cw.ok("list", "--wide").stdout
    daily = next(line for line in listed.splitlines() if line.startswith("daily"))
    assert " in " not in daily and " ago" not in daily, daily  # no countdown to a firing that won't come
    shown = cw.ok("show", "daily").stdout
    assert "next: - (paused: it fires again once resumed)" in shown, shown

    resumed = cw.ok("resume", "daily").stdout
    assert "next 20" in resumed, resumed  # active again: its next firing is named
    daily = next(line for line in cw.ok("list", "--wide").stdout.splitlines() if line.startswith("daily"))
    assert " in " in daily, daily


def test_the_audit_of_a_zone_move_shows_both_zones(cw: Cronwright) -> None:
    cw.ok("add", "daily", "--target", "sh", "--action", "log", "--cron", "0 7 * * *", "--tz", "Europe/Berlin")
    cw.ok("update", "daily", "--tz", "Asia/Tokyo")

    audit = cw.ok("audit", "daily", "--limit", "1").stdout
    assert "cron '0 7 * * *' Europe/Berlin -> cron '0 7 * * *' Asia/Tokyo" in audit, audit
