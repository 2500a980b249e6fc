"""What a caller supplies is text on the operator's terminal, never markup, black-box: the real binary with
its stdout on a pty 80 columns wide, where the tables are drawn with rich (issue 35, defect 1).

A pause note or a run's message is written by whoever may pause the job or whose action printed it: a
remote agent, a script. Read as rich markup, `[/agent]` (a closing tag with nothing open) made `audit`,
`history` and `show` die with a MarkupError, and `[targets]` (a style rich does not know) vanished.
"""

from __future__ import annotations

import json

from .blackbox import Cronwright

HOSTILE = "[/agent] was here, it is not in [targets] (hello) [bold]plain[/bold] :smile:"


def with_loud_action(cw: Cronwright) -> None:
    """An action `sh.loud` whose message (the last line it prints) is HOSTILE."""
    argv = json.dumps(["/bin/sh", "-c", f"printf '%s\\n' {json.dumps(HOSTILE)}"])
    with cw.config.open("a", encoding="utf-8") as config:
        config.write(f'\n[targets.sh.actions.loud]\nargv = {argv}\ntimeout = "1m"\n')


def test_a_pause_note_with_brackets_is_shown_as_written_by_audit_at_a_terminal(cw: Cronwright) -> None:
    cw.ok("add", "report", "--target", "sh", "--action", "log", "--every", "1h")
    cw.ok("pause", "report", "--note", HOSTILE)

    shown = cw.at_terminal("audit", "report")

    assert shown.rc == 0, shown
    assert "MarkupError" not in shown.stderr
    # The note may wrap at 80 columns: read it back with the table's line breaks and padding undone.
    assert "".join(HOSTILE.split()) in "".join(shown.stdout.split()), shown.stdout


def test_a_run_message_with_brackets_is_shown_as_written_by_history_and_show_at_a_terminal(
    cw: Cronwright,
) -> None:
    with_loud_action(cw)
    cw.ok("add", "loud", "--target", "sh", "--action", "loud", "--every", "1h")
    ran = cw.run("run-now", "loud")
    assert ran.rc == 0, ran
    assert cw.json("history", "loud")["runs"][0]["message"] == HOSTILE

    for verb in (("history",), ("history", "loud"), ("show", "loud")):
        shown = cw.at_terminal(*verb)

        assert shown.rc == 0, shown
        assert "MarkupError" not in shown.stderr
        # Compared without the whitespace a narrow column's wrapping adds (a long word may fold).
        assert "".join(HOSTILE.split()) in "".join(shown.stdout.split()), (verb, shown.stdout)


def test_control_characters_in_a_note_are_shown_escaped_never_sent_to_the_terminal(cw: Cronwright) -> None:
    # OSC 52 asks the terminal to write its clipboard; CSI 2J clears the screen.
    note = "see \x1b]52;c;aGk=\x07 and \x1b[2J here"
    written = "see \\x1b]52;c;aGk=\\x07 and \\x1b[2J here"
    cw.ok("add", "report", "--target", "sh", "--action", "log", "--every", "1h")
    cw.ok("pause", "report", "--note", note)

    at_terminal = cw.at_terminal("audit", "report")
    shown = cw.ok("show", "report").stdout
    listed = cw.ok("list", "--wide").stdout
    audited = cw.ok("audit", "report").stdout

    assert "".join(written.split()) in "".join(at_terminal.stdout.split()), at_terminal.stdout
    assert "\x07" not in at_terminal.stdout
    for text in (shown, listed, audited):
        assert "\x1b" not in text and "\x07" not in text, text
    assert written in shown and written in audited
    assert "see \\x1b]52;c;aGk=\\x07" in listed  # the list clips a long note
