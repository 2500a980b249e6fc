"""The `cronwright` command: the click group with its global options, and `main`, the console script.

Exit status: 0 on success, 1 when the request was refused (`ok: false`), 2 on a usage error (bad options,
a bad config, a store that cannot be opened), 3 when `run-now`'s run ended other than ok. `--json` prints the
protocol's reply exactly. The verbs join the group from the modules beside this one (see __init__.py).
"""

from __future__ import annotations

import logging
import os
import sys

import click

from cronwright._version import version_line
from cronwright.errors import StoreError
from cronwright.fronts.cli.exits import fail
from cronwright.fronts.cli.options import DeclaringCommand
from cronwright.fronts.cli.runtime import Runtime


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    metavar="PATH",
    help="Config file (else $CRONWRIGHT_CONFIG, ./cronwright.toml).",
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, param, value: _print_version(ctx, value),
    help="Show the version and the build (the git commit it was built from), and exit.",
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """cronwright: schedules that never run twice, never run forever, and run only what was allowed."""
    runtime = Runtime(config_path)
    ctx.obj = runtime
    ctx.call_on_close(runtime.close)


def _print_version(ctx: click.Context, value: bool) -> None:
    # Not looked up in the package metadata: that is slow, and names no build.
    if value and not ctx.resilient_parsing:
        click.echo(version_line())
        ctx.exit()


cli.command_class = DeclaringCommand  # each verb's declared options are made when it is run or helped


def main() -> None:
    """The console script. Every usage error is one line on stderr and exit 2."""
    try:
        cli.main(prog_name="cronwright", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.Abort:
        fail("aborted", 1)
    except click.ClickException as error:
        fail(error.format_message(), error.exit_code)
    except StoreError as error:
        fail(str(error))
    _end_at_once()


def _end_at_once() -> None:
    """Ends a verb that went well without the interpreter's teardown, once its output is out.

    By then the verb has closed what it opened (the store, the workers, the node's lease) and every
    record is durable: what is left is freeing the objects of an interpreter about to end, which costs a
    `tick` about 40 ms, a fifth of one with nothing due (a tick runs every minute, from cron). Output
    that cannot be flushed (a closed pipe) ends the process the usual way, with the usual message.
    """
    logging.shutdown()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(0)
