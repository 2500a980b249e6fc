"""`cronwright migrate [--check]`: what an upgrade of the store's schema does, and doing it (issue 38)."""

from __future__ import annotations

import click

from cronwright.errors import ConfigError, StoreError
from cronwright.fronts.cli.exits import fail
from cronwright.fronts.cli.group import cli
from cronwright.fronts.cli.runtime import Runtime, pass_runtime


@cli.command()
@click.option("--check", is_flag=True, help="Say what an upgrade would do, and change nothing.")
@pass_runtime
def migrate(runtime: Runtime, check: bool) -> None:
    """Says what upgrading the store's schema to this release does (--check changes nothing), or does it,
    as the first node of this release to boot would. Exit 1 when the store is newer than this release."""
    from cronwright.store.upgrades import plan

    url = runtime.config.store_url
    try:
        found = plan(url)
    except (ConfigError, StoreError) as error:
        fail(str(error))
    if found.newer or check or not found.pending:
        click.echo(found.describe())
        if found.newer:
            raise SystemExit(1)
        return
    from cronwright.store import open_store

    try:
        open_store(url).close()  # opening migrates, under the store's own lock
    except (ConfigError, StoreError) as error:
        fail(str(error))
    click.echo(f"{found.where}: migrated from schema version {found.stored} to {found.known}")
