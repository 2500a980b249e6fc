"""Every protocol reply, declared once: the rows (a job, a run) and each action's reply.

The service builds its replies as plain JSON values (`cronwright.rows`); these models say their shape, for
`/openapi.json`, the MCP tools' output schemas and the Python client. A test checks real replies
against them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cronwright.core import model
from cronwright.declare.requests import STATES

ISO = "ISO-8601 with its offset, in the node zone, to the second."
# The value sets are the model's own enums (StrEnum: each compares equal to its string).
Outcome = model.Outcome
State = model.State
Persistence = model.Persistence


assert {state.value for state in State} == set(STATES)


class Row(BaseModel):
    """A shape the server answers with. Fields may be added to a reply in a later version."""

    model_config = ConfigDict(extra="allow", frozen=True)


class ScheduleRow(Row):
    """The schedule as stored: {cron, tz}, {every, every_ms} or {at}."""

    cron: str | list[str] | None = Field(None, description="One expression, or the list of several.")
    tz: str | None = None
    every: str | None = None
    every_ms: int | None = None
    at: str | None = Field(None, description=ISO)
    jitter: str | None = Field(None, description="The jitter, when it has one (semantic 32).")
    exclude: list[str] | None = Field(None, description="The calendars it excludes, when any (semantic 33).")


class LastRun(Row):
    fire_id: str
    fired_at: str = Field(description=ISO)
    attempt: int
    outcome: Outcome
    message: str
    took_ms: int


class Skipped(Row):
    overlap: int
    misfire: int
    calendar: int = Field(0, description="Occurrences a calendar excluded (semantic 33).")


class JobRow(Row):
    """A schedule as the protocol shows it."""

    id: int
    name: str
    target: str
    action: str = Field(description="The target's action it runs.")
    args: dict[str, Any]
    kind: Literal["cron", "every", "at"]
    schedule: ScheduleRow
    state: State
    paused_by: model.PausedBy | None
    pause_note: str | None = Field(None, description="Why it was paused (pause's note), while it is paused.")
    paused_at: str | None = Field(None, description="When it was paused, while it is paused. " + ISO)
    next_run_at: str | None = Field(description=ISO)
    schedule_error: str | None = Field(None, description="Why a stored schedule cannot be read.")
    ends_at: str = Field(description=ISO)
    last_run: LastRun | None
    consecutive_failures: int
    skipped: Skipped
    misfire: model.Misfire
    overlap: model.Overlap = model.Overlap.SKIP
    buffered: int = Field(0, description="Occurrences that waited for a running one (buffer_one).")
    buffered_for: str | None = Field(
        None, description="The occurrence waiting now (buffer_one, or replace until the stop lands). " + ISO
    )
    cancelled: int = Field(
        0, description="Occurrences that ended cancelled, stopped for a newer one (replace)."
    )
    overlapped: int = Field(0, description="Occurrences that started beside another in flight (allow).")
    in_flight: int = Field(0, description="Its occurrences in flight now, retries waiting included.")
    backfill_queued: int = Field(0, description="Backfilled occurrences waiting to run (semantic 35).")
    backfilled: int = Field(0, description="Backfilled occurrences that have started.")
    max_attempts: int
    retry_backoff_ms: int
    breaker_threshold: int
    dedupe_key: str | None
    once: bool
    origin: dict[str, str | int | float | bool | None]
    created_by: str = Field(description="The source that created it.")
    created_at: str = Field(description=ISO)
    updated_at: str = Field(description=ISO)


class Unreadable(Row):
    id: int
    error: str


class LeanJobRow(Row):
    """A schedule in a short list (MCP's schedules_list without verbose): what tells one from another."""

    id: int
    name: str
    target: str
    action: str
    schedule: ScheduleRow
    state: State
    next_run_at: str | None = Field(description=ISO)
    ends_at: str = Field(description=ISO)
    last_outcome: Outcome | None = Field(description="The outcome of its last run, if any.")


LEAN_FIELDS = tuple(LeanJobRow.model_fields)


class RunRow(Row):
    """One attempt, as the history keeps it."""

    id: int | None = Field(description="The run's id, what `before` pages on (null until it is written).")
    job_id: int
    schedule: str = Field(description="The schedule's name.")
    fire_id: str = Field(description="The occurrence's id, the same for each of its attempts.")
    attempt: int
    scheduled_for: str = Field(description=ISO)
    started_at: str = Field(description=ISO)
    finished_at: str = Field(description=ISO)
    outcome: Outcome
    message: str
    took_ms: int
    node: str
    output: str = Field(description="What the run printed (its tail).")


class Reply(Row):
    ok: Literal[True]
    request_id: str | None = Field(None, description="The request's request_id, echoed.")


class Quota(Row):
    used: int = Field(description="The source's live schedules once the request were made.")
    max: int | None = Field(description="Its max_schedules (null: no limit).")


class JobReply(Reply):
    """A schedule that was made, changed or removed (create_job, update, pause, resume, run_now, delete)."""

    # A deleted row that could not be read shows as `unreadable` lists it.
    job: JobRow | Unreadable
    persistence: Persistence | None = Field(None, description="How durably the change was stored.")
    deduped: bool | None = Field(None, description="True when a create found the schedule of its dedupe_key.")
    awaiting_approval: bool | None = Field(
        None, description="True when the schedule is pending: it waits for an operator's approve to fire."
    )
    # A dry run (`dry_run: true` on create_job or update) writes nothing and says what would be.
    dry_run: bool | None = Field(None, description="True when nothing was written: a dry run's answer.")
    firings: list[str] | None = Field(None, description="A dry run's next five firings (ISO-8601).")
    ends_at: str | None = Field(None, description="A dry run's end of the lifetime (" + ISO + ")")
    quota: Quota | None = Field(None, description="A dry run's count of live schedules against the limit.")


class RunNowReply(JobReply):
    handed_to: str | None = Field(
        None,
        description="The serving node that will run it, when a short-lived process (the CLI, a stdio MCP "
        "server) handed the run over rather than run it itself; `history` shows its outcome.",
    )


class Firing(Row):
    """An occurrence to come."""

    at: str = Field(description="When it fires, jitter included. " + ISO)
    nominal: str = Field(description="Its timetable instant, before jitter. " + ISO)
    excluded: str | None = Field(None, description="Why a calendar excludes it: it will not fire.")


class GetReply(Reply):
    job: JobRow
    runs: list[RunRow] = Field(description="Its most recent runs, newest first.")
    next_firings: list[Firing] = Field(
        default_factory=list, description="Its next occurrences, within its lifetime (at most five)."
    )


class ListReply(Reply):
    jobs: list[JobRow] = Field(description="Ordered by name.")
    next_after_name: str | None = Field(
        None, description="Where more follow: the after_name of the next page."
    )
    unreadable: list[Unreadable] | None = Field(None, description="Rows that cannot be read (operator only).")


class ShortListReply(Reply):
    """A list whose rows are short unless asked for whole (MCP's schedules_list)."""

    jobs: list[LeanJobRow | JobRow] = Field(description="Ordered by name.")
    next_after_name: str | None = Field(
        None, description="Where more follow: the after_name of the next page."
    )


class HistoryReply(Reply):
    runs: list[RunRow] = Field(description="Newest first.")
    next_before: int | None = Field(None, description="Where older runs follow: the before of the next page.")


class AuditEntryRow(Row):
    """One mutation of one schedule (semantic 36)."""

    id: int | None = Field(description="The entry's id, what `before` pages on.")
    at: str = Field(description=ISO)
    source: str = Field(description="The source that made the change (`cli`: the local operator).")
    request_id: str | None = Field(description="The request's request_id, if it had one.")
    origin: dict[str, Any] = Field(description="The schedule's origin labels.")
    action: str = Field(
        description="create, update, pause, resume, delete, run_now, approve, reject, or seed (an upsert)."
    )
    job_id: int
    name: str = Field(description="The schedule's name at the time.")
    changes: dict[str, list[Any]] = Field(
        description="Each field that changed: [before, after], as rows show it."
    )
    note: str | None = Field(None, description="The note given with the change, if any.")


class BackfillReply(Reply):
    """What a backfill queued (or, a dry run, would queue), oldest first."""

    occurrences: list[str] = Field(
        description="The occurrences' timetable instants (ISO-8601), oldest first."
    )
    queued: int = Field(description="How many were queued now (0 for a dry run, or when all had run).")
    more: bool = Field(description="True when the range holds more than one call queues: call again.")
    next_from: str | None = Field(None, description="Where the next call goes on, when `more`. " + ISO)
    job: JobRow
    persistence: Persistence | None = Field(None, description="How durably the queue was stored.")
    dry_run: bool | None = Field(None, description="True when nothing was written: a dry run's answer.")
    quota: Quota | None = Field(None, description="A dry run's count against max_schedules.")


class AuditReply(Reply):
    entries: list[AuditEntryRow] = Field(description="Newest first.")
    next_before: int | None = Field(
        None, description="Where older entries follow: the before of the next page."
    )


class TickReply(Reply):
    fired: int
    fire_ids: list[str]
    skipped: int


class Peer(Row):
    node: str
    last_beat: str = Field(description=ISO)


class LastReload(Row):
    ok: bool = Field(description="Whether the config was applied; false: refused, nothing changed.")
    at: str = Field(description=ISO)
    message: str = Field(description="What changed, or why nothing did.")


class NodeRow(Row):
    id: str
    now: str = Field(description=ISO)
    zone: str
    store: str
    persistence: Persistence
    store_state: str
    peers: list[Peer]
    unreadable: list[Unreadable]
    last_reload: LastReload | None = Field(
        None, description="The serving node's last reload of its config (SIGHUP); absent before any."
    )


class StatusReply(Reply):
    node: NodeRow
    counts: dict[str, int] = Field(description="Schedules by state (for a source: its own).")
    running: int = Field(description="Attempts running on this node now.")


class ExcludedFiring(Row):
    at: str = Field(description="ISO-8601 in tz.")
    reason: str


class PreviewReply(Reply):
    expression: str | list[str] = Field(description="The expression (or each of several), normalized.")
    explanation: str
    tz: str
    firings: list[str] = Field(description="The next firings, ISO-8601 in tz.")
    excluded: list[ExcludedFiring] | None = Field(
        None, description="Those of the firings that an excluded calendar takes out, and why."
    )


class TargetAction(Row):
    action: str
    args_schema: dict[str, Any] = Field(description="The JSON Schema its args must meet.")


class TargetRow(Row):
    target: str
    actions: list[TargetAction]


class TargetsReply(Reply):
    targets: list[TargetRow]


class DeliveryJob(Row):
    id: int
    name: str
    target: str
    action: str
    source: str


class DeliveryRow(Row):
    """One notification for one channel, as the outbox holds it."""

    id: str = Field(description="The idempotency key, sent as X-Cronwright-Notification-Id on every attempt.")
    channel: str = Field(description="The [notify.NAME] channel it goes to.")
    transition: str = Field(
        description="failed, recovered, breaker_paused, missed, late, expired, node_down, "
        "persistence_degraded, persistence_recovered, or digest."
    )
    state: Literal["pending", "delivered", "digested", "abandoned"] = Field(
        description="pending (waiting for its next attempt), delivered, digested (a digest carries it) or "
        "abandoned (still refused a day later)."
    )
    attempts: int = Field(description="Attempts so far.")
    created_at: str = Field(description=ISO)
    next_attempt_at: str | None = Field(description="When it is tried next, while pending. " + ISO)
    delivered_at: str | None = Field(description=ISO)
    last_error: str | None = Field(description="Why the last attempt failed.")
    digest_id: str | None = Field(description="The digest that carries it, once digested.")
    job: DeliveryJob | None = Field(
        description="The schedule it is about (null for a node's or the store's)."
    )
    message: str


class NotificationsReply(Reply):
    deliveries: list[DeliveryRow] = Field(description="Newest first.")
    next_before: str | None = Field(None, description="Where older ones follow: the before of the next page.")


class InterfaceEntry(Row):
    action: str
    example: dict[str, Any]


class InterfaceReply(Reply):
    actions: list[InterfaceEntry]


class Refused(Row):
    """A refusal: nothing changed. `message` says what was wrong and how to fix it."""

    ok: Literal[False]
    error: str = Field(description="The refusal's code.")
    message: str
    field: str | None = Field(None, description="The field that was wrong (for invalid).")
    state: str | None = Field(None, description="The schedule's state (for the job_* codes).")
    request_id: str | None = None


REPLIES: dict[str, type[Reply]] = {
    "create_job": JobReply,
    "update": JobReply,
    "get": GetReply,
    "list": ListReply,
    "pause": JobReply,
    "resume": JobReply,
    "run_now": RunNowReply,
    "delete": JobReply,
    "history": HistoryReply,
    "audit": AuditReply,
    "backfill": BackfillReply,
    "approve": JobReply,
    "reject": JobReply,
    "tick": TickReply,
    "status": StatusReply,
    "preview": PreviewReply,
    "targets": TargetsReply,
    "notifications": NotificationsReply,
    "interface": InterfaceReply,
}
