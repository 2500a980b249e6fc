"""Every protocol request, declared once: one model per action, and `Request`, their union on `action`.

The models say the shape of a request: which fields, of which types and ranges, and that there are no
others. What a value means (a cron expression that can fire, a zone that exists, a lifetime within the
ceiling, a quota) is the service's to check. The protocol validates each request with these models before
the service sees it; `/openapi.json`, the MCP tools' schemas and the Python client are made from them.

This module holds the per-action models, the `MODELS` table and `example`; what they are built of (the
strict base `Model`, the schedules, `JobSpec` and `Changes`) is `declare.job_fields`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from cronwright.declare.job_fields import Changes, CronTexts, Exclude, Id, Instant, JobSpec, Model, Text, Zone
from cronwright.declare.types import Flag, choice, text, whole

STATES = ("pending", "active", "paused", "running", "expired", "done", "failed")
LIST_PAGE_MAX = 1000

Count = Annotated[int, whole(1, 1000)]
StateName = Annotated[str, choice(*STATES)]


# --- requests -------------------------------------------------------------------------------------------

RequestId = Annotated[
    Annotated[str, text(200, blank=True)] | None,
    Field(description="Echoed in the reply: at most 200 bytes of UTF-8.", examples=["req-7f3a"]),
]
JobName = Annotated[Text | None, Field(description="The schedule's name. Give this or job_id.")]
JobId = Annotated[Id | None, Field(description="The schedule's id, instead of its name.")]
Limit = Annotated[int, whole(1, LIST_PAGE_MAX)]
DryRun = Annotated[
    Flag | None,
    Field(
        description="true: check everything exactly as for the real request, write nothing, and answer "
        "with the schedule it would make, its next five firings and the quota it would use."
    ),
]


def _example(request: dict[str, Any]) -> ConfigDict:
    """The config of a request's model: its example, and for one that names a schedule, that it needs
    `name` or `job_id` (what JSON Schema can say of the check in `ByJob`)."""
    extra: dict[str, Any] = {"examples": [request]}
    if request["action"] in BY_JOB:
        # A null is no name: the one given must be a string (or an integer id).
        extra["anyOf"] = [
            {"required": ["name"], "properties": {"name": {"type": "string"}}},
            {"required": ["job_id"], "properties": {"job_id": {"type": "integer"}}},
        ]
    return ConfigDict(json_schema_extra=extra)


BY_JOB = ("update", "get", "pause", "resume", "run_now", "delete", "approve", "reject", "backfill")


class Request(Model):
    request_id: RequestId = None


class ByJob(Request):
    """A request about one schedule, named by `name` or `job_id`."""

    name: JobName = None
    job_id: JobId = None

    @model_validator(mode="after")
    def _named(self) -> ByJob:
        if self.name is None and self.job_id is None:
            raise PydanticCustomError("unnamed", "give the schedule's 'name' or its 'job_id'")
        return self


class CreateJob(Request):
    """Creates a schedule. Its reply: `job`, `persistence` (or `deduped: true` and the job that was)."""

    action: Literal["create_job"]
    job: JobSpec
    dry_run: DryRun = None

    model_config = _example({"action": "create_job", "job": {"name": "nightly-report", "target": "reports",
                 "action": "daily", "args": {"team": "ops"},
                 "schedule": {"cron": "0 7 * * *", "tz": "Europe/Berlin"}, "lifetime": "30d"}})  # fmt: skip


class Update(ByJob):
    """Changes what may change of a schedule (never its target or action). A new schedule re-arms from
    now; a lifetime is read from now and renews an expired schedule; without one the end stays."""

    action: Literal["update"]
    changes: Annotated[Changes, Field(description="The fields to change.")]
    dry_run: DryRun = None

    model_config = _example(
        {"action": "update", "name": "nightly-report", "changes": {"schedule": {"cron": "30 7 * * *"}}}
    )


class Get(ByJob):
    """One schedule and its ten most recent runs."""

    action: Literal["get"]
    model_config = _example({"action": "get", "name": "nightly-report"})


class ListJobs(Request):
    """The schedules the source may see, ordered by name; a page of `limit` when asked."""

    action: Literal["list"]
    state: Annotated[StateName | None, Field(description="Only schedules in this state.")] = None
    target: Annotated[Text | None, Field(description="Only schedules of this target.")] = None
    source: Annotated[
        Text | None,
        Field(
            description="Only schedules this source made (the operator's filter: any other source sees "
            "only its own, so another's name lists none)."
        ),
    ] = None
    limit: Annotated[
        Limit | None,
        Field(description="At most this many (a page); next_after_name says where the next starts."),
    ] = None
    after_name: Annotated[
        Text | None,
        Field(description="Only schedules whose name sorts after this one: the next_after_name of a page."),
    ] = None
    model_config = _example({"action": "list", "state": "active"})


Note = Annotated[
    Annotated[str, text(500, blank=True)] | None,
    Field(description="Why, in a few words (at most 500 characters): kept in the audit log."),
]


class Pause(ByJob):
    """Pauses an active schedule: it fires nothing until resumed. Its lifetime still runs."""

    action: Literal["pause"]
    note: Annotated[
        Annotated[str, text(500, blank=True)] | None,
        Field(
            description="Why, in a few words (at most 500 characters): shown on the row as pause_note "
            "until it is resumed, and kept in the audit log."
        ),
    ] = None
    model_config = _example({"action": "pause", "name": "nightly-report", "note": "upstream is down"})


class Resume(ByJob):
    """Resumes a paused schedule; its misfire policy decides what happens to what it missed."""

    action: Literal["resume"]
    note: Note = None
    model_config = _example({"action": "resume", "name": "nightly-report"})


class RunNow(ByJob):
    """Starts one run of an active schedule now, besides its timetable."""

    action: Literal["run_now"]
    model_config = _example({"action": "run_now", "name": "nightly-report"})


class Delete(ByJob):
    """Deletes a schedule for good; the reply holds the row that went."""

    action: Literal["delete"]
    model_config = _example({"action": "delete", "name": "nightly-report"})


class History(Request):
    """Recent runs, newest first: of one schedule, or of every schedule the source may see."""

    action: Literal["history"]
    name: Annotated[Text | None, Field(description="Only this schedule's runs.")] = None
    job_id: Annotated[Id | None, Field(description="Only this schedule's runs, by id.")] = None
    limit: Annotated[Limit | None, Field(description="At most this many runs (default 20).")] = None
    before: Annotated[
        Id | None,
        Field(description="Only runs older than the run with this id: the next_before of a page."),
    ] = None
    model_config = _example({"action": "history", "name": "nightly-report", "limit": 10})


class Approve(ByJob):
    """Approves a pending schedule (the operator only): it is armed from this moment."""

    action: Literal["approve"]
    note: Note = None
    model_config = _example({"action": "approve", "name": "nightly-report", "note": "looks right"})


class Reject(ByJob):
    """Rejects a pending schedule (the operator only): it is deleted; the reply holds the row that went."""

    action: Literal["reject"]
    note: Note = None
    model_config = _example({"action": "reject", "name": "nightly-report", "note": "too often"})


class Backfill(ByJob):
    """Runs the occurrences of [from, to) that never started (semantic 35): oldest first, one at a time,
    at most 1,000 a call, each with its own fire_id. What already ran, or is queued, is never queued
    again, however often and from however many nodes it is asked. A source's backfill counts as one of
    its max_schedules until its queue has started."""

    action: Literal["backfill"]
    from_: Annotated[
        Instant, Field(alias="from", description="The range's start (included), an ISO-8601 instant.")
    ]
    to: Annotated[Instant, Field(description="The range's end (left out), an ISO-8601 instant.")]
    dry_run: Annotated[
        Flag | None,
        Field(description="true: list the occurrences it would queue, and write nothing."),
    ] = None
    model_config = _example(
        {"action": "backfill", "name": "nightly-report", "from": "2026-02-01T00:00:00+01:00",
         "to": "2026-02-08T00:00:00+01:00", "dry_run": True}
    )  # fmt: skip


class Audit(Request):
    """Who changed what, newest first: the audit entries the source may read (its own, and those about its
    own schedules; the operator reads all), of one schedule or one source if asked."""

    action: Literal["audit"]
    name: Annotated[
        Text | None, Field(description="Only this schedule's entries (a deleted one's by the name it had).")
    ] = None
    job_id: Annotated[Id | None, Field(description="Only this schedule's entries, by id.")] = None
    source: Annotated[Text | None, Field(description="Only entries this source made.")] = None
    limit: Annotated[Limit | None, Field(description="At most this many entries (default 20).")] = None
    before: Annotated[
        Id | None,
        Field(description="Only entries older than the entry with this id: the next_before of a page."),
    ] = None
    model_config = _example({"action": "audit", "name": "nightly-report", "limit": 10})


class Tick(Request):
    """Runs one scheduling pass now and waits for the runs it started (the local operator only)."""

    action: Literal["tick"]
    model_config = _example({"action": "tick"})


class Status(Request):
    """The node, its store, the schedules by state, and the runs in flight."""

    action: Literal["status"]
    model_config = _example({"action": "status"})


class Preview(Request):
    """A cron expression's normalized form, its explanation, and its next firings."""

    action: Literal["preview"]
    expression: Annotated[
        CronTexts,
        Field(
            description="The cron expression, or a list of them (their union).",
            examples=["0 7 * * MON-FRI", ["0 9 * * 1-5", "0 12 * * 6"]],
        ),
    ]
    tz: Annotated[Zone | None, Field(description="The IANA zone to read it in (default: the node zone).")] = (
        None
    )
    after: Annotated[
        Instant | None, Field(description="Firings after this ISO-8601 instant (default: now).")
    ] = None
    exclude: Exclude = None
    count: Annotated[Count | None, Field(description="How many firings (default 5).")] = None
    model_config = _example(
        {"action": "preview", "expression": "0 7 * * MON-FRI", "tz": "Europe/Berlin", "count": 3}
    )


class Targets(Request):
    """The targets and actions the source may schedule, with each action's args schema."""

    action: Literal["targets"]
    model_config = _example({"action": "targets"})


class Notifications(Request):
    """Alert notifications (semantic 38), newest first, with their delivery state: of every schedule for
    the operator, of the source's own schedules for a source."""

    action: Literal["notifications"]
    limit: Annotated[Limit | None, Field(description="At most this many (default 20).")] = None
    before: Annotated[
        Annotated[str, text(100)] | None,
        Field(description="Only notifications older than the one with this id: the next_before of a page."),
    ] = None
    model_config = _example({"action": "notifications", "limit": 10})


class Interface(Request):
    """Every action, each with an example."""

    action: Literal["interface"]
    model_config = _example({"action": "interface"})


MODELS: dict[str, type[Request]] = {
    "create_job": CreateJob,
    "update": Update,
    "get": Get,
    "list": ListJobs,
    "pause": Pause,
    "resume": Resume,
    "run_now": RunNow,
    "delete": Delete,
    "history": History,
    "audit": Audit,
    "backfill": Backfill,
    "approve": Approve,
    "reject": Reject,
    "tick": Tick,
    "status": Status,
    "preview": Preview,
    "targets": Targets,
    "notifications": Notifications,
    "interface": Interface,
}

AnyRequest = Annotated[
    CreateJob
    | Update
    | Get
    | ListJobs
    | Pause
    | Resume
    | RunNow
    | Delete
    | History
    | Audit
    | Backfill
    | Approve
    | Reject
    | Tick
    | Status
    | Preview
    | Targets
    | Notifications
    | Interface,
    Field(discriminator="action"),
]


def example(action: str) -> dict[str, Any]:
    """The model's own example of a request for `action`."""
    extra: Any = MODELS[action].model_config.get("json_schema_extra")
    return dict(extra["examples"][0])
