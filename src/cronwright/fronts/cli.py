"""The `cronwright` command: a thin adapter that turns options into protocol requests, as the operator.

Exit status: 0 on success, 1 when the request was refused (`ok: false`), 2 on a usage error (bad options,
a bad config, a store that cannot be opened), 3 when `run-now`'s run ended other than ok. `--json` prints the
protocol's reply exactly.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from cronwright._version import __version__
from cronwright.core.sources import operator
from cronwright.errors import ConfigError, Invalid, NameTaken, StoreError
from cronwright.fronts import render
from cronwright.fronts.cli_options import DeclaredOption, DeclaringCommand, declared
from cronwright.fronts.listing import lay_out
from cronwright.fronts.wake import wake_local_nodes
from cronwright.telemetry.logs import configure as configure_logs
from cronwright.telemetry.logs import say
from cronwright.timing.durations import parse_duration

# The app and the config (pydantic) are imported when a verb first needs them, and the request models when
# a verb's declared options are first read (cli_options.py): `--version` and `--help` need neither.
if TYPE_CHECKING:
    from cronwright.app import App
    from cronwright.config.settings import Config
    from cronwright.fronts.http.asgi import Serving
    from cronwright.fronts.ui.links import Links
    from cronwright.node.scheduler import Node
    from cronwright.store.memory import MemoryStore
    from cronwright.targets.pool import Pool
    from cronwright.targets.registry import Registry
    from cronwright.targets.specs import WorkerSpec

Reply = dict[str, Any]
_log = logging.getLogger("cronwright.cli")


def fail(message: str, status: int = 2) -> NoReturn:
    click.echo(f"cronwright: error: {message}", err=True)
    sys.exit(status)


class Runtime:
    """What the verbs share, built on first use: the config, then the app over the store."""

    def __init__(self, config_path: str | None) -> None:
        self.config_path = config_path
        self._config: Config | None = None
        self._app: App | None = None
        self._pool: Pool | None = None  # made before the config by `prestart_workers`
        self._cached_specs: list[WorkerSpec] | None = None  # what it found in the SpecCache
        self._logs = False  # True once stderr carries JSON log lines (serve, tick, mcp)
        self.store_unused = False  # True for a verb that reads no jobs (preview): no defaults notice

    @property
    def config(self) -> Config:
        if self._config is None:
            from cronwright.config.settings import load

            try:
                self._config = load(self.config_path)
            except ConfigError as error:
                fail(str(error))
        return self._config

    def app(self, boot: bool = False, serving: bool = False) -> App:
        """The app. `boot` upserts the seeds and runs a first pass, as `serve` and `tick` do; `serving`
        is for `serve`. Any other verb's process is short-lived: its run_now goes to a serving node."""
        if self._app is None:
            from cronwright.targets.cache import SpecCache, cache_dir
            from cronwright.targets.executor import TargetRunner
            from cronwright.targets.pool import Pool
            from cronwright.targets.registry import build_registry, worker_specs
            from cronwright.targets.secrets import Secrets

            config = self.config
            if config.path is None and not self.store_unused:
                self._say_defaults(config)
            try:
                pool = self._pool or Pool(spare=serving)
                # As many idle workers as runs may be in flight: a burst that ends together must not see
                # all but a few workers killed, only to start them again for the next firings.
                pool.max_idle = config.node.max_concurrency
                if boot and not serving:
                    # A tick: its python targets' fork servers start while it describes their modules,
                    # boots and reads what is due, not at its first run (serve warms a worker of each
                    # once it listens); those `prestart_workers` started already are not started again.
                    specs = worker_specs(config)
                    for spec in specs:
                        pool.prestart(spec)
                    if config.path is not None and specs != self._cached_specs:
                        SpecCache(cache_dir()).put(Path(config.path), specs)
                registry = build_registry(config)
                runner = TargetRunner(registry, Secrets.from_config(config), zone=config.node.tz, pool=pool)
                from cronwright.app import build

                # Only serve has a /metrics to count events for.
                self._app = build(
                    config,
                    runner,
                    registry,
                    seed=boot,
                    serving=serving,
                    short_lived=not boot,
                    metrics=serving,
                )
            except (ConfigError, StoreError) as error:
                fail(str(error))
        return self._app

    def prestart_workers(self) -> None:
        """Starts the fork servers of the python targets this config file made when it was last parsed as
        it is now (SpecCache), before it is read: a `tick` otherwise starts them only once pydantic is
        imported and the config parsed, about 80 ms later, and its first python runs wait for them.
        Nothing here fails: a missing or stale entry starts nothing, or a server no run uses."""
        from cronwright.config.path import locate
        from cronwright.targets.cache import SpecCache, cache_dir
        from cronwright.targets.pool import Pool

        path = locate(self.config_path)
        if path is None or self._pool is not None:
            return
        self._pool = Pool()
        self._cached_specs = SpecCache(cache_dir()).get(path)
        for spec in self._cached_specs:
            self._pool.prestart(spec)

    def call(self, action: str, **fields: Any) -> Reply:
        request = {"action": action, **{k: v for k, v in fields.items() if v is not None}}
        return self.app().protocol.dispatch(request, operator())

    def _say_defaults(self, config: Config) -> None:
        """One line on stderr (a log line once logs are on) before a store the user may not expect opens."""
        note = (
            "no config file (--config, $CRONWRIGHT_CONFIG, ./cronwright.toml): using the built-in defaults, "
            f"with the store at {config.store_url}"
        )
        if self._logs:
            say(_log, note, logging.WARNING, store=config.store_url)
        else:
            click.echo(f"cronwright: note: {note}", err=True)

    def log_to_stderr(self) -> None:
        """JSON lines on stderr, readable on a terminal (semantic 41): for serve, tick and mcp."""
        self._logs = True
        configure_logs(self.config.node.tz)

    def node_label(self) -> str:
        """This host, as a test notification names it (no store is opened for it)."""
        import socket

        return socket.gethostname()

    def close(self) -> None:
        """Stops the node: runs still in flight get the shutdown grace, then are recorded interrupted."""
        app, self._app = self._app, None  # once: `serve` closes before it says it stopped
        pool, self._pool = self._pool, None
        if app is not None:
            app.close()  # its runner closes the pool
        elif pool is not None:
            pool.close()  # the servers `prestart_workers` started for an app that was never built


pass_runtime = click.make_pass_decorator(Runtime)


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    metavar="PATH",
    help="Config file (else $CRONWRIGHT_CONFIG, ./cronwright.toml).",
)
@click.version_option(__version__)  # not looked up in the metadata: that is slow
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """cronwright: schedules that never run twice, never run forever, and run only what was allowed."""
    runtime = Runtime(config_path)
    ctx.obj = runtime
    ctx.call_on_close(runtime.close)


cli.command_class = DeclaringCommand  # each verb's declared options are made when it is run or helped


# --- reading --------------------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(UTC)


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
        shown = lay_out(rows, _now(), runtime.config.node.tz, None if wide else _columns())
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
                ("next", f"{job['next_run_at'] or '-'} ({render.relative(job['next_run_at'], _now())})"),
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
            ]
        )
        _warn_unreadable(node)

    finish(runtime.call("status"), as_json, human)


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


# --- alerts ---------------------------------------------------------------------------------------

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
        (row.get("last_error") or "")[:80],
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
    result = probe(made, runtime.node_label(), _now(), config.node.tz)
    kind = config.notify[channel].kind
    if result.delivered:
        click.echo(f"delivered a test notification ({result.payload['id']}) through {channel} ({kind})")
        return
    click.echo(f"cronwright: {channel} ({kind}) did not take the test notification: {result.error}", err=True)
    sys.exit(1)


# --- changing -------------------------------------------------------------------------------------


def schedule_options(function: Callable[..., Any]) -> Callable[..., Any]:
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option("--args", "args_json", metavar="JSON", help="The action's args, a JSON object."),
        click.option(
            "--cron",
            metavar="EXPR",
            multiple=True,
            help="A cron expression (5 fields, 6 with seconds, or @daily...); repeat it for several, "
            "fired at the union of their instants.",
        ),
        click.option(
            "--tz",
            help="The cron expression's IANA zone (add: default the node zone; update: the job's zone "
            "is kept unless given, and --tz alone moves the job to this zone).",
        ),
        click.option("--every", metavar="DUR", help="A fixed period: 90s, 5m, 12h, 1d, PT5M."),
        click.option(
            "--exclude",
            metavar="CALENDAR",
            multiple=True,
            help="With --cron or --every: do not fire on the dates of this [calendars.NAME]; repeatable.",
        ),
        click.option(
            "--jitter",
            metavar="DUR",
            help="With --cron or --every: delay each occurrence by a stable offset in [0, DUR), the same "
            "on every node and restart.",
        ),
        click.option("--at", metavar="ISO", help="A single instant (one-shot)."),
        declared("JobSpec", "lifetime", metavar="DUR|ISO"),
        declared("JobSpec", "misfire"),
        declared("JobSpec", "overlap"),
        declared("JobSpec", "max_attempts"),
        # The protocol's retry_backoff_ms in milliseconds; the CLI takes a duration (2s, 500ms).
        click.option("--retry-backoff", metavar="DUR", help="The first retry's delay; it doubles each time."),
        declared("JobSpec", "breaker_threshold", "--breaker"),
        click.option(
            "--dry-run",
            is_flag=True,
            help="Check everything, write nothing: show the schedule, its next five firings and the quota.",
        ),
        json_option,
    ]
    for option in reversed(options):
        function = option(function)
    return function


def job_fields(
    args_json: str | None,
    cron: tuple[str, ...],
    tz: str | None,
    every: str | None,
    at: str | None,
    exclude: tuple[str, ...],
    jitter: str | None,
    lifetime: str | None,
    misfire: str | None,
    overlap: str | None,
    max_attempts: int | None,
    retry_backoff: str | None,
    breaker_threshold: int | None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """The protocol's job fields for the options given; nothing for an option left out (`dry_run` is the
    request's, not the job's: the verbs read it themselves)."""
    fields: dict[str, Any] = {}
    kinds = [kind for kind in (cron or None, every, at) if kind is not None]
    if len(kinds) > 1:
        raise click.UsageError("give one of --cron, --every and --at")
    if tz is not None and not cron:
        raise click.UsageError("--tz goes with --cron")
    if cron:
        # One --cron is the expression itself (the row shows it so); several are a list (semantic 31).
        expressions: str | list[str] = cron[0] if len(cron) == 1 else list(cron)
        fields["schedule"] = {"cron": expressions, **({"tz": tz} if tz else {})}
    elif every is not None:
        fields["schedule"] = {"every": every}
    elif at is not None:
        fields["run_at"] = at
    if jitter is not None:
        if "schedule" not in fields:
            raise click.UsageError("--jitter goes with --cron or --every (give the schedule whole)")
        fields["schedule"]["jitter"] = jitter
    if exclude:
        if "schedule" not in fields:
            raise click.UsageError("--exclude goes with --cron or --every (give the schedule whole)")
        fields["schedule"]["exclude"] = list(exclude)
    if args_json is not None:
        try:
            fields["args"] = json.loads(args_json)
        except ValueError as error:
            raise click.BadParameter(f"not valid JSON: {error}", param_hint="--args") from None
    if retry_backoff is not None:
        try:
            fields["retry_backoff_ms"] = parse_duration(retry_backoff, "retry_backoff") // _MS
        except Invalid as error:
            raise click.BadParameter(error.message, param_hint="--retry-backoff") from None
    optional = {
        "lifetime": lifetime,
        "misfire": misfire,
        "overlap": overlap,
        "max_attempts": max_attempts,
        "breaker_threshold": breaker_threshold,
    }
    fields.update({key: value for key, value in optional.items() if value is not None})
    return fields


_MS = parse_duration("1s") / 1000


def changed(runtime: Runtime, reply: Reply) -> Reply:
    """After a change, wake any node serving on this host, so the change lands live (a dry run is none)."""
    if reply.get("ok") and not reply.get("dry_run"):
        wake_local_nodes(runtime.app().node.store)
    return reply


def say_job(verb: str) -> Callable[[Reply], None]:
    def human(reply: Reply) -> None:
        if reply.get("dry_run") and "firings" in reply:
            say_dry_run(verb, reply)
            return
        job = reply["job"]
        note = " (already there: deduped)" if reply.get("deduped") else ""
        persistence = reply.get("persistence")
        kept = f" [{persistence}]" if persistence and persistence != "persisted" else ""
        click.echo(f"{verb} {job['name']}{note}{kept}: {job['state']}, next {job['next_run_at'] or '-'}, "
                   f"ends {job['ends_at']}")  # fmt: skip
        if reply.get("awaiting_approval"):
            click.echo(f"it awaits an operator's approval: cronwright approve {shlex.quote(job['name'])}")

    return human


def say_dry_run(verb: str, reply: Reply) -> None:
    """A dry run for people: what would be, and that nothing was written."""
    job, quota = reply["job"], reply["quota"]
    limit = f" of {quota['max']}" if quota["max"] is not None else ""
    owner = job["created_by"]
    click.echo(
        f"dry run: nothing {verb}. {job['name']} would be {job['state']}, ends {reply['ends_at']}, "
        f"{quota['used']}{limit} live schedules of {owner}"
    )
    for index, firing in enumerate(reply["firings"]):
        click.echo(f"{'next' if index == 0 else '':>6}  {firing}")
    if not reply["firings"]:
        click.echo("  next  none within its lifetime")


def _dry(options: dict[str, Any]) -> dict[str, Any]:
    """The request's `dry_run` field, if --dry-run was given."""
    return {"dry_run": True} if options.get("dry_run") else {}


@cli.command()
@click.argument("name")
@click.option("--target", required=True, help="The target to run.")
@click.option("--action", required=True, help="The target's action.")
@declared("JobSpec", "dedupe_key", metavar="KEY")
@declared("JobSpec", "once")
@schedule_options
@pass_runtime
def add(runtime: Runtime, /, name: str, target: str, action: str, dedupe_key: str | None, once: bool,
        as_json: bool, **options: Any) -> None:  # fmt: skip
    """Creates a schedule (one of --cron, --every or --at)."""
    if not any(options.get(kind) for kind in ("cron", "every", "at")):
        raise click.UsageError("give one of --cron, --every and --at")
    job = {"name": name, "target": target, "action": action, **job_fields(**options)}
    if dedupe_key is not None:
        job["dedupe_key"] = dedupe_key
    if once:
        job["once"] = True
    reply = runtime.call("create_job", job=job, **_dry(options))
    finish(changed(runtime, reply), as_json, say_job("added"))


@cli.command()
@click.argument("name")
@click.option("--name", "new_name", metavar="NAME", help="A new name.")
@schedule_options
@pass_runtime
def update(runtime: Runtime, /, name: str, new_name: str | None, as_json: bool, **options: Any) -> None:
    """Changes what may change: schedule, args, lifetime, name and the policies.

    What is not given is kept: --cron alone keeps the job's zone, and --tz alone moves a cron job to
    that zone, its expression kept (DESIGN semantic 26)."""
    tz = options["tz"]
    moves_zone = tz is not None and not any(options.get(kind) for kind in ("cron", "every", "at"))
    changes = job_fields(**{**options, "tz": None} if moves_zone else options)
    if moves_zone:
        changes["schedule"] = {"tz": tz}
    if "run_at" in changes:
        changes["schedule"] = {"at": changes.pop("run_at")}
    if new_name is not None:
        changes["name"] = new_name
    if not changes:
        raise click.UsageError("nothing to change: give at least one option")
    reply = runtime.call("update", name=name, changes=changes, **_dry(options))
    finish(changed(runtime, reply), as_json, say_job("updated"))


def _simple(verb: str, action: str, doc: str) -> None:
    @cli.command(verb, help=doc)
    @click.argument("name")
    @json_option
    @pass_runtime
    def command(runtime: Runtime, name: str, as_json: bool) -> None:
        said = say_job("removed")

        def human(reply: Reply) -> None:
            said(reply)
            job = reply["job"]
            seeded = {seed.get("dedupe_key") for seed in runtime.config.seed}
            # Semantic 16: a deleted recurring seed is re-created at boot (a one-shot that was there is not).
            if job.get("dedupe_key") in seeded and job.get("kind") != "at":
                where = runtime.config.path or "the config"
                click.echo(
                    f"note: it is a [[seed]] of {where}: the next boot (serve, tick) creates it again; "
                    "take the [[seed]] out of the config to keep it gone"
                )

        finish(changed(runtime, runtime.call(action, name=name)), as_json, human)


def _noted(verb: str, past: str, model: str, doc: str) -> None:
    """pause and resume, each with the --note its request declares."""

    @cli.command(verb, help=doc)
    @click.argument("name")
    @declared(model, "note", metavar="TEXT")
    @json_option
    @pass_runtime
    def command(runtime: Runtime, name: str, note: str | None, as_json: bool) -> None:
        finish(changed(runtime, runtime.call(verb, name=name, note=note)), as_json, say_job(past))


_simple("remove", "delete", "Removes a schedule; a run in flight finishes, and reaches the history.")
_noted("pause", "paused", "Pause", "Pauses an active schedule; --note says why (shown until it is resumed).")
_noted(
    "resume", "resumed", "Resume", "Resumes a paused schedule; the misfire policy applies to what it missed."
)


def _decide(verb: str, past: str, doc: str) -> None:
    """approve and reject: the operator's decision on a pending schedule (semantic 37)."""

    @cli.command(verb, help=doc)
    @click.argument("name")
    @click.option("--note", metavar="TEXT", help="Why, in a few words: kept in the audit log.")
    @json_option
    @pass_runtime
    def command(runtime: Runtime, name: str, note: str | None, as_json: bool) -> None:
        reply = runtime.call(verb, name=name, note=note)
        finish(changed(runtime, reply), as_json, say_job(past))


_decide(
    "approve", "approved", "Approves a pending schedule: it is armed from now on, and fires by its schedule."
)
_decide(
    "reject", "rejected", "Rejects a pending schedule: it is deleted, and the audit log keeps the decision."
)


@cli.command()
@click.argument("name")
@declared("Backfill", "from_", "--from", metavar="ISO")
@declared("Backfill", "to", metavar="ISO")
@declared("Backfill", "dry_run")
@json_option
@pass_runtime
def backfill(runtime: Runtime, name: str, from_: str, to: str, dry_run: bool, as_json: bool) -> None:
    """Queues the occurrences of [--from, --to) that never started; a serving node, or the next `tick`,
    runs them one at a time, oldest first. Repeating it queues nothing twice. An instant without an
    offset is read in the node zone."""
    if from_ is None or to is None:
        raise click.UsageError("give both --from and --to")
    request: dict[str, Any] = {"name": name, "from": from_, "to": to, **_dry({"dry_run": dry_run})}
    finish(changed(runtime, runtime.call("backfill", **request)), as_json, _say_backfill)


def _paused(job: Reply) -> list[tuple[str, str]]:
    """show's lines for a paused schedule: since when, and why."""
    if not job.get("paused_at") and not job.get("pause_note"):
        return []
    return [("paused", f"since {job.get('paused_at') or '-'}: {job.get('pause_note') or '(no note)'}")]


def _say_backfill(reply: Reply) -> None:
    found = reply["occurrences"]
    name = reply["job"]["name"]
    occurrences = render.counted(len(found) if reply.get("dry_run") else reply["queued"], "occurrence")
    if reply.get("dry_run"):
        quota = reply["quota"]
        limit = f" of {quota['max']}" if quota.get("max") is not None else ""
        click.echo(f"dry run, nothing written: would queue {occurrences} of {name} "
                   f"(quota {quota['used']}{limit})")  # fmt: skip
    elif found:
        click.echo(f"queued {occurrences} of {name}; they run one at a time, oldest first")
    else:
        click.echo(f"nothing to backfill for {name}: each occurrence of the range ran, waits or is excluded")
    for instant in found:
        click.echo(f"  {instant}")
    if reply.get("more"):
        click.echo(f"the range holds more: run it again with --from {reply.get('next_from')}")


@cli.command("run-now")
@click.argument("name")
@json_option
@pass_runtime
def run_now(runtime: Runtime, name: str, as_json: bool) -> None:
    """Runs an active schedule now, waits for the run, and prints its outcome (exit 3 unless it is ok)."""
    reply = runtime.call("run_now", name=name)
    run: Reply | None = None
    if reply.get("ok"):
        node = runtime.app().node
        claimed = node.store.get(reply["job"]["id"])
        fire_id = claimed.in_flight.fire_id if claimed and claimed.in_flight else None
        with interrupted_on_stop(node):
            if reply.get("handed_to") and fire_id is not None:
                wake_local_nodes(node.store)
                node.wait_for_hand_off(reply["job"]["id"], fire_id)
            else:
                node.wait_for_runs()
        got = runtime.call("get", name=name)
        if got.get("ok"):
            reply["job"] = got["job"]
            fire_id = fire_id or (got["job"]["last_run"] or {}).get("fire_id")
        run = _last_attempt(runtime, reply["job"]["id"], fire_id)
        wake_local_nodes(node.store)

    def human(reply: Reply) -> None:
        if run is None and reply.get("handed_to"):
            click.echo(f"handed {reply['job']['name']} ({fire_id}) to {reply['handed_to']}, which runs it; "
                       "`history` shows its outcome")  # fmt: skip
            return
        shown = run or reply["job"]["last_run"] or {}
        click.echo(f"ran {reply['job']['name']} ({shown.get('fire_id')}): {shown.get('outcome')} "
                   f"in {shown.get('took_ms')}ms {shown.get('message') or ''}".rstrip())  # fmt: skip

    finish(reply, as_json, human)
    if run is None or run.get("outcome") != "ok":
        sys.exit(3)  # the run ended other than ok, or its outcome is not known (docs/cli.md)


@contextmanager
def interrupted_on_stop(node: Node) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM stop this process's runs at once: each is recorded
    `interrupted` by this process as it ends, and the block goes on to its end (semantic 28)."""

    def on_stop(signum: int, frame: object) -> None:
        # Off the signal handler: stopping the runner takes locks the interrupted code may hold.
        threading.Thread(target=node.interrupt_runs, args=(signal.Signals(signum).name,)).start()

    previous = {signum: signal.signal(signum, on_stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _last_attempt(runtime: Runtime, job_id: int, fire_id: str | None) -> Reply | None:
    """The history row of the newest attempt of occurrence `fire_id`, or None if none is recorded."""
    if fire_id is None:
        return None
    runs = runtime.call("history", job_id=job_id, limit=50).get("runs", [])
    attempts = [run for run in runs if run.get("fire_id") == fire_id]
    return max(attempts, key=lambda run: int(run.get("attempt", 0)), default=None)


# --- running --------------------------------------------------------------------------------------


@cli.command()
@json_option
@pass_runtime
def tick(runtime: Runtime, as_json: bool) -> None:
    """Runs one scheduling pass now, waits for the runs it started, and exits."""
    runtime.prestart_workers()
    runtime.log_to_stderr()
    app = runtime.app(boot=True)
    report = app.node.tick()
    if app.deliveries is not None:
        # What is due goes out before the process ends (semantic 38); what fails waits for a later tick
        # or a serving node, with its backoff. The pass itself went well: a store that fails now fails
        # the delivery only, which waits in the outbox.
        try:
            app.deliveries.drain()
        except StoreError as error:
            say(_log, f"the notifications could not be delivered now: {error}", logging.WARNING)
    reply: Reply = {
        "ok": True,
        "fired": len(report.fired),
        "fire_ids": report.fired,
        "skipped": report.skipped,
    }
    finish(reply, as_json, lambda r: click.echo(f"fired {r['fired']}, skipped {r['skipped']}"))


@cli.command()
@pass_runtime
def serve(runtime: Runtime) -> None:
    """Runs the node, the HTTP API and MCP over HTTP (on node.listen) until SIGINT or SIGTERM."""
    runtime.log_to_stderr()
    app = runtime.app(boot=True, serving=True)
    # The main thread sleeps until a signal, or the end of the node's loop or of the HTTP server, sets
    # `stop`: it never polls, so an idle serve does not wake (DESIGN semantic 25).
    stop = threading.Event()
    from cronwright.fronts.ui import links

    dashboard_links = links.Links()
    http = _http_server(app, on_exit=stop.set, links=dashboard_links)
    runner = app.node.runs.runner
    warm = getattr(runner, "warm", None)
    if callable(warm):
        warm()

    def on_stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGUSR1, lambda signum, frame: app.node.wake())
    counts = {state: n for state, n in app.node.store.counts().items() if n}
    where = app.node.store.description
    shown = ", ".join(f"{n} {state}" for state, n in counts.items()) or "no schedules"
    say(_log, f"cronwright node {app.node.id} serving {where} ({shown}); Ctrl-C stops it",
        node=app.node.id, store=where, counts=counts)  # fmt: skip

    def node_loop() -> None:
        try:
            app.node.serve_forever()
        finally:
            stop.set()

    loop = threading.Thread(target=node_loop, name="cronwright-node", daemon=True)
    loop.start()
    if app.deliveries is not None:
        app.deliveries.start()  # its own thread: a slow channel never holds up a scheduling pass
    try:
        http.start()
    except RuntimeError as error:
        fail(str(error))
    say(_log, f"listening on {http.url} (HTTP API, /metrics, MCP at /mcp, dashboard at /ui/)", url=http.url)
    # `cronwright dashboard` finds this serve, and signs its one-time links, with the key in this file.
    key_file = links.key_file(app.config.store_url, app.config.node.listen)
    try:
        links.publish(key_file, http.url, dashboard_links.key)
    except OSError as error:
        say(_log, f"no dashboard link for `cronwright dashboard`: cannot write {key_file}: {error}",
            logging.WARNING, path=str(key_file))  # fmt: skip
    stop.wait()  # a signal handler runs on this thread and sets it; no timeout, so no polling
    say(_log, "stopping: no new requests or claims; waiting for runs in flight")
    links.withdraw(key_file, dashboard_links.key)
    app.changes.close()  # ends the dashboard's event streams, which would hold up the HTTP server's stop
    http.stop()
    runtime.close()  # runs in flight get the shutdown grace, then are recorded interrupted
    say(_log, f"cronwright node {app.node.id} stopped", node=app.node.id)


def _http_server(app: App, on_exit: Callable[[], None], links: Links | None = None) -> Serving:
    """The HTTP app, on a socket bound now: a bad or busy node.listen fails before anything runs."""
    from cronwright.fronts.http.asgi import Serving, create_app, parse_listen

    listen = app.config.node.listen
    try:
        return Serving(create_app(app, host=parse_listen(listen)[0], links=links), listen, on_exit)
    except (ValueError, OSError) as error:
        fail(f"cannot listen on {listen} (node.listen): {error}")


@cli.command()
@click.option("--no-browser", is_flag=True, help="Print the link only; do not open a browser.")
@pass_runtime
def dashboard(runtime: Runtime, no_browser: bool) -> None:
    """Prints a one-time link (valid one minute, used once) that logs the local operator in to the
    dashboard of the serve running with this config, and opens a browser on it where it can."""
    from cronwright.fronts.ui.opener import NoServe, find_serve, link, open_browser

    config = runtime.config
    try:
        published = find_serve(config.store_url, config.node.listen)
    except NoServe as error:
        fail(str(error), 1)
    url = link(published, _now())
    click.echo(url)
    opened = not no_browser and open_browser(url)
    said = "the link logs in as the operator once, within a minute"
    click.echo(said + ("; opened in a browser" if opened else ""), err=True)


@cli.command("mcp")
@click.option(
    "--source",
    "source_name",
    metavar="NAME",
    help="Act as this configured source (default: the local operator, who may use every target).",
)
@pass_runtime
def mcp_stdio(runtime: Runtime, source_name: str | None) -> None:
    """An MCP server over stdio, acting as a configured source."""
    from cronwright.fronts.mcp import serve_stdio

    source = operator()
    if source_name is not None:
        try:
            source = runtime.config.source(source_name)
        except ConfigError as error:
            fail(str(error))
    runtime.log_to_stderr()
    app = runtime.app()
    # A client that goes away stops this process (the SDK's stdio client sends SIGTERM): a run it started
    # is recorded `interrupted` at once, never left to a lease's expiry (semantic 28).
    with interrupted_on_stop(app.node):
        serve_stdio(app.protocol, app.node, source, lambda action: wake_local_nodes(app.node.store))
        app.node.wait_for_runs()  # stdin closed: the runs this process started end before it does


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
    problems = _program_problems(registry)
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


class _NoRunner:
    def run(self, job: Any, occurrence: Any) -> Any:
        raise RuntimeError("check runs nothing")

    def cancel(self, occurrence: Any) -> None:
        pass

    def close(self) -> None:
        pass


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
