"""The MCP server: the protocol as tools an agent can call, on the official `mcp` SDK.

Each tool mirrors one protocol action, with a job's fields as flat arguments, and answers with the
protocol's reply as structured content. A refusal is a tool error (`isError`) whose text is the
protocol's message, which says what to fix. Who is asking decides what the tools may see and do: over
stdio, the source given to `cronwright mcp`; over HTTP, the source the bearer token picked.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field, StrictBool, StrictInt, StrictStr

from cronwright.node import Node
from cronwright.protocol import Protocol
from cronwright.sources import Source

log = logging.getLogger("cronwright.mcp")

# Picks the source for one tool call from the transport's request (None over stdio).
SourceOf = Callable[[object], Source | None]
# Told the protocol action after each change that succeeded, so a front can wake nodes elsewhere.
OnChange = Callable[[str], object]
Reply = dict[str, Any]

INSTRUCTIONS = """\
cronwright runs allowlisted actions of allowlisted targets on a schedule: a cron expression, a fixed \
period, or one instant. Call schedules_targets to see what you may run and the args each action takes, \
and schedules_preview to check a cron expression before creating a schedule. Every schedule has a \
lifetime and ends by itself; only an update with a new lifetime renews it. You see and change only the \
schedules you created."""

# --- argument types: every argument carries its description into the tool's input schema ---------------

# An agent reads every row it lists into its context: pages keep that bounded.
MCP_LIST_PAGE = 100

Name = Annotated[
    StrictStr | None,
    Field(description="The schedule's name (as in schedules_list). Give this or job_id."),
]
JobId = Annotated[
    StrictInt | None,
    Field(description="The schedule's numeric id, instead of its name. Give this or name."),
]
ScheduleArg = Annotated[
    dict[str, Any] | None,
    Field(
        description=(
            'When it fires, exactly one of: {"cron": "0 7 * * MON-FRI", "tz": "Europe/Berlin"} (5 fields, '
            "6 with seconds, or @hourly/@daily/@weekly/@monthly/@yearly; tz defaults to the node zone), "
            '{"every": "15m"} (a fixed period: 90s, 15m, 12h, 1d, PT15M), {"every_ms": 900000}, or '
            '{"at": "2026-12-01T09:00:00+01:00"} (once). Give this or run_at.'
        ),
        json_schema_extra={
            "examples": [{"cron": "0 7 * * MON-FRI", "tz": "Europe/Berlin"}, {"every": "15m"}],
        },
    ),
]
RunAt = Annotated[
    StrictStr | None,
    Field(
        description="Shorthand for a one-shot schedule: the ISO-8601 instant to fire at, with its offset, "
        "e.g. 2026-12-01T09:00:00+01:00. Give this or schedule."
    ),
]
Args = Annotated[
    dict[str, Any] | None,
    Field(
        description="The action's arguments, a JSON object matching the action's args_schema "
        "(see schedules_targets). Default {}. It may not hold a 'cron' key."
    ),
]
Lifetime = Annotated[
    StrictStr | None,
    Field(
        description="How long the schedule lives: a duration ('30d', '12h', 'P30D') from now, or an end "
        "instant ('2026-06-30T00:00:00+02:00'). Default and ceiling: your max_lifetime. It never fires "
        "at or after its end."
    ),
]
Misfire = Annotated[
    StrictStr | None,
    Field(
        description="What to do with occurrences missed while the node was down or busy: 'skip' "
        "(default: run none of them) or 'coalesce' (run one catch-up for the latest)."
    ),
]
MaxAttempts = Annotated[
    StrictInt | None,
    Field(description="Attempts per occurrence, retries included, 1-100 (default 1: no retry)."),
]
RetryBackoff = Annotated[
    StrictInt | None,
    Field(description="Milliseconds before the first retry; it doubles at each retry (default 1000)."),
]
Breaker = Annotated[
    StrictInt | None,
    Field(description="Failed occurrences in a row that pause the schedule (default 3; 0 never pauses)."),
]


# --- the server ---------------------------------------------------------------------------------------


def build_server(protocol: Protocol, source_of: SourceOf, on_change: OnChange | None = None) -> MCPServer:
    """An MCP server whose tools call `protocol` as the source `source_of` picks for each call."""
    server = MCPServer("cronwright", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING")
    tools = _Tools(protocol, source_of, on_change)
    read = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    edit = _change(destructive=True, idempotent=True)  # replaces what was there
    switch = _change(destructive=False, idempotent=True)  # reversible, and a second call changes nothing
    run = _change(destructive=False, idempotent=False, world=True)  # the target may act on the world
    for fn, title, hints in (
        (tools.schedules_create, "Create a schedule", _change(destructive=False, idempotent=False)),
        (tools.schedules_list, "List schedules", read),
        (tools.schedules_get, "Show a schedule", read),
        (tools.schedules_update, "Update a schedule", edit),
        (tools.schedules_delete, "Delete a schedule", edit),
        (tools.schedules_pause, "Pause a schedule", switch),
        (tools.schedules_resume, "Resume a schedule", switch),
        (tools.schedules_run_now, "Run a schedule now", run),
        (tools.schedules_history, "Recent runs", read),
        (tools.schedules_preview, "Preview a cron expression", read),
        (tools.schedules_targets, "Allowed targets", read),
    ):  # fmt: skip
        server.add_tool(fn, title=title, annotations=hints.model_copy(update={"title": title}))
    return server


def _change(destructive: bool, idempotent: bool, world: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=world
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cronwright")
    except PackageNotFoundError:
        return "0"


def refusal_text(reply: Reply) -> str:
    """The text of a tool error: the protocol's message (which says what to fix), then its code."""
    where = f", field {reply['field']}" if reply.get("field") else ""
    state = f", state {reply['state']}" if reply.get("state") else ""
    return f"{reply.get('message', 'refused')} [{reply.get('error', 'invalid')}{where}{state}]"


def _given(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


class _Tools:
    """The tools. Each docstring is the description an agent reads, so it says when to use the tool."""

    def __init__(self, protocol: Protocol, source_of: SourceOf, on_change: OnChange | None) -> None:
        self._protocol = protocol
        self._source_of = source_of
        self._on_change = on_change

    def _call(self, ctx: Context, request: dict[str, Any]) -> Reply:
        source = self._source_of(ctx.request_context.request)
        if source is None:
            raise ToolError("not authorized")
        reply = self._protocol.dispatch(request, source)
        if not reply.get("ok"):
            raise ToolError(refusal_text(reply))
        if self._on_change is not None and request["action"] not in _READS:
            self._on_change(str(request["action"]))
        return reply

    def schedules_create(
        self,
        ctx: Context,
        name: Annotated[
            StrictStr, Field(description="A unique name: 1-100 letters, digits, '.', '_' or '-'.")
        ],
        target: Annotated[
            StrictStr, Field(description="The allowlisted target to run (see schedules_targets).")
        ],
        action: Annotated[
            StrictStr, Field(description="The target's action to run (see schedules_targets).")
        ],
        schedule: ScheduleArg = None,
        run_at: RunAt = None,
        args: Args = None,
        lifetime: Lifetime = None,
        misfire: Misfire = None,
        max_attempts: MaxAttempts = None,
        retry_backoff_ms: RetryBackoff = None,
        breaker_threshold: Breaker = None,
        dedupe_key: Annotated[
            StrictStr | None,
            Field(
                description="An idempotency key: while a schedule you created with this key lives, creating "
                "again returns it (deduped: true) instead of a second one."
            ),
        ] = None,
        once: Annotated[
            StrictBool | None,
            Field(description="With dedupe_key: at most once ever for that key, even after it ended."),
        ] = None,
    ) -> Reply:
        """Create a schedule that runs one action of an allowlisted target, with fixed args, on a cron
        expression, a fixed period or a single instant, until its lifetime ends. Check the expression
        with schedules_preview first. Answers with the schedule as stored (next_run_at, ends_at, ...)."""
        job = _given(
            name=name, target=target, action=action, schedule=schedule, run_at=run_at, args=args,
            lifetime=lifetime, misfire=misfire, max_attempts=max_attempts, retry_backoff_ms=retry_backoff_ms,
            breaker_threshold=breaker_threshold, dedupe_key=dedupe_key, once=once,
        )  # fmt: skip
        return self._call(ctx, {"action": "create_job", "job": job})

    def schedules_list(
        self,
        ctx: Context,
        state: Annotated[
            StrictStr | None,
            Field(
                description="Only schedules in this state: active, paused, running, expired, done or failed."
            ),
        ] = None,
        target: Annotated[StrictStr | None, Field(description="Only schedules of this target.")] = None,
        limit: Annotated[
            StrictInt, Field(description=f"At most this many schedules, 1-1000 (default {MCP_LIST_PAGE}).")
        ] = MCP_LIST_PAGE,
        after_name: Annotated[
            StrictStr | None,
            Field(
                description="Only schedules whose name sorts after this one: the next_after_name of a page."
            ),
        ] = None,
    ) -> Reply:
        """List your schedules, ordered by name, with their state, next run, last run and end. One page at
        a time: when more follow, the reply's next_after_name is the after_name of the next page."""
        request = _given(state=state, target=target, limit=limit, after_name=after_name)
        return self._call(ctx, {"action": "list", **request})

    def schedules_get(self, ctx: Context, name: Name = None, job_id: JobId = None) -> Reply:
        """Show one of your schedules and its ten most recent runs."""
        return self._call(ctx, {"action": "get", **_given(name=name, job_id=job_id)})

    def schedules_update(
        self,
        ctx: Context,
        name: Name = None,
        job_id: JobId = None,
        new_name: Annotated[StrictStr | None, Field(description="Rename the schedule to this.")] = None,
        schedule: ScheduleArg = None,
        run_at: RunAt = None,
        args: Args = None,
        lifetime: Lifetime = None,
        misfire: Misfire = None,
        max_attempts: MaxAttempts = None,
        retry_backoff_ms: RetryBackoff = None,
        breaker_threshold: Breaker = None,
    ) -> Reply:
        """Change a schedule: its timing, args, lifetime, name or policies (the target and action never
        change). Fields left out keep their values; a new schedule re-arms from now. Without a lifetime
        the end stays where it is; a lifetime is read from now and renews an expired schedule. Refused
        while the schedule runs."""
        changes = _given(
            name=new_name, schedule=schedule, run_at=run_at, args=args, lifetime=lifetime, misfire=misfire,
            max_attempts=max_attempts, retry_backoff_ms=retry_backoff_ms, breaker_threshold=breaker_threshold,
        )  # fmt: skip
        return self._call(ctx, {"action": "update", **_given(name=name, job_id=job_id), "changes": changes})

    def schedules_delete(self, ctx: Context, name: Name = None, job_id: JobId = None) -> Reply:
        """Delete a schedule for good; answers with the row that went. A run in flight finishes and
        reaches the history. To stop it for a while instead, use schedules_pause."""
        return self._call(ctx, {"action": "delete", **_given(name=name, job_id=job_id)})

    def schedules_pause(self, ctx: Context, name: Name = None, job_id: JobId = None) -> Reply:
        """Pause an active schedule: it fires nothing until schedules_resume. Its lifetime still runs."""
        return self._call(ctx, {"action": "pause", **_given(name=name, job_id=job_id)})

    def schedules_resume(self, ctx: Context, name: Name = None, job_id: JobId = None) -> Reply:
        """Resume a paused schedule; its misfire policy decides what happens to what it missed."""
        return self._call(ctx, {"action": "resume", **_given(name=name, job_id=job_id)})

    def schedules_run_now(self, ctx: Context, name: Name = None, job_id: JobId = None) -> Reply:
        """Start one run of an active schedule now, besides its timetable; the run's outcome shows in
        schedules_get and schedules_history once it ends. Refused while it already runs."""
        return self._call(ctx, {"action": "run_now", **_given(name=name, job_id=job_id)})

    def schedules_history(
        self,
        ctx: Context,
        name: Name = None,
        job_id: JobId = None,
        limit: Annotated[
            StrictInt | None, Field(description="At most this many runs, 1-1000 (default 20).")
        ] = None,
    ) -> Reply:
        """Recent runs, newest first, of one schedule or of all of yours: outcome, message and timing of
        each attempt."""
        return self._call(ctx, {"action": "history", **_given(name=name, job_id=job_id, limit=limit)})

    def schedules_preview(
        self,
        ctx: Context,
        expression: Annotated[
            StrictStr,
            Field(description="A cron expression: 5 fields (6 with seconds), or @hourly, @daily, ..."),
        ],
        tz: Annotated[
            StrictStr | None,
            Field(description="The IANA zone to read it in, e.g. Europe/Berlin (default: the node zone)."),
        ] = None,
        after: Annotated[
            StrictStr | None,
            Field(description="List firings after this ISO-8601 instant (default: now)."),
        ] = None,
        count: Annotated[
            StrictInt | None, Field(description="How many firings to list, 1-1000 (default 5).")
        ] = None,
    ) -> Reply:
        """Check a cron expression before using it: its normalized form, a plain-words explanation,
        and its next firings in the zone. An expression that can never fire is refused, saying why."""
        request = {"action": "preview", "expression": expression, **_given(tz=tz, after=after, count=count)}
        return self._call(ctx, request)

    def schedules_targets(self, ctx: Context) -> Reply:
        """The targets and actions you may schedule, with the JSON schema of each action's args."""
        return self._call(ctx, {"action": "targets"})


_READS = {"list", "get", "history", "preview", "targets"}


# --- stdio ----------------------------------------------------------------------------------------------


def serve_stdio(protocol: Protocol, node: Node, source: Source, on_change: OnChange | None = None) -> None:
    """Serves MCP over stdin and stdout as `source` until the client closes the connection."""

    def changed(action: str) -> None:
        if action == "run_now":
            # This process has no scheduling loop: a watcher records the run's outcome when it ends.
            threading.Thread(target=keep_runs, args=(node,), name="cronwright-mcp-runs", daemon=True).start()
        if on_change is not None:
            on_change(action)

    build_server(protocol, lambda request: source, changed).run("stdio")


def keep_runs(node: Node) -> None:
    """Renews this process's lease while its runs are in flight, and records each one as it ends."""
    while node.in_flight():
        try:
            node.wait_for_runs(node.settings.lease_beat.total_seconds())
        except TimeoutError:
            node.store.beat(node.id, node.clock.now())
