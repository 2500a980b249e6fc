"""systemd timers and their services (written for these tests, modelled on systemd.timer(5)'s examples)."""

from __future__ import annotations

import pytest

from cronwright.importers import systemd_timers as systemd
from cronwright.importers.outcome import Status

from .conftest import loads, seed_of

SERVICE = "[Service]\nType=oneshot\nExecStart=/usr/local/bin/backup --dest /srv/backup\n"


def timer(*lines: str) -> str:
    return (
        "[Unit]\nDescription=test\n\n[Timer]\n" + "\n".join(lines) + "\n\n[Install]\nWantedBy=timers.target\n"
    )


def test_a_persistent_randomized_timer_with_two_calendars_and_a_zone() -> None:
    batch = systemd.read(
        timer(
            "OnCalendar=Mon..Fri *-*-* 02:30:00 Europe/Berlin",
            "OnCalendar=Sat 10:00 Europe/Berlin",
            "RandomizedDelaySec=15min",
            "Persistent=true",
        ),
        "backup.timer",
        SERVICE,
        "backup.service",
    )
    loads(batch)
    (entry,) = batch.entries
    assert entry.status is Status.MAPPED
    assert seed_of(entry) == {
        "dedupe_key": "systemd:backup.timer", "name": "backup", "target": "systemd", "action": "backup",
        "schedule": {"cron": ["30 2 * * 1-5", "0 10 * * 6"], "tz": "Europe/Berlin", "jitter": "15m"},
        "misfire": "coalesce",
    }  # fmt: skip
    assert batch.targets["systemd"]["actions"]["backup"]["argv"] == [
        "/usr/local/bin/backup",
        "--dest",
        "/srv/backup",
    ]


@pytest.mark.parametrize(
    ("calendar", "cron"),
    [
        ("daily", "0 0 * * *"),
        ("weekly", "0 0 * * 1"),
        ("*-*-01 04:00", "0 4 1 * *"),
        ("*:0/15", "0,15,30,45 * * * *"),
        ("Mon *-*-1..7 12:00", "0 12 * * 1#1"),
        ("*-*~01 23:00", "0 23 L * *"),
    ],
)
def test_calendars_cron_can_say_are_mapped(calendar: str, cron: str) -> None:
    batch = systemd.read(timer(f"OnCalendar={calendar}"), "t.timer", SERVICE, "t.service")
    assert seed_of(batch.entries[0])["schedule"] == {"cron": cron}
    assert seed_of(batch.entries[0])["misfire"] == "skip"


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (
            ["OnBootSec=15min", "OnUnitActiveSec=1w"],
            "OnBootSec, OnUnitActiveSec: a monotonic timer counts from",
        ),
        (["OnCalendar=2027-*-* 03:00"], "OnCalendar=2027-*-* 03:00: it names years, which cron cannot"),
        (["OnCalendar=*:*:30"], "OnCalendar=*:*:30: it fires at seconds other than :00"),
        (["OnCalendar=Fri *-*-13 12:00"], "OnCalendar=Fri *-*-13 12:00: it needs both its weekday and"),
        (["OnCalendar=*-*~03"], "OnCalendar=*-*~03: a day counted from the month's end other than the last"),
        (["OnCalendar=sometime"], "OnCalendar=sometime: oncalendar cannot read it"),
        (["OnCalendar=03:00 Europe/Berlin", "OnCalendar=04:00 Asia/Tokyo"], "its OnCalendar= lines name"),
        ([], "no OnCalendar=: nothing says when it fires"),
    ],
)
def test_what_cron_cannot_say_is_refused_with_the_reason(lines: list[str], reason: str) -> None:
    batch = systemd.read(timer(*lines), "t.timer", SERVICE, "t.service")
    (entry,) = batch.entries
    assert entry.status is Status.REFUSED
    assert entry.reason.startswith(reason), entry.reason
    assert batch.used_targets() == {}


def test_a_missing_service_and_a_privileged_exec_are_refused() -> None:
    missing = systemd.read(timer("OnCalendar=daily"), "t.timer", None, "t.service")
    assert missing.entries[0].reason == "its service t.service was not found beside the timer"
    plus = systemd.read(
        timer("OnCalendar=daily"), "t.timer", "[Service]\nExecStart=+/bin/true\n", "t.service"
    )
    assert "prefix '+'" in plus.entries[0].reason


def test_several_exec_lines_and_variables_run_through_a_marked_shell() -> None:
    service = "[Service]\nEnvironment=DEST=/srv\nExecStart=-/bin/prepare\nExecStart=/bin/copy $DEST\n"
    batch = systemd.read(timer("OnCalendar=daily"), "t.timer", service, "t.service")
    (entry,) = batch.entries
    assert entry.shell and entry.status is Status.NOTED
    assert batch.targets["systemd"]["actions"]["t"]["argv"] == [
        "/usr/bin/env", "DEST=/srv", "/bin/sh", "-c", '/bin/prepare || true && /bin/copy "$DEST"'
    ]  # fmt: skip
