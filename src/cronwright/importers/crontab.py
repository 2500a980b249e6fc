"""crontab(5) as cronie and Vixie cron read it: a user crontab, or a system one (/etc/crontab, /etc/cron.d/*)
whose entries carry a user column.

Each line is an environment setting (`NAME = value`), an entry (five time fields or an `@` macro, the user
for a system table, then the command), a comment or blank. Every setting and entry gets a report row:

- `CRON_TZ` sets the zone of the entries after it; `RANDOM_DELAY` (cronie, minutes) their jitter; `SHELL`
  the shell of their shell commands; `MAILTO`/`MAILFROM` have no equivalent (the output is kept in the run
  history); every other variable is set for the entries after it through env(1).
- The time fields are read by cronwright's own cron (cronsim: cronie's rules, day-of-month and day-of-week
  OR-ed when both are restricted); an expression it refuses is refused with its words. `@reboot` is refused.
- `%` ends the command: what follows goes to its standard input, each further `%` a newline (`\\%` is a
  plain `%`); only a shell can feed that, so such a line becomes a marked `sh -c`.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from cronwright.errors import Invalid
from cronwright.importers.outcome import Batch, Reading, digest, slug
from cronwright.importers.shell_words import Command, command, with_environment
from cronwright.timing.cron import CronExpression
from cronwright.timing.zones import zone as named_zone

FORMAT = "crontab"
_ENV = re.compile(r"^\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1\s*=\s*(.*?)\s*$")
_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# What cron gave every command that a command target does not (it passes only what its env lists).
GENERAL = (
    "cron ran each command through $SHELL with HOME, LOGNAME, SHELL and PATH=/usr/bin:/bin set; a command "
    "target runs an argv with only cronwright's variables, and the table's own variable lines, set through "
    "env(1). Plain commands run without a shell; the others are marked shell.",
    'cron sets no time limit; each action here has timeout = "1d", and overlap = "allow" keeps cron\'s '
    "rule that a slow run never holds back the next.",
)


def read(text: str, label: str, system: bool) -> Batch:
    """The mapping of crontab `text`. `label` names it (a file's name: its target is `crontab-LABEL`);
    `system` says whether its entries carry a user column."""
    batch = Batch(FORMAT, GENERAL)
    target = "crontab" if label in ("", "-") else f"crontab-{slug(label, 40)}"
    batch.target(target, {"kind": "command"})
    state: dict[str, Any] = {"env": {}, "tz": None, "shell": "/bin/sh", "jitter": None}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{label or 'stdin'}:{number}"
        if line[0] in "@*-0123456789":
            _entry(batch, target, where, line, state, system)
        else:
            _setting(batch, where, line, state)
    return batch


def _setting(batch: Batch, where: str, line: str, state: dict[str, Any]) -> None:
    found = _ENV.match(line)
    if found is None:
        batch.refuse(where, line, "neither an entry (five time fields or an @ macro) nor NAME=value")
        return
    name, value = found.group(2), _unquote(found.group(3))
    if name == "CRON_TZ":
        try:
            state["tz"] = named_zone(value).key
        except Invalid as error:
            batch.refuse(where, line, f"CRON_TZ: {error.message}")
            return
        _applied(batch, where, line, f"the entries below are read in {state['tz']} (schedule tz)")
    elif name == "RANDOM_DELAY":
        if not value.isdigit():
            batch.refuse(where, line, "RANDOM_DELAY must be a whole number of minutes")
            return
        state["jitter"] = f"{int(value)}m" if int(value) else None
        _applied(batch, where, line, "cronie delays each job by up to this many minutes: schedule jitter")
    elif name in ("MAILTO", "MAILFROM"):
        _applied(batch, where, line, f"{name}: nothing is mailed; each run's output is kept in its history")
    else:
        if name == "SHELL":
            state["shell"] = value
        state["env"] = {**state["env"], name: value}
        _applied(batch, where, line, f"set for the commands below through env(1) ({name})")


def _applied(batch: Batch, where: str, line: str, note: str) -> None:
    """A setting is reported as the entries it shapes: a row with its note and no seed of its own."""
    from cronwright.importers.outcome import Entry, Status

    batch.entries.append(Entry(where, line, Status.NOTED, (note,)))


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _split(line: str, system: bool) -> tuple[str, str | None, str] | str:
    """(time fields, user, command), or the reason the line is not an entry."""
    quiet = line.startswith("-")  # cronie: `-` before the minute field only turns off syslog logging
    body = line[1:] if quiet else line
    parts = body.split(None, 1 if body.startswith("@") else 5)
    fields = 1 if body.startswith("@") else 5
    if len(parts) <= fields:
        return "too few fields: an entry is five time fields (or an @ macro) and a command"
    when, rest = " ".join(parts[:fields]), parts[fields]
    user: str | None = None
    if system:
        pieces = rest.split(None, 1)
        if len(pieces) < 2:
            return "a system crontab entry needs a user column and then the command"
        user, rest = pieces
    return when, user, rest


def _percent(rest: str) -> tuple[str, str | None]:
    """The command and its standard input: crontab(5)'s `%`, with `\\%` a literal `%`."""
    out: list[str] = []
    stdin: list[str] | None = None
    i = 0
    while i < len(rest):
        char = rest[i]
        if char == "\\" and i + 1 < len(rest) and rest[i + 1] == "%":
            (out if stdin is None else stdin).append("%")
            i += 2
            continue
        if char == "%":
            if stdin is None:
                stdin = []
            else:
                stdin.append("\n")
        else:
            (out if stdin is None else stdin).append(char)
        i += 1
    return "".join(out), None if stdin is None else "".join(stdin)


def _entry(batch: Batch, target: str, where: str, line: str, state: dict[str, Any], system: bool) -> None:
    split = _split(line, system)
    if isinstance(split, str):
        batch.refuse(where, line, split)
        return
    when, user, rest = split
    if when == "@reboot":
        batch.refuse(
            where,
            line,
            "@reboot runs at the cron daemon's start, which no schedule can say; start it "
            "from the system's boot (a systemd unit) instead",
        )
        return
    if when.startswith("@") and when not in _MACROS:
        batch.refuse(where, line, f"{when} is not a crontab macro ({', '.join(_MACROS)}, @reboot)")
        return
    try:
        expression = CronExpression.parse(when)
    except Invalid as error:
        batch.refuse(where, line, error.message)
        return
    notes: list[str] = []
    if line.startswith("-"):
        notes.append("the leading '-' (no syslog line) has no meaning here; runs are always recorded")
    if user is not None:
        notes.append(f"cron ran it as {user}; cronwright runs it as the node's user")
    run, stdin = _percent(rest)
    how = command(run, state["shell"])
    if stdin is not None:
        # Only a shell can hand the text to the command's stdin: the envelope takes stdin otherwise.
        script = f"printf '%s' {shlex.quote(stdin)} | {{ {run.strip()}\n}}"
        how = Command((state["shell"], "-c", script), True)
        notes.append("the text after % is its standard input, piped in by the shell")
    argv = with_environment(how.argv, state["env"])
    schedule: dict[str, Any] = {"cron": str(expression)}
    if state["tz"]:
        schedule["tz"] = state["tz"]
    if state["jitter"]:
        schedule["jitter"] = state["jitter"]
    words = shlex.split(run, posix=True) if not how.shell else run.split()
    program = words[0].rsplit("/", 1)[-1] if words else "shell"
    name = f"{target.removeprefix('crontab-')}-{slug(' '.join([program, *words[1:3]]), 40)}"
    seed = {
        "name": name.removeprefix("crontab-"),
        "dedupe_key": f"{target}:{digest(str(expression), state['tz'], user, rest, state['env'])}",
        "schedule": schedule,
        "overlap": "allow",
    }
    action = {"argv": list(argv), "timeout": "1d"}
    reading = Reading("cron", (when,), state["tz"])
    batch.add(where, line, target, action, seed, notes, how.shell, reading)
