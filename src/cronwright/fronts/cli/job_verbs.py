"""The verbs that change schedules, and wake a node serving on this host so the change lands live: add,
update, remove, pause, resume, approve, reject, backfill, and run-now, which waits for the run it asked for
(exit 3 unless it ended ok)."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from typing import Any

import click

from cronwright.errors import Invalid
from cronwright.fronts import render
from cronwright.fronts.cli.exits import Reply, finish, json_option
from cronwright.fronts.cli.group import cli
from cronwright.fronts.cli.options import declared
from cronwright.fronts.cli.runtime import Runtime, interrupted_on_stop, pass_runtime
from cronwright.fronts.wake import wake_local_nodes
from cronwright.timing.durations import parse_duration


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
        nxt = {
            "paused": "it fires no more until resumed",
            "pending": "it fires once an operator approves it",
        }.get(job["state"], f"next {job['next_run_at'] or '-'}")
        click.echo(f"{verb} {job['name']}{note}{kept}: {job['state']}, {nxt}, ends {job['ends_at']}")
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
                from cronwright.node.handoff import wait_for_hand_off

                wait_for_hand_off(node, reply["job"]["id"], fire_id)
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


def _last_attempt(runtime: Runtime, job_id: int, fire_id: str | None) -> Reply | None:
    """The history row of the newest attempt of occurrence `fire_id`, or None if none is recorded."""
    if fire_id is None:
        return None
    runs = runtime.call("history", job_id=job_id, limit=50).get("runs", [])
    attempts = [run for run in runs if run.get("fire_id") == fire_id]
    return max(attempts, key=lambda run: int(run.get("attempt", 0)), default=None)
