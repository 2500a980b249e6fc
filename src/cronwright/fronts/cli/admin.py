"""The verbs that set up and probe rather than schedule: init (a starter config), check (validate the
config, run nothing), token new (a source's bearer token), notify-test (a channel, now) and call (one raw
protocol message)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cronwright.core.sources import operator
from cronwright.errors import ConfigError, NameTaken, StoreError
from cronwright.fronts import render
from cronwright.fronts.cli.exits import fail
from cronwright.fronts.cli.group import cli
from cronwright.fronts.cli.runtime import Runtime, now, pass_runtime
from cronwright.fronts.wake import wake_local_nodes

if TYPE_CHECKING:
    from cronwright.config.settings import Config
    from cronwright.store.memory import MemoryStore
    from cronwright.targets.registry import Registry
    from cronwright.targets.secrets import Secrets

# Seconds `check` waits for each broker target to answer.
BROKER_PROBE_TIMEOUT = 5.0


@cli.command()
@click.option(
    "--folder", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True
)
def init(folder: Path) -> None:
    """Writes a starter cronwright.toml and an example python target."""
    from cronwright.targets.starter import write_starter

    try:
        written = write_starter(folder)
    except FileExistsError as error:
        fail(f"{error}; remove it or use another --folder", 1)
    for path in written:
        click.echo(f"wrote {path}")
    click.echo("next: cronwright serve   (or: make run)")


@cli.group()
def token() -> None:
    """Bearer tokens: how a source proves itself over HTTP, MCP and the dashboard."""


@token.command("new")
@click.argument("source")
@click.option("--json", "as_json", is_flag=True, help="Print source, token, token_sha256 and toml as JSON.")
def token_new(source: str, as_json: bool) -> None:
    """Prints a fresh random token for SOURCE, and the [sources.SOURCE] lines with its SHA-256 to paste
    into cronwright.toml. The token is shown once and kept nowhere: the config holds only its digest."""
    from cronwright.core.sources import OPERATOR, new_token, token_digest

    if source == OPERATOR:
        fail(f"'{OPERATOR}' is the local operator, which needs no token; name the source the caller acts as")
    fresh = new_token()
    digest = token_digest(fresh)
    # A bare TOML key where the name is one, else a quoted one.
    key = source if re.fullmatch(r"[A-Za-z0-9_-]+", source) else json.dumps(source)
    toml = f'[sources.{key}]\ntoken_sha256 = "{digest}"'
    if as_json:
        found = {"source": source, "token": fresh, "token_sha256": digest, "toml": toml}
        click.echo(json.dumps(found, ensure_ascii=False))
        return
    click.echo(f"A new token for the source {source}: give it to its caller; it is shown this once.\n")
    click.echo(f"  {fresh}\n")
    click.echo("Paste into cronwright.toml (or, to rotate, add the digest to the source's token_sha256")
    click.echo("list beside the old one), then restart serve:\n")
    click.echo(toml)


@cli.command()
@click.argument("message", required=False, default="-")
@pass_runtime
def call(runtime: Runtime, message: str) -> None:
    """Sends one protocol message (JSON, or - for stdin) as the operator and prints the reply."""
    text = sys.stdin.read() if message == "-" else message
    reply = runtime.app().protocol.handle(text, operator())
    assert reply is not None  # the operator is always trusted
    if reply.get("ok") and reply.get("persistence"):
        wake_local_nodes(runtime.app().node.store)
    click.echo(json.dumps(reply, ensure_ascii=False))
    if not reply.get("ok"):
        sys.exit(1)


@cli.command()
@pass_runtime
def check(runtime: Runtime) -> None:
    """Validates the config (targets, schemas, sources, seeds) and runs nothing."""
    from cronwright.app import build as build_app
    from cronwright.store.memory import MemoryStore
    from cronwright.targets.registry import build_registry

    config = runtime.config
    try:
        registry = build_registry(config)
        for name in config.sources:
            config.source(name)
        # Seeds are validated by upserting them into a throwaway memory store that holds the stored rows
        # of their dedupe keys, so that a check judges each seed as a boot would; nothing runs.
        store = MemoryStore()
        _copy_seed_rows(config, store)
        app = build_app(config, _NoRunner(), registry, store=store, seed=True)
        app.node.store.close()
    except ConfigError as error:
        fail(str(error))
    from cronwright.service.config_check import channel_secrets
    from cronwright.service.config_check import problems as config_problems
    from cronwright.targets.secrets import Secrets

    actions = [
        f"{row['target']}.{action['action']}" for row in registry.describe() for action in row["actions"]
    ]
    named = {secret for channel in config.notify.values() for secret in channel_secrets(channel)}
    resolvable = set(Secrets.from_config(config).known(named))
    problems = [
        *config_problems(config, actions, resolvable),
        *_program_problems(registry),
        *_broker_problems(registry, Secrets.from_config(config)),
    ]
    if problems:
        for problem in problems[:-1]:
            click.echo(f"cronwright: error: {problem}", err=True)
        fail(problems[-1])
    where = config.path or "built-in defaults"
    click.echo(
        f"{where}: ok: {render.counted(len(config.targets), 'target')}, "
        f"{render.counted(sum(len(t['actions']) for t in registry.describe()), 'action')}, "
        f"{render.counted(len(config.sources), 'source')}, {render.counted(len(config.seed), 'seed')}"
    )


def _copy_seed_rows(config: Config, copy: MemoryStore) -> None:
    """Copies into `copy` the store's rows of each seed's dedupe key, read only: a one-shot seed that
    already fired is then the no-op it is at boot, not a create of an instant long past. A store that
    does not exist yet is not made; one that cannot be read leaves every seed to be judged as new."""
    from cronwright.store import open_store, sqlite_file

    path = sqlite_file(config.store_url)
    if config.store_url == "memory:" or (path is not None and not path.exists()):
        return
    try:
        real = open_store(config.store_url)
        try:
            for seed in config.seed:
                key = seed.get("dedupe_key")
                for job, deleted in real.with_dedupe_key(key) if isinstance(key, str) else []:
                    try:
                        stored = copy.insert(job)
                    except NameTaken:
                        continue  # a deleted namesake; the row that counts is the live one
                    if deleted:
                        copy.delete(stored.id)
        finally:
            real.close()
    except StoreError as error:
        click.echo(f"cronwright: note: the store could not be read ({error}); seeds are checked as new",
                   err=True)  # fmt: skip


def _program_problems(registry: Registry) -> list[str]:
    """Each command action whose program cannot be started, said as what to fix."""
    from cronwright.targets.command import program_problem

    found = []
    for row in registry.describe():
        target = registry.target(row["target"])
        if target.kind == "command":
            for action in target.actions.values():
                problem = program_problem(target, action)
                if problem is not None:
                    found.append(problem)
    return found


def _broker_problems(registry: Registry, secrets: Secrets) -> list[str]:
    """Each broker target that cannot be reached, or whose secret is unset: found by connecting to it,
    sending nothing. Its libraries are imported only when the config has such a target."""
    from cronwright.targets.secrets import SecretMissing
    from cronwright.targets.specs import BROKER_KINDS

    found = []
    for row in registry.describe():
        target = registry.target(row["target"])
        if target.kind not in BROKER_KINDS:
            continue
        from cronwright.targets.brokers.sending import probe

        names = [name for name in (target.broker_secret, target.backend_secret) if name]
        try:
            values = secrets.resolve(names)
        except SecretMissing as missing:
            found.append(f"target {target.name}: {missing}")
            continue
        found += [f"target {problem}" for problem in probe(target, values, BROKER_PROBE_TIMEOUT)]
    return found


class _NoRunner:
    def run(self, job: Any, occurrence: Any) -> Any:
        raise RuntimeError("check runs nothing")

    def cancel(self, occurrence: Any) -> None:
        pass

    def close(self) -> None:
        pass


@cli.command("notify-test")
@click.argument("channel")
@pass_runtime
def notify_test(runtime: Runtime, channel: str) -> None:
    """Sends a test notification through a [notify.NAME] channel now, and says what happened (exit 1 if it
    was not delivered)."""
    from cronwright.notify.probe import probe
    from cronwright.notify.setup import channels_of
    from cronwright.targets.secrets import Secrets

    config = runtime.config
    if channel not in config.notify:
        known = ", ".join(config.notify) or "none: add a [notify.NAME] section to the config"
        fail(f"no channel named '{channel}'; the channels are: {known}")
    made = channels_of(config, Secrets.from_config(config))[channel]
    result = probe(made, runtime.node_label(), now(), config.node.tz)
    kind = config.notify[channel].kind
    if result.delivered:
        click.echo(f"delivered a test notification ({result.payload['id']}) through {channel} ({kind})")
        return
    click.echo(f"cronwright: {channel} ({kind}) did not take the test notification: {result.error}", err=True)
    sys.exit(1)
