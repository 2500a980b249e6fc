"""crontab(5) files as cronie reads them, mapped entry by entry (DESIGN semantic 44). The fixtures are
written for these tests, modelled on what Debian packages install in /etc/cron.d and on a user's crontab."""

from __future__ import annotations

from cronwright.importers import crontab
from cronwright.importers.outcome import Status

from .conftest import by_line, fixture, loads, refused, seed_of


def test_a_sysstat_like_system_table_keeps_its_path_and_its_shell_lines_marked() -> None:
    batch = crontab.read(fixture("sysstat"), "sysstat", system=True)
    loads(batch)
    lines = by_line(batch)
    assert lines["sysstat:3"].status is Status.NOTED  # PATH=...: applied to the entries below it
    every_ten = lines["sysstat:6"]
    assert every_ten.shell and every_ten.status is Status.NOTED
    assert every_ten.notes == ("cron ran it as root; cronwright runs it as the node's user",)
    seed = seed_of(every_ten)
    assert seed["schedule"] == {"cron": "5-55/10 * * * *"}
    assert seed["overlap"] == "allow"
    action = batch.targets["crontab-sysstat"]["actions"][seed["action"]]
    assert action["argv"] == [
        "/usr/bin/env", "PATH=/usr/lib/sysstat:/usr/sbin:/usr/bin:/sbin:/bin",
        "/bin/sh", "-c", "command -v debian-sa1 > /dev/null && debian-sa1 1 1",
    ]  # fmt: skip
    assert seed_of(lines["sysstat:9"])["schedule"] == {"cron": "59 23 * * *"}
    assert [entry.where for entry in batch.entries] == ["sysstat:3", "sysstat:6", "sysstat:9"]


def test_a_php_like_session_cleaner_runs_its_if_through_a_marked_shell() -> None:
    batch = crontab.read(fixture("php"), "php", system=True)
    loads(batch)
    (entry,) = batch.entries
    assert entry.shell
    seed = seed_of(entry)
    assert seed["schedule"] == {"cron": "09,39 * * * *"}
    argv = batch.targets["crontab-php"]["actions"][seed["action"]]["argv"]
    assert argv[:2] == ["/bin/sh", "-c"] and argv[2].startswith("[ -x /usr/lib/php/sessionclean ] && if")


def test_an_e2scrub_like_table_keeps_a_leading_assignment_in_its_shell() -> None:
    batch = crontab.read(fixture("e2scrub"), "e2scrub", system=True)
    loads(batch)
    sunday, daily = batch.entries
    assert seed_of(sunday)["schedule"] == {"cron": "30 3 * * 0"}
    assert seed_of(daily)["schedule"] == {"cron": "10 3 * * *"}
    assert sunday.shell and daily.shell  # `|| SERVICE_MODE=1 ...` is shell syntax


def test_a_user_crontab_maps_settings_macros_stdin_and_refuses_what_cron_cannot_schedule() -> None:
    batch = crontab.read(fixture("user.crontab"), "user.crontab", system=False)
    loads(batch)
    lines = by_line(batch)
    assert "nothing is mailed" in lines["user.crontab:2"].notes[0]
    assert lines["user.crontab:4"].notes == ("the entries below are read in Europe/Berlin (schedule tz)",)
    daily = seed_of(lines["user.crontab:6"])
    assert daily["schedule"] == {"cron": "0 0 * * *", "tz": "Europe/Berlin", "jitter": "5m"}
    rotate = batch.targets["crontab-user-crontab"]["actions"][daily["action"]]["argv"]
    # A plain command needs no shell: an argv, with the table's variables set through env(1).
    assert rotate == ["/usr/bin/env", "SHELL=/bin/bash", "/home/me/bin/rotate-logs", "--keep", "7"]
    assert not lines["user.crontab:6"].shell
    # dom and dow both restricted: cron ORs them, and so does cronwright's cron (cronsim, cronie's rules).
    invoice = seed_of(lines["user.crontab:9"])
    assert invoice["schedule"]["cron"] == "0 9 1,15 * MON"
    invoice_argv = batch.targets["crontab-user-crontab"]["actions"][invoice["action"]]["argv"]
    assert invoice_argv[-3:] == ["/home/me/bin/invoice", "first and fifteenth", "or mondays"]
    # `%`: the command ends, the rest is its standard input with each further % a newline: a marked shell.
    mail = lines["user.crontab:10"]
    assert mail.shell and "standard input" in mail.notes[-1]
    script = batch.targets["crontab-user-crontab"]["actions"][seed_of(mail)["action"]]["argv"][-1]
    assert (
        script == "printf '%s' 'Hello,\nthe day starts.\n' | { mail -s \"Good morning\" me@example.invalid\n}"
    )
    assert script.startswith("printf")
    # `\%` is a plain percent sign, which leaves this line plain: an argv.
    percent = batch.targets["crontab-user-crontab"]["actions"][seed_of(lines["user.crontab:11"])["action"]]
    assert percent["argv"][-3:] == ["echo", "100%", "done"] and not lines["user.crontab:11"].shell
    # SHELL=/bin/bash runs the shell lines below it.
    assert batch.targets["crontab-user-crontab"]["actions"][seed_of(mail)["action"]]["argv"][-3:-1] == [
        "/bin/bash",
        "-c",
    ]
    assert refused(batch) == {
        "user.crontab:7": "@reboot runs at the cron daemon's start, which no schedule can say; start it "
        "from the system's boot (a systemd unit) instead",
        "user.crontab:12": lines["user.crontab:12"].reason,
        "user.crontab:13": "neither an entry (five time fields or an @ macro) nor NAME=value",
        "user.crontab:14": "@fortnightly is not a crontab macro (@yearly, @annually, @monthly, @weekly, "
        "@daily, @midnight, @hourly, @reboot)",
    }
    assert "February" in lines["user.crontab:12"].reason, lines["user.crontab:12"].reason


def test_every_line_but_comments_and_blanks_is_accounted_for() -> None:
    text = fixture("user.crontab")
    batch = crontab.read(text, "user.crontab", system=False)
    meaningful = [n for n, line in enumerate(text.splitlines(), 1) if line.strip() and line[0] != "#"]
    assert [int(entry.where.rsplit(":", 1)[1]) for entry in batch.entries] == meaningful


def test_the_same_table_maps_to_the_same_keys_and_a_repeated_line_gets_its_own() -> None:
    text = "0 5 * * * /bin/true\n0 5 * * * /bin/true\n"
    first, second = crontab.read(text, "t", False), crontab.read(text, "t", False)
    keys = [seed["dedupe_key"] for seed in first.seeds]
    assert keys == [seed["dedupe_key"] for seed in second.seeds]
    assert len(set(keys)) == 2 and keys[1] == keys[0] + "-2"
