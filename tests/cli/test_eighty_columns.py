"""At 80 columns every instant stays whole (issue 35, defect 6; docs/cli.md: every instant whole, to the
second, with its offset, at any width): what does not fit wraps, never an ellipsis inside an instant.

Through a real terminal (a pty) 80 columns wide, as an operator sees `history` and `audit`."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time

from .blackbox import TIMEOUT, Cronwright

INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}")


def test_history_and_audit_at_80_columns_keep_every_instant_whole(cw: Cronwright) -> None:
    name = "nightly-backup-of-the-reporting-database"  # a long name, as real ones are
    cw.ok("add", name, "--target", "sh", "--action", "fail", "--cron", "0 7 * * *")
    cw.run("run-now", name)  # fails on purpose: its message takes room too
    cw.ok("pause", name, "--note", "a long note that will not fit beside the instants on one line")

    for verb in ("history", "audit"):
        shown = cw.at_terminal(verb, columns=80)
        assert shown.rc == 0, shown
        lines = shown.stdout.splitlines()
        assert all(len(line.rstrip()) <= 80 for line in lines), shown.stdout
        assert "…" not in shown.stdout, shown.stdout  # nothing cut: what does not fit wraps
        first_column = [line.split()[0] for line in lines[1:] if line and not line[0].isspace()]
        assert first_column and all(INSTANT.fullmatch(cell) for cell in first_column), shown.stdout


LOUD = "a message longer than eighty characters, as a stack trace or a report of what failed, ends here"
ALERTS = f"""
[targets.sh.actions.loud]
argv = ["/bin/sh", "-c", "echo '{LOUD}'; exit 1"]

[notify.ops]
kind = "webhook"
url = "http://127.0.0.1:9/hook"
signing_secret = "CW_TEST_SIGNING"

[[alert]]
on = ["failed", "breaker_paused"]
notify = ["ops"]
"""
NAME = "nightly-backup-of-the-reporting-database"
BUENOS_AIRES = "America/Argentina/Buenos_Aires"
LONG_CRON = "5,20,35,50 6-9,12-14,17-19 1-7,15-21 JAN-MAR,JUN-AUG MON-FRI"


def whole_instants(text: str) -> bool:
    """Every date printed starts an instant whole to the second, with its offset."""
    return all(INSTANT.match(text, found.start()) for found in re.finditer(r"\d{4}-\d{2}-\d{2}", text))


def test_notifications_list_and_audit_at_80_columns_lose_nothing(cw: Cronwright) -> None:
    """Issue 35, defect 6: `notifications` showed `breaker_p…` and `2026-12-0…`; `list` dropped the zone
    marker of a long expression; `audit` split a cron expression over lines."""
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + ALERTS, encoding="utf-8")
    cw.ok("add", NAME, "--target", "sh", "--action", "fail", "--cron", LONG_CRON, "--tz", BUENOS_AIRES)
    argv, env = cw.command("run-now", NAME)
    env["CW_TEST_SIGNING"] = "s3cret"
    subprocess.run(argv, env=env, cwd=cw.folder, capture_output=True, timeout=TIMEOUT, check=False)

    shown = {verb: cw.at_terminal(verb, columns=80) for verb in ("notifications", "list", "audit")}
    for verb, result in shown.items():
        assert result.rc == 0, result
        assert all(len(line) <= 80 for line in result.stdout.splitlines()), (verb, result.stdout)
    for verb in ("notifications", "audit"):  # `list` has its compact instants, marked in its footer
        assert whole_instants(shown[verb].stdout), shown[verb].stdout
    notes = shown["notifications"].stdout
    assert "…" not in notes and NAME in notes and " failed " in notes, notes
    assert "(Buenos_Aires)" in shown["list"].stdout, shown["list"].stdout
    assert "Europe/Berlin, UTC+01 unless marked" in shown["list"].stdout
    assert any(f"'{LONG_CRON}'" in line for line in shown["audit"].stdout.splitlines()), shown["audit"].stdout


def test_piped_history_cuts_no_message(cw: Cronwright) -> None:
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + ALERTS, encoding="utf-8")
    cw.ok("add", "loud", "--target", "sh", "--action", "loud", "--every", "1d")
    cw.run("run-now", "loud")
    argv, env = cw.command("history")
    env["COLUMNS"] = "80"  # a pipe is no terminal, whatever width the shell exports

    piped = subprocess.run(argv, env=env, cwd=cw.folder, capture_output=True, text=True, timeout=TIMEOUT)

    assert piped.returncode == 0, piped
    assert "what failed, ends here" in piped.stdout, piped.stdout


def test_serve_s_start_lines_fit_80_columns_and_say_each_thing_once(cw: Cronwright) -> None:
    argv, env = cw.command("serve")
    env["TERM"] = "xterm-256color"
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 80, 0, 0))
    said = b""
    with subprocess.Popen(
        argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env, cwd=cw.folder
    ) as serve:
        os.close(terminal)
        try:
            deadline = time.monotonic() + TIMEOUT
            while b"dashboard at /ui/" not in said and time.monotonic() < deadline:
                ready, _, _ = select.select([main], [], [], 1.0)
                if ready:
                    said += os.read(main, 65536)
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=TIMEOUT)
            os.close(main)
    text = said.decode().replace("\r\n", "\n")
    start = text[: text.index("dashboard at /ui/")]

    # A line breaks between words: only a word longer than a line (the store's path) may overflow it.
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in start.splitlines()), start
    assert start.count(str(cw.store)) == 1 and "store=" not in start and "url=" not in start, start
