"""The MCP server: the protocol as tools an agent can call, on the official `mcp` SDK.

Each tool mirrors one protocol action, with a job's fields as flat arguments. Its input and output
schemas are generated from the protocol's models (`cronwright.declare`): every argument is described, and
an argument the tool does not know is a tool error naming it (and the one meant). A reply is the
protocol's, as structured content, and its text is two blocks: a one-line summary, then that same reply
as JSON (the MCP specification asks for the serialized JSON beside structured content, for clients that
read only `content`). A refusal is a tool error
(`isError`) whose text is the protocol's message in the tools' terms, which says what to fix. Who is
asking decides what the tools may see and do: over stdio, the source given to `cronwright mcp`; over
HTTP, the source the bearer token picked.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from cronwright.core.sources import Source
from cronwright.declare import replies
from cronwright.declare.job_fields import Changes, JobSpec, Model
from cronwright.declare.refusals import refusal
from cronwright.declare.requests import (
    Approve,
    Audit,
    Backfill,
    CreateJob,
    Get,
    History,
    ListJobs,
    Notifications,
    Pause,
    Preview,
    Request,
    Resume,
    Update,
)
from cronwright.declare.types import Flag, whole
from cronwright.fronts.render import counted
from cronwright.node.scheduler import Node
from cronwright.protocol import RequestHandler

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

# An agent reads every row it lists into its context: pages keep that bounded.
MCP_LIST_PAGE = 100

# Each protocol action as a tool names it: refusal messages name actions in backquotes (`list`).
TOOL_OF = {
    "create_job": "schedules_create",
    "list": "schedules_list",
    "get": "schedules_get",
    "update": "schedules_update",
    "delete": "schedules_delete",
    "pause": "schedules_pause",
    "resume": "schedules_resume",
    "run_now": "schedules_run_now",
    "history": "schedules_history",
    "audit": "schedules_audit",
    "backfill": "schedules_backfill",
    "approve": "schedules_approve",
    "reject": "schedules_reject",
    "preview": "schedules_preview",
    "targets": "schedules_targets",
    "notifications": "schedules_notifications",
}
_READS = {"list", "get", "history", "audit", "preview", "targets", "notifications"}


# --- the tools' arguments, from the protocol's models -----------------------------------------------------


def _fields(model: type[BaseModel], *skip: str, **rename: str) -> dict[str, Any]:
    """`model`'s fields as `create_model` takes them, less `skip`, with the names `rename` gives. A
    request's own `action` and `request_id` are the tool's to give (a job's `action` is an argument)."""
    if issubclass(model, Request):
        skip = ("action", "request_id", *skip)
    return {
        rename.get(name, name): (field.annotation, _copy(field))
        for name, field in model.model_fields.items()
        if name not in skip
    }


def _copy(field: FieldInfo) -> FieldInfo:
    return FieldInfo.merge_field_infos(field)


def _arguments(tool: str, **fields: Any) -> type[Model]:
    model: type[Model] = create_model(tool, __base__=Model, **fields)
    return model


LIST_ARGUMENTS = _arguments(
    "schedules_list",
    **_fields(ListJobs, "limit"),
    limit=(
        Annotated[int, whole(1, 1000)],
        Field(MCP_LIST_PAGE, description=f"At most this many schedules (default {MCP_LIST_PAGE})."),
    ),
    verbose=(
        Flag,
        Field(
            False,
            description="Whole rows (args, policies, counters, origin, ...) instead of the short ones that "
            "tell the schedules apart.",
        ),
    ),
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its arguments, the protocol request they make, and the reply's shape."""

    name: str
    title: str
    description: str
    hints: ToolAnnotations
    arguments: type[Model]
    action: str
    reply: type[BaseModel]

    def request(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        given = {key: value for key, value in arguments.items() if value is not None}
        # `dry_run` is the request's, not the job's or the changes'.
        dry = {"dry_run": given.pop("dry_run")} if "dry_run" in given else {}
        if self.action == "create_job":
            return {"action": "create_job", "job": given, **dry}
        if self.action == "update":
            ref: dict[str, Any] = {key: given.pop(key) for key in ("name", "job_id") if key in given}
            if "new_name" in given:
                given["name"] = given.pop("new_name")
            return {"action": "update", **ref, "changes": given, **dry}
        given.pop("verbose", None)
        return {"action": self.action, **given, **dry}


def _change(destructive: bool, idempotent: bool, world: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=world
    )


def _operator_specs() -> list[ToolSpec]:
    """The tools only an operator-level session has: deciding pending schedules (semantic 37)."""
    decide = _change(destructive=False, idempotent=False)
    return [
        ToolSpec("schedules_approve", "Approve a pending schedule", inspect.cleandoc("""
            Approve a pending schedule (one a source that needs approval created or changed): it is armed
            from this moment and fires by its schedule. The note goes to the audit log."""), decide,
            _arguments("schedules_approve", **_fields(Approve)), "approve", replies.JobReply),
        ToolSpec("schedules_reject", "Reject a pending schedule", inspect.cleandoc("""
            Reject a pending schedule: it is deleted, and the audit log keeps the decision and the note."""),
            _change(destructive=True, idempotent=False), _arguments("schedules_reject", **_fields(Approve)),
            "reject", replies.JobReply),
    ]  # fmt: skip


def _specs() -> list[ToolSpec]:
    read = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    edit = _change(destructive=True, idempotent=True)  # replaces what was there
    switch = _change(destructive=False, idempotent=True)  # reversible, and a second call changes nothing
    run = _change(destructive=False, idempotent=False, world=True)  # the target may act on the world
    by_job = _fields(Get)
    job = replies.JobReply

    def spec(name: str, title: str, hints: ToolAnnotations, arguments: type[Model], action: str,
             reply: type[BaseModel], description: str) -> ToolSpec:  # fmt: skip
        return ToolSpec(name, title, inspect.cleandoc(description), hints, arguments, action, reply)

    return [
        spec("schedules_create", "Create a schedule", _change(destructive=False, idempotent=False),
             _arguments("schedules_create", **_fields(JobSpec), **_fields(CreateJob, "job")), "create_job",
             job, """
             Create a schedule that runs one action of an allowlisted target, with fixed args, on a cron
             expression, a fixed period or a single instant, until its lifetime ends. Call
             schedules_targets for the targets you may use and schedules_preview to check an expression
             first. Answers with the schedule as stored (next_run_at, ends_at, ...). With dry_run, nothing
             is created: the answer is the schedule it would make, its next five firings and the quota it
             would use."""),
        spec("schedules_list", "List schedules", read, LIST_ARGUMENTS, "list", replies.ShortListReply, f"""
             List your schedules, ordered by name: short rows (name, target, schedule, state, next run,
             end, last outcome) unless verbose. One page of at most {MCP_LIST_PAGE} by default: when more
             follow, the reply's next_after_name is the after_name of the next page."""),
        spec("schedules_get", "Show a schedule", read, _arguments("schedules_get", **by_job), "get",
             replies.GetReply, "Show one of your schedules, whole, and its ten most recent runs."),
        spec("schedules_update", "Update a schedule", edit,
             _arguments("schedules_update", **by_job, **_fields(Changes, name="new_name"),
                        **_fields(Update, "name", "job_id", "changes")), "update", job,
             """
             Change a schedule: its timing, args, lifetime, name (new_name) or policies (the target and
             action never change). Arguments left out keep their values; a new schedule re-arms from now.
             Without a lifetime the end stays where it is; a lifetime is read from now and renews an
             expired schedule. Refused while the schedule runs. With dry_run, nothing changes: the answer is
             the schedule as it would be and its next five firings."""),
        spec("schedules_delete", "Delete a schedule", edit, _arguments("schedules_delete", **by_job),
             "delete", job, """
             Delete a schedule for good; answers with the row that went. A run in flight finishes and
             reaches the history. To stop it for a while instead, use schedules_pause."""),
        spec("schedules_pause", "Pause a schedule", switch,
             _arguments("schedules_pause", **_fields(Pause)), "pause", job,
             "Pause an active schedule: it fires nothing until schedules_resume. Its lifetime runs on. The "
             "note says why: the row shows it (pause_note, paused_at) until it is resumed."),
        spec("schedules_resume", "Resume a schedule", switch,
             _arguments("schedules_resume", **_fields(Resume)), "resume", job,
             "Resume a paused schedule; its misfire policy decides what happens to what it missed."),
        spec("schedules_run_now", "Run a schedule now", run, _arguments("schedules_run_now", **by_job),
             "run_now", replies.RunNowReply, """
             Start one run of an active schedule now, besides its timetable; the run's outcome shows in
             schedules_get and schedules_history once it ends. Refused while it already runs. Over stdio,
             the run is handed to a serving node when one is up (handed_to names it), so it outlives
             this session."""),
        spec("schedules_history", "Recent runs", read, _arguments("schedules_history", **_fields(History)),
             "history", replies.HistoryReply, """
             Recent runs, newest first, of one schedule or of all of yours: outcome, message and timing of
             each attempt."""),
        spec("schedules_audit", "Who changed what", read, _arguments("schedules_audit", **_fields(Audit)),
             "audit", replies.AuditReply, """
             The audit log, newest first: each change to your schedules (create, update, pause, resume,
             delete, run_now, approve, reject), who made it, when, and each field's value before and
             after. You read the entries you made and those about your own schedules."""),
        spec("schedules_backfill", "Run what a schedule missed", run,
             _arguments("schedules_backfill", **_fields(Backfill)), "backfill", replies.BackfillReply, """
             Run the occurrences of [from, to) that never started (the node was down, the schedule
             paused, a calendar-free day skipped by misfire): oldest first, one at a time, at most 1,000 a
             call (`more` and `next_from` say where to go on). What already ran or waits is never queued
             again, so calling it twice runs nothing twice. dry_run lists them and writes nothing. A
             backfill counts as one of your max_schedules until its queue has started."""),
        spec("schedules_preview", "Preview a cron expression", read,
             _arguments("schedules_preview", **_fields(Preview)), "preview", replies.PreviewReply, """
             Check a cron expression before using it: its normalized form, a plain-words explanation, and
             its next firings in the zone. An expression that can never fire is refused, saying why."""),
        spec("schedules_targets", "Allowed targets", read, _arguments("schedules_targets"), "targets",
             replies.TargetsReply,
             "The targets and actions you may schedule, with the JSON schema of each action's args."),
        spec("schedules_notifications", "Alert notifications", read,
             _arguments("schedules_notifications", **_fields(Notifications)), "notifications",
             replies.NotificationsReply, """
             Alert notifications about your schedules, newest first: which transition (failed,
             recovered, missed, late, ...), which channel, and whether it was delivered yet."""),
    ]  # fmt: skip


# --- the server ---------------------------------------------------------------------------------------


class _Arguments(ArgModelBase):
    """Hands the tool its arguments as they came: the tool validates them with its own model, so that a
    refusal says what to fix in the protocol's words (the SDK's would be pydantic's), and nothing is
    parsed out of a string (the SDK would read '[1]' as a list)."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.__pydantic_extra__ or {})}


def build_server(
    protocol: RequestHandler,
    source_of: SourceOf,
    on_change: OnChange | None = None,
    *,
    operator: bool = False,
) -> MCPServer:
    """An MCP server whose tools call `protocol` as the source `source_of` picks for each call. An
    `operator` session (stdio, as the local operator) also has schedules_approve and schedules_reject."""
    specs = [*_specs(), *(_operator_specs() if operator else [])]
    tools = [_tool(spec, _Call(spec, protocol, source_of, on_change)) for spec in specs]
    return MCPServer(
        "cronwright", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING", tools=tools
    )


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.arguments.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


def _tool(spec: ToolSpec, call: _Call) -> Tool:
    return Tool(
        fn=call,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=input_schema(spec),
        fn_metadata=FuncMetadata(
            arg_model=_Arguments, output_schema=spec.reply.model_json_schema(mode="serialization")
        ),
        is_async=False,
        context_kwarg="ctx",
        annotations=spec.hints.model_copy(update={"title": spec.title}),
    )


def tool_specs() -> dict[str, ToolSpec]:
    """Every tool, by name."""
    return {spec.name: spec for spec in _specs()}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cronwright")
    except PackageNotFoundError:
        return "0"


def in_tool_terms(message: str) -> str:
    """A protocol message with the actions it names (`list`) named as the tools are (schedules_list)."""
    for action, tool in TOOL_OF.items():
        message = message.replace(f"`{action}`", tool)
    return message


def refusal_text(reply: Reply) -> str:
    """The text of a tool error: the protocol's message (which says what to fix), then its code."""
    where = f", field {reply['field']}" if reply.get("field") else ""
    state = f", state {reply['state']}" if reply.get("state") else ""
    message = in_tool_terms(str(reply.get("message", "refused")))
    return f"{message} [{reply.get('error', 'invalid')}{where}{state}]"


class _Call:
    """One tool's body: validate its arguments, send the protocol request, and answer."""

    def __init__(
        self, spec: ToolSpec, protocol: RequestHandler, source_of: SourceOf, on_change: OnChange | None
    ):
        self._spec = spec
        self._protocol = protocol
        self._source_of = source_of
        self._on_change = on_change

    def __call__(self, ctx: Context, arguments: dict[str, Any]) -> CallToolResult:
        source = self._source_of(ctx.request_context.request)
        if source is None:
            return _error("not authorized")
        try:
            given = self._spec.arguments.model_validate(arguments)
        except ValidationError as error:
            refused = refusal(error, self._spec.arguments, self._spec.name, noun="argument")
            return _error(refusal_text(refused.reply()))
        values = given.model_dump()
        reply = self._protocol.dispatch(self._spec.request(values), source)
        if not reply.get("ok"):
            return _error(refusal_text(reply))
        if self._on_change is not None and self._spec.action not in _READS:
            self._on_change(self._spec.action)
        if self._spec.action == "list" and not values.get("verbose"):
            reply = {**reply, "jobs": [lean(row) for row in reply["jobs"]]}
        # The summary first: it says in words what an agent must heed (awaiting approval, handed to a
        # node, more pages) and is what a person sees first; every client hands on every text block.
        return CallToolResult(
            content=[
                TextContent(type="text", text=summary(self._spec.action, reply)),
                TextContent(type="text", text=json.dumps(reply, ensure_ascii=False)),
            ],
            structured_content=reply,
        )


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def lean(row: Mapping[str, Any]) -> dict[str, Any]:
    """A job row cut to what tells schedules apart (schedules_list without verbose)."""
    last = row.get("last_run")
    short = {key: row[key] for key in replies.LEAN_FIELDS if key in row}
    short["last_outcome"] = last["outcome"] if last else None
    return short


def _backfilled(reply: Mapping[str, Any]) -> str:
    """A backfill's line: what it queued (or would), and whether the range holds more."""
    found = reply["occurrences"]
    shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
    name = reply["job"]["name"]
    if reply.get("dry_run"):
        would = counted(len(found), "occurrence")
        said = f"dry run, nothing written: a backfill of '{name}' would queue {would}"
    elif not found:
        said = f"nothing to backfill for '{name}': every occurrence of the range ran, waits, or is excluded"
    else:
        queued = counted(reply["queued"], "occurrence")
        said = f"queued {queued} of '{name}' to run one at a time, oldest first"
    said += f": {shown}" if found else ""
    if reply.get("more"):
        said += f"; the range holds more: call again from {reply.get('next_from')}"
    return said


def summary(action: str, reply: Mapping[str, Any]) -> str:
    """One line saying what the reply holds; the reply itself is the structured content."""
    if reply.get("dry_run") and "firings" in reply:
        job = reply["job"]
        firings = ", ".join(reply["firings"][:5]) or "none"
        quota = reply["quota"]
        limit = f" of {quota['max']}" if quota["max"] is not None else ""
        return (
            f"dry run, nothing written: '{job['name']}' ({job['target']}.{job['action']}) would be "
            f"{job['state']}, firing {firings}; ends {reply['ends_at']}; you would have "
            f"{quota['used']}{limit} live schedules"
        )
    if action == "backfill":
        return _backfilled(reply)
    if "job" in reply:
        job = reply["job"]
        said = (
            f"'{job['name']}' ({job['target']}.{job['action']}): {job['state']}, next run "
            f"{job.get('next_run_at') or 'none'}, ends {job['ends_at']}"
        )
        if job.get("paused_at"):
            why = f": {job['pause_note']}" if job.get("pause_note") else ""
            said += f"; paused since {job['paused_at']}{why}"
        if reply.get("deduped"):
            said += "; the schedule of this dedupe_key, which was there already"
        if reply.get("awaiting_approval"):
            said += (
                ". It awaits an operator's approval: it is pending and fires nothing until an operator "
                "approves it (which arms it from that moment) or rejects it (which deletes it); it counts "
                "against your max_schedules meanwhile, and schedules_get or schedules_audit show the decision"
            )
        if reply.get("handed_to"):
            said += f"; serving node {reply['handed_to']} runs it: schedules_history shows its outcome"
        if "runs" in reply:
            said += f"; {counted(len(reply['runs']), 'recent run')}"
        return said
    if action == "list":
        names = [row["name"] for row in reply["jobs"]]
        listed = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        more = (
            f"; more follow after_name {reply['next_after_name']!r}" if reply.get("next_after_name") else ""
        )
        return counted(len(names), "schedule") + (f": {listed}" if names else "") + more
    if action == "history":
        runs = reply["runs"]
        newest = (
            f"; newest: {runs[0]['schedule']} {runs[0]['outcome']} at {runs[0]['finished_at']}"
            if runs
            else ""
        )
        return f"{counted(len(runs), 'run')}{newest}"
    if action == "audit":
        entries = reply["entries"]
        newest = (
            f"; newest: {entries[0]['action']} of '{entries[0]['name']}' by {entries[0]['source']} at "
            f"{entries[0]['at']}"
            if entries
            else ""
        )
        return f"{counted(len(entries), 'audit entry', 'audit entries')}{newest}"
    if action == "preview":
        firings = ", ".join(reply["firings"][:3])
        return f"{reply['expression']} ({reply['explanation']}, {reply['tz']}): next {firings}"
    if action == "targets":
        return f"{counted(len(reply['targets']), 'target')}: " + "; ".join(
            f"{t['target']} ({', '.join(a['action'] for a in t['actions'])})" for t in reply["targets"]
        )
    if action == "notifications":
        rows = reply["deliveries"]
        newest = (
            f"; newest: {rows[0]['transition']} of {(rows[0].get('job') or {}).get('name', '-')} to "
            f"{rows[0]['channel']}, {rows[0]['state']}"
            if rows
            else ""
        )
        return f"{counted(len(rows), 'notification')}{newest}"
    return "done"


# --- stdio ----------------------------------------------------------------------------------------------


def serve_stdio(
    protocol: RequestHandler, node: Node, source: Source, on_change: OnChange | None = None
) -> None:
    """Serves MCP over stdin and stdout as `source` until the client closes the connection."""

    def changed(action: str) -> None:
        if action == "run_now":
            # This process has no scheduling loop: a watcher records the run's outcome when it ends.
            threading.Thread(target=keep_runs, args=(node,), name="cronwright-mcp-runs", daemon=True).start()
        if on_change is not None:
            on_change(action)

    build_server(protocol, lambda request: source, changed, operator=source.operator).run("stdio")


def keep_runs(node: Node) -> None:
    """Renews this process's lease while its runs are in flight, and records each one as it ends."""
    while node.in_flight():
        try:
            node.wait_for_runs(node.settings.lease_beat.total_seconds())
        except TimeoutError:
            node.store.beat(node.id, node.clock.now())
