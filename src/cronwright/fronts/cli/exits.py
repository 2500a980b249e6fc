"""How a verb ends: its reply printed as JSON or for people, a refusal said in the CLI's own terms (its
verbs, its options), and the exit status: 1 for a refusal, 2 for a usage error (`fail`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from cronwright.fronts.cli.options import DeclaredOption

Reply = dict[str, Any]


def fail(message: str, status: int = 2) -> NoReturn:
    click.echo(f"cronwright: error: {message}", err=True)
    sys.exit(status)


def finish(reply: Reply, as_json: bool, human: Callable[[Reply], None]) -> None:
    """Prints a reply, as JSON or for people, and exits 1 if it was a refusal."""
    if as_json:
        click.echo(json.dumps(reply, ensure_ascii=False))
    elif reply.get("ok"):
        human(reply)
    else:
        field = f" ({_flag_for(reply['field'])})" if reply.get("field") else ""
        message = in_cli_terms(str(reply.get("message")))
        click.echo(f"cronwright: refused: {reply.get('error')}{field}: {message}", err=True)
    if not reply.get("ok"):
        sys.exit(1)


# The protocol's actions whose CLI verb has another name: a refusal's advice names the verb to type.
VERB_OF = {"create_job": "add", "get": "show", "delete": "remove", "run_now": "run-now"}


def in_cli_terms(message: str) -> str:
    """A protocol message with the actions it names (`delete`) named as the CLI's verbs (`remove`)."""
    for action, verb in VERB_OF.items():
        message = message.replace(f"`{action}`", f"`{verb}`")
    return message


# The request fields the CLI reads its own way, by the option or argument that gives them.
_FLAGS = {"name": "NAME", "schedule": "--cron/--every/--at", "run_at": "--at", "args": "--args",
          "retry_backoff_ms": "--retry-backoff", "after_name": "--after", "expression": "EXPR",
          "from": "--from"}  # fmt: skip


def _flag_for(field: str) -> str:
    """A refused request field in the CLI's own terms: the option of this verb that gives it."""
    context = click.get_current_context(silent=True)
    if context is not None:
        for param in context.command.params:
            if isinstance(param, DeclaredOption) and param.field == field:
                return param.opts[0]
    return _FLAGS.get(field.split(".")[-1], field)


def json_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print the protocol reply as JSON.")(function)
