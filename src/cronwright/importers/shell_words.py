"""A command line from another scheduler as an argv, or as an explicit `sh -c` when only a shell can run it.

cron runs every command line through `$SHELL -c`. Splitting a line into words the way the shell would is
exact only for plain words and quotes: anything the shell would expand or interpret (pipes, redirections,
`&&`, `;`, variables, globs, `~`, backquotes, a leading `NAME=value`) keeps its shell, and the report says
so (semantic 44: a shell runs only where the report says). Being conservative costs a marked shell; guessing
wrong would change what runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

# Characters the shell gives a meaning to, outside single quotes. `#` starts a comment after a blank.
_SPECIAL = re.compile(r"[|&;<>()$`\\*?\[\]{}~!#\n]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True, slots=True)
class Command:
    """How to run a line: `argv` without a shell, or `shell=True` and argv `[SHELL, "-c", line]`."""

    argv: tuple[str, ...]
    shell: bool


def needs_shell(line: str) -> bool:
    """Whether `line` means something only a shell gives it: conservative, so a plain line is really one."""
    unquoted = re.sub(r"'[^']*'", "''", line)  # single quotes keep everything literal
    if _SPECIAL.search(unquoted):
        return True
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        return True  # an unbalanced quote: leave the shell to refuse it as cron's would
    return not words or bool(_ASSIGNMENT.match(words[0]))


def command(line: str, shell: str = "/bin/sh") -> Command:
    line = line.strip()
    if needs_shell(line):
        return Command((shell, "-c", line), True)
    return Command(tuple(shlex.split(line, posix=True)), False)


def with_environment(argv: tuple[str, ...], variables: dict[str, str]) -> tuple[str, ...]:
    """argv run with `variables` set, through env(1) rather than a shell: `env NAME=value PROGRAM ARGS`.
    env(1) looks the program up on the PATH it has just set, as cron's shell would."""
    if not variables:
        return argv
    return ("/usr/bin/env", *(f"{name}={value}" for name, value in variables.items()), *argv)
