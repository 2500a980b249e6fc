"""The verbs that read and change nothing: list, show, history, audit, status, targets, preview and
notifications, each a protocol request whose reply is printed as JSON or fitted for people."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from typing import Any

import click

from cronwright.fronts import render
from cronwright.fronts.cli.exits import Reply, finish, json_option
from cronwright.fronts.cli.group import cli
from cronwright.fronts.cli.options import declared
from cronwright.fronts.cli.runtime import Runtime, now, pass_runtime
from cronwright.fronts.listing import lay_out


def _columns() -> int | None:
    """The width to fit: $COLUMNS, else the terminal's; None when piped without $COLUMNS (no limit)."""
    if os.environ.get("COLUMNS", "").isdigit() or sys.stdout.isatty():
        return max(shutil.get_terminal_size().columns, 40)
    return None


def _warn_unreadable(reply: Reply) -> None:
    for row in reply.get("unreadable", []):
        click.echo(f"warning: job {row['id']} is left out: {row['error']}", err=True)


@cli.command("list")
@declared("ListJobs", "state")
@declared("ListJobs", "target")
@declared("ListJobs", "source", metavar="S")
@declared("ListJobs", "limit")
@declared("ListJobs", "after_name", "--after", metavar="NAME")
@click.option("--wide", is_flag=True, help="Every column, every instant in full ISO-8601, however wide.")
@json_option
@pass_runtime
def list_jobs(
    runtime: Runtime,
    state: str | None,
    target: str | None,
    source: str | None,
    limit: int | None,
    after_name: str | None,
    wide: bool,
    as_json: bool,
) -> None:
    """The schedules, like `systemctl list-timers`, fitted to the terminal's width ($COLUMNS)."""

    def human(reply: Reply) -> None:
        rows = reply["jobs"]
        if not rows:
            click.echo("no schedules")
            _warn_unreadable(reply)
            return
        shown = lay_out(rows, now(), runtime.config.node.tz, None if wide else _columns())
        for line in shown.lines:
            click.echo(line)
        click.echo(f"\n{len(rows)} schedule{'s' if len(rows) != 1 else ''}.")
        for note in shown.notes:
            click.echo(note)
        following = reply.get("next_after_name")
        if following is not None:
            click.echo(f"More follow: add --after {shlex.quote(following)} for the next page.")
        _warn_unreadable(reply)

    reply = runtime.call(
        "list", state=state, target=target, source=source, limit=limit, after_name=after_name
    )
    finish(reply, as_json, human)


def output_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--output", "with_output", is_flag=True, help="Show each run's captured output too.")(
        function
    )


def _outputs(runs: list[Reply]) -> None:
    """Each run's captured output under a line that names the run; runs with none are left out."""
    for run in runs:
        text = str(run.get("output") or "")
        if not text:
            continue
        click.echo(
            f"\n--- {run['fire_id']} attempt {run['attempt']}: {run['outcome']} at {run['finished_at']}"
        )
        click.echo(text.rstrip("\n"))


@cli.command()
@click.argument("name")
@output_option
@json_option
@pass_runtime
def show(runtime: Runtime, name: str, with_output: bool, as_json: bool) -> None:
    """One schedule, with its recent runs."""

    def human(reply: Reply) -> None:
        job = reply["job"]
        last = job["last_run"] or {}
        said = " ".join(str(last[key]) for key in ("fired_at", "outcome", "message") if last.get(key))
        waits = f" ({job['buffered_for']} waits)" if job.get("buffered_for") else ""
        if job.get("overlap") == "replace" or job.get("cancelled"):
            waits += f", {job.get('cancelled', 0)} cancelled"
        if job.get("overlap") == "allow":
            beside, flying = job.get("overlapped", 0), job.get("in_flight", 0)
            waits = f" ({beside} started beside another, {flying} in flight)"
        render.details(
            [
                ("name", f"{job['name']} (id {job['id']})"),
                ("runs", f"{job['target']}.{job['action']} {json.dumps(job['args'])}"),
                ("schedule", render.schedule_text(job["schedule"])),
                ("state", job["state"] + (f" (by {job['paused_by']})" if job["paused_by"] else "")),
                *_paused(job),
                ("next", _next_text(job)),
                ("ends", job["ends_at"]),
                ("last", said or "-"),
                ("failures", f"{job['consecutive_failures']} in a row (breaker: {job['breaker_threshold']})"),
                ("skipped", f"{job['skipped']['overlap']} overlap, {job['skipped']['misfire']} misfire, "
                            f"{job['skipped'].get('calendar', 0)} calendar"),
                ("policy", f"misfire {job['misfire']}, overlap {job.get('overlap', 'skip')}{waits}, "
                           f"{render.counted(job['max_attempts'], 'attempt')}, "
                           f"backoff {job['retry_backoff_ms']}ms"),
                ("dedupe", f"{job['dedupe_key'] or '-'}{' (once)' if job['once'] else ''}"),
                ("created", f"{job['created_at']} by {job['created_by']}"),
            ]
        )  # fmt: skip
        upcoming = reply.get("next_firings") or []
        if upcoming:
            click.echo("")
            for index, firing in enumerate(upcoming):
                label = "firings: " if index == 0 else ""
                first, *rest = render.firing_parts(firing)
                click.echo(render.fitted([f"{label:>10}{first}", *rest], 12))
        if reply["runs"]:
            click.echo("")
            render.table(render.RUN_COLUMNS, [render.run_cells(run) for run in reply["runs"]])
            if with_output:
                _outputs(reply["runs"])

    finish(runtime.call("get", name=name), as_json, human)


def _paused(job: Reply) -> list[tuple[str, str]]:
    """show's lines for a paused schedule: since when, and why."""
    if not job.get("paused_at") and not job.get("pause_note"):
        return []
    return [("paused", f"since {job.get('paused_at') or '-'}: {job.get('pause_note') or '(no note)'}")]


@cli.command()
@click.argument("name", required=False)
@declared("History", "limit", default=20)
@declared("History", "before", metavar="RUN")
@output_option
@json_option
@pass_runtime
def history(
    runtime: Runtime, name: str | None, limit: int, before: int | None, with_output: bool, as_json: bool
) -> None:
    """Recent runs, newest first, of one schedule or of all; a page at a time."""

    def human(reply: Reply) -> None:
        if not reply["runs"]:
            click.echo("no runs")
            return
        render.table(render.RUN_COLUMNS, [render.run_cells(run) for run in reply["runs"]])
        if with_output:
            _outputs(reply["runs"])
        following = reply.get("next_before")
        if following is not None:
            click.echo(f"\nMore follow: add --before {following} for the next page.")

    finish(runtime.call("history", name=name, limit=limit, before=before), as_json, human)


@cli.command()
@click.argument("name", required=False)
@click.option("--source", metavar="S", help="Only the changes this source made (cli: the operator).")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option(
    "--before", type=click.IntRange(1), metavar="ID", help="Only entries older than the entry with this id."
)
@json_option
@pass_runtime
def audit(
    runtime: Runtime, name: str | None, source: str | None, limit: int, before: int | None, as_json: bool
) -> None:
    """Who changed what, newest first: of one schedule, or of all; a page at a time."""

    def human(reply: Reply) -> None:
        if not reply["entries"]:
            click.echo("no audit entries")
            return
        render.table(render.AUDIT_COLUMNS, [render.audit_cells(entry) for entry in reply["entries"]])
        following = reply.get("next_before")
        if following is not None:
            click.echo(f"\nMore follow: add --before {following} for the next page.")

    finish(runtime.call("audit", name=name, source=source, limit=limit, before=before), as_json, human)


@cli.command()
@json_option
@pass_runtime
def status(runtime: Runtime, as_json: bool) -> None:
    """The node, its store, jobs by state, and runs in flight."""

    def human(reply: Reply) -> None:
        node = reply["node"]
        counts = ", ".join(f"{count} {state}" for state, count in reply["counts"].items() if count)
        peers = ", ".join(f"{peer['node']} (beat {peer['last_beat']})" for peer in node["peers"]) or "none"
        render.details(
            [
                ("node", node["id"]),
                ("now", node["now"]),
                ("zone", node["zone"]),
                ("store", f"{node['store']} ({node['persistence']}; {node.get('store_state', 'ok')})"),
                ("jobs", counts or "none"),
                ("running", str(reply["running"])),
                ("nodes", peers),
                *_last_reload(runtime),
            ]
        )
        _warn_unreadable(node)

    finish(runtime.call("status"), as_json, human)


def _last_reload(runtime: Runtime) -> list[tuple[str, str]]:
    """How the last reload of the serve of this config went, as that serve published it (issue 38)."""
    from cronwright.fronts.cli import reload_file

    path = runtime.config.path
    published = reload_file.read(reload_file.path_for(path)) if path else None
    if published is None or published.seq == 0:
        return []
    return [("reload", published.message)]


@cli.command()
@json_option
@pass_runtime
def targets(runtime: Runtime, as_json: bool) -> None:
    """The allowlisted targets, their actions and arg schemas."""

    def human(reply: Reply) -> None:
        if not reply["targets"]:
            click.echo("no targets: add [targets.NAME] sections to the config")
        for target in reply["targets"]:
            click.echo(f"{target['target']} ({target.get('kind', '?')})")
            for action in target["actions"]:
                click.echo(
                    f"  {target['target']}.{action['action']}  args: {json.dumps(action['args_schema'])}"
                )
                if action.get("route"):  # a broker action: where its messages go
                    route = ", ".join(
                        f"{key} {value if isinstance(value, str | int) else json.dumps(value)}"
                        for key, value in action["route"].items()
                    )
                    click.echo(f"    sends: {route}")

    finish(runtime.call("targets"), as_json, human)


@cli.command()
@click.argument("expressions", metavar="EXPR [EXPR ...]", nargs=-1, required=True)
@declared("Preview", "tz")
@declared("Preview", "after", metavar="ISO")
@declared("Preview", "count", default=5)
@click.option(
    "--exclude", metavar="CALENDAR", multiple=True, help="Mark the firings this [calendars.NAME] excludes."
)
@json_option
@pass_runtime
def preview(
    runtime: Runtime,
    expressions: tuple[str, ...],
    tz: str | None,
    after: str | None,
    count: int,
    exclude: tuple[str, ...],
    as_json: bool,
) -> None:
    """The normalized expression, its explanation, and its next firings; several expressions are
    previewed as one schedule, the union of their instants.

    It asks the protocol, as every verb does, so it answers exactly what a `preview` request would: an
    --after without an offset is read in --tz (default: the node zone)."""

    def human(shown: Reply) -> None:
        listed = shown["expression"]
        click.echo(f"  expression: {' | '.join(listed) if isinstance(listed, list) else listed}")
        click.echo(f"     meaning: {shown['explanation']}")
        click.echo(f"        zone: {shown['tz']}")
        reasons = {entry["at"]: entry["reason"] for entry in shown.get("excluded") or []}
        for index, firing in enumerate(shown["firings"]):
            line = f"{'next':>12}: {firing}" if index == 0 else f"{'':>12}  {firing}"
            marks = [f"(excluded: {reasons[firing]})"] if firing in reasons else []
            click.echo(render.fitted([line, *marks], 16))

    runtime.store_unused = True  # a preview reads no jobs: the default store needs no notice
    expression: str | list[str] = expressions[0] if len(expressions) == 1 else list(expressions)
    reply = runtime.call(
        "preview", expression=expression, tz=tz, after=after, count=count, exclude=list(exclude) or None
    )
    if as_json and reply.get("ok"):
        # `preview --json` prints the preview itself (DESIGN, CLI), not the reply around it.
        click.echo(json.dumps({key: reply[key] for key in PREVIEW_KEYS if key in reply}, ensure_ascii=False))
        return
    finish(reply, as_json, human)


PREVIEW_KEYS = ("expression", "explanation", "tz", "firings", "excluded")


NOTIFICATION_COLUMNS = (
    "CREATED",
    "TRANSITION",
    "JOB",
    "CHANNEL",
    "STATE",
    "ATTEMPTS",
    "NEXT/DELIVERED",
    "ERROR",
)


def _notification_cells(row: Reply) -> list[str]:
    when = row["next_attempt_at"] if row["state"] == "pending" else row["delivered_at"]
    return [
        row["created_at"],
        row["transition"],
        (row.get("job") or {}).get("name") or "-",
        row["channel"],
        row["state"],
        str(row["attempts"]),
        when or "-",
        row.get("last_error") or "",  # whole: a table wraps what does not fit, it never cuts
    ]


@cli.command()
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--before", metavar="ID", help="Only notifications older than the one with this id.")
@json_option
@pass_runtime
def notifications(runtime: Runtime, limit: int, before: str | None, as_json: bool) -> None:
    """Recent alert notifications, newest first, and how their delivery fares."""

    def human(reply: Reply) -> None:
        if not reply["deliveries"]:
            click.echo("no notifications")
            return
        render.table(NOTIFICATION_COLUMNS, [_notification_cells(row) for row in reply["deliveries"]])
        following = reply.get("next_before")
        if following is not None:
            click.echo(f"\nMore follow: add --before {following} for the next page.")

    finish(runtime.call("notifications", limit=limit, before=before), as_json, human)


def _next_text(job: Reply) -> str:
    """When it fires next; a held schedule (paused, pending) fires nothing until it is released."""
    if job["state"] == "paused":
        return "- (paused: it fires again once resumed)"
    if job["state"] == "pending":
        return "- (pending: it fires once an operator approves it)"
    return f"{job['next_run_at'] or '-'} ({render.relative(job['next_run_at'], now())})"
