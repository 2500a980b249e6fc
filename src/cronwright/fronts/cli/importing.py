"""`cronwright import FORMAT SOURCE`: schedules from another system as cronwright config (DESIGN semantic
44). The mapping is cronwright.importers' (pure), the reading service/import_sources.py's; this verb
writes the config (stdout or --out), says the report on stderr (or all as JSON), and with --apply creates
the seeds through the protocol as the operator, by dedupe_key, so a second apply changes nothing.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cronwright.core.sources import operator
from cronwright.errors import ConfigError, Invalid
from cronwright.fronts.cli.exits import fail
from cronwright.fronts.cli.group import cli
from cronwright.fronts.cli.runtime import Runtime, now, pass_runtime

if TYPE_CHECKING:
    from cronwright.importers.outcome import Batch

FORMATS = ("crontab", "kubernetes", "systemd", "apscheduler", "celery", "django-celery-beat")


@cli.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("source")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the config here.")
@click.option("--apply", "apply_", is_flag=True, help="Create the seeds through the protocol instead.")
@click.option("--dry-run", is_flag=True, help="With --apply: check each create, write nothing.")
@click.option("--compare", is_flag=True, help="Compare the source's firings with cronwright's for a year.")
@click.option("--after", metavar="ISO", help="Where --compare starts (default: now).")
@click.option("--system/--user", default=None, help="crontab: with a user column (default: by path).")
@click.option("--table", default="apscheduler_jobs", show_default=True, help="apscheduler: the job table.")
@click.option("--json", "as_json", is_flag=True, help="Print the report (and config) as one JSON object.")
@pass_runtime
def import_(
    runtime: Runtime,
    fmt: str,
    source: str,
    out: Path | None,
    apply_: bool,
    dry_run: bool,
    compare: bool,
    after: str | None,
    system: bool | None,
    table: str,
    as_json: bool,
) -> None:
    """Reads schedules from crontab, kubernetes, systemd, apscheduler, celery or django-celery-beat and
    writes [targets] and [[seed]] config, with a report of every entry: mapped, mapped with a note, or
    refused with the reason.

    SOURCE is a file (or - for stdin) for crontab and kubernetes, a .timer file for systemd (its service
    beside it), a database URL for apscheduler and django-celery-beat (the Django database holding its
    tables), and MODULE:ATTR (an app or a beat_schedule) for celery."""
    from cronwright.importers.toml_text import render
    from cronwright.service.import_sources import read_source

    if dry_run and not apply_:
        fail("--dry-run goes with --apply")
    try:
        batch = read_source(fmt, source, system, table)
    except ConfigError as error:
        fail(str(error))
    text = render(batch)
    reply: dict[str, Any] = {"ok": True, **batch.report()}
    if compare:
        reply["compare"] = _compare(runtime, batch, after)
    if apply_:
        reply["applied"] = _apply(runtime, batch, dry_run)
        reply["ok"] = all(row["result"] != "refused" for row in reply["applied"])
    elif out is not None:
        out.write_text(text, encoding="utf-8")
    elif not as_json:
        click.echo(text, nl=False)
    if as_json:
        if not apply_:
            reply["config"] = text
        click.echo(json.dumps(reply, ensure_ascii=False))
    else:
        _say(reply)
    if not reply["ok"]:
        sys.exit(1)


def _compare(runtime: Runtime, batch: Batch, after: str | None) -> list[dict[str, Any]]:
    from cronwright.importers.compare import compare
    from cronwright.timing.iso import parse_instant

    zone = runtime.config.node.tz
    try:
        start: datetime = parse_instant(after, zone, "after") if after else now()
    except Invalid as error:
        fail(f"--after: {error.message}")
    return [compare(entry, start, zone) for entry in batch.entries if entry.seed is not None]


def _apply(runtime: Runtime, batch: Batch, dry_run: bool) -> list[dict[str, Any]]:
    """Each seed created as the operator, by its dedupe_key: a key already live answers `deduped`."""
    missing = _missing_targets(runtime, batch)
    if missing:
        from cronwright.importers.toml_text import render

        click.echo(render(batch), nl=False)
        fail(f"the config lacks {', '.join(missing)} as this import needs them: add the [targets] above to "
             f"{runtime.config.path or 'cronwright.toml'} first", 1)  # fmt: skip
    protocol, applied = runtime.app().protocol, []
    for seed in batch.seeds:
        request: dict[str, Any] = {"action": "create_job", "job": dict(seed)}
        if dry_run:
            request["dry_run"] = True
        answer = protocol.handle(json.dumps(request), operator()) or {}
        result = "refused" if not answer.get("ok") else "deduped" if answer.get("deduped") else "created"
        if dry_run and answer.get("ok"):
            result = "would create"
        row = {"name": seed["name"], "dedupe_key": seed["dedupe_key"], "result": result}
        if not answer.get("ok"):
            row["message"] = f"{answer.get('error')}: {answer.get('message')}"
        elif result == "created" and seed["dedupe_key"] in batch.paused:
            paused = protocol.handle(json.dumps({"action": "pause", "name": seed["name"]}), operator()) or {}
            row["paused"] = bool(paused.get("ok"))
        applied.append(row)
    if not dry_run and any(row["result"] == "created" for row in applied):
        from cronwright.fronts.wake import wake_local_nodes

        wake_local_nodes(runtime.app().node.store)
    return applied


def _missing_targets(runtime: Runtime, batch: Batch) -> list[str]:
    """The targets (or their actions) this import runs that the config lacks, or holds otherwise."""
    from cronwright.config.settings import parse

    config = runtime.config
    missing = []
    for name, table in batch.used_targets().items():
        try:
            wanted = parse({"targets": {name: table}}).targets[name]
        except ConfigError:
            wanted = None  # a kind this cronwright does not know: only an equal table in the config does
        have = config.targets.get(name)
        # What the import decides must match; what the operator adds (path, cwd, env, secrets) may differ.
        if have is None or wanted is None or _core(have) != _core(wanted):
            missing.append(f"[targets.{name}]")
    return missing


def _core(target: Any) -> tuple[object, ...]:
    actions = {name: (action.argv, action.timeout) for name, action in target.actions.items()}
    return target.kind, target.module, actions


def say(text: str) -> None:
    click.echo(text, err=True)


def _say(reply: dict[str, Any]) -> None:
    counts = reply["counts"]
    say(f"{reply['format']}: {counts['mapped']} mapped, {counts['noted']} mapped with a note, "
        f"{counts['refused']} refused")  # fmt: skip
    for entry in reply["entries"]:
        label = "shell" if entry.get("shell") else entry["status"]
        name = f" -> {entry['name']}" if "name" in entry else ""
        say(f"  {label:8} {entry['where']}: {entry['text']}{name}")
        for note in entry.get("notes", []):
            say(f"           note: {note}")
        if entry.get("reason"):
            say(f"           reason: {entry['reason']}")
    for row in reply.get("compare", []):
        if row["reading"] == "none":
            say(f"  compare {row['name']}: not compared ({row['why']})")
            continue
        say(f"  compare {row['name']} ({row['reading']}, {row['zone']}): next {', '.join(row['next'])}")
        for diff in row["differ"]:
            side = "only the source" if diff["source"] else "only cronwright"
            say(f"           differs at {diff['at']}: {side} fires")
        if row["differences"] > len(row["differ"]):
            say(f"           ... {row['differences']} differing instants in all")
    for row in reply.get("applied", []):
        extra = f" ({row['message']})" if "message" in row else ""
        say(f"  {row['result']:12} {row['name']}{extra}")
