"""At 80 columns every instant stays whole (issue 35, defect 6; docs/cli.md: every instant whole, to the
second, with its offset, at any width): what does not fit wraps, never an ellipsis inside an instant.

Through a real terminal (a pty) 80 columns wide, as an operator sees `history` and `audit`."""

from __future__ import annotations

import re

from .blackbox import Cronwright

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
