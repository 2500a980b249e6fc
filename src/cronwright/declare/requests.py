"""Every protocol request, declared once: one model per action, and `Request`, their union on `action`.

The models say the shape of a request: which fields, of which types and ranges, and that there are no
others. What a value means (a cron expression that can fire, a zone that exists, a lifetime within the
ceiling, a quota) is the service's to check. The protocol validates each request with these models before
the service sees it; `/openapi.json`, the MCP tools' schemas and the Python client are made from them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

from cronwright.declare.types import Flag, Labels, Name, Object, choice, one_or_more, text, texts, whole

STATES = ("pending", "active", "paused", "running", "expired", "done", "failed")
LIST_PAGE_MAX = 1000

Text = Annotated[str, text()]
# A cron schedule's expressions: one, or a list of up to 20 fired as their union (semantic 31).
CronTexts = Annotated[str | list[str], one_or_more(200, 20)]
Zone = Annotated[str, text(64, examples=["Europe/Berlin"])]
Instant = Annotated[str, text(64, examples=["2026-12-01T09:00:00+01:00"])]
Id = Annotated[int, whole(1, 2**62)]
Count = Annotated[int, whole(1, 1000)]
StateName = Annotated[str, choice(*STATES)]


class Model(BaseModel):
    """Strict, closed: a field of the wrong type is refused, never coerced, and an unknown field too."""

    # A field named as a Python keyword (backfill's `from`) is declared `from_` with its alias: it is
    # read and written, and shown in every schema, by the alias.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, serialize_by_alias=True)


# --- schedules ------------------------------------------------------------------------------------------


Jitter = Annotated[
    Annotated[str, text(64)] | None,
    Field(
        description="Delays each occurrence by a stable offset in [0, jitter), below the gap to the next "
        "one: the same on every node and restart (semantic 32). 1ms to 1d: 30s, 5m, PT5M.",
        examples=["5m"],
    ),
]


Exclude = Annotated[
    Annotated[list[str], texts(64, 20)] | None,
    Field(
        description="Names of [calendars.NAME] in the config: an occurrence whose nominal instant falls on "
        "one of their dates, in the schedule's zone, does not fire (semantic 33).",
        examples=[["holidays"]],
    ),
]


class CronSpec(Model):
    """Fires on a cron expression, read in a zone."""

    cron: Annotated[
        CronTexts,
        Field(
            description="5 fields (minute hour day month weekday), 6 with seconds first, or a macro: "
            "@hourly, @daily, @weekly, @monthly, @yearly. A list of up to 20 expressions fires at the "
            "union of their instants, each instant once.",
            examples=["0 7 * * MON-FRI", ["0 9 * * 1-5", "0 12 * * 6"]],
        ),
    ]
    tz: Annotated[Zone | None, Field(description="The IANA zone to read it in (default: the node zone).")] = (
        None
    )
    jitter: Jitter = None
    exclude: Exclude = None


class EverySpec(Model):
    """Fires at a fixed period."""

    every: Annotated[
        Text, Field(description="The period: 90s, 15m, 12h, 1d, or ISO-8601 such as PT15M.", examples=["15m"])
    ]
    jitter: Jitter = None
    exclude: Exclude = None


class EveryMsSpec(Model):
    """Fires at a fixed period, in milliseconds."""

    every_ms: Annotated[Annotated[int, whole(1, 10**12)], Field(description="The period in milliseconds.")]
    jitter: Jitter = None
    exclude: Exclude = None


class AtSpec(Model):
    """Fires once."""

    at: Annotated[Instant, Field(description="The instant, ISO-8601 with its offset.")]


class ZoneSpec(Model):
    """In an update only: the cron job's expression, read in another zone from now on."""

    tz: Annotated[Zone, Field(description="The IANA zone to read the job's cron expression in.")]


SCHEDULE_KINDS = ("cron", "every", "every_ms", "at")
# The tags of the schedule unions: a kind, or (in an update) "tz" for a zone alone.
SCHEDULE_TAGS = (*SCHEDULE_KINDS, "tz")


def _schedule_kind(value: Any) -> str | None:
    """The kind of schedule an object is: the one kind key it holds (None when not exactly one)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_unset=True)
    if not isinstance(value, dict):
        return None
    kinds = [kind for kind in SCHEDULE_KINDS if kind in value]
    return kinds[0] if len(kinds) == 1 else None


def _change_kind(value: Any) -> str | None:
    """As `_schedule_kind`, and "tz" for an object that holds only a zone."""
    if isinstance(value, BaseModel):  # when a validated request is dumped
        value = value.model_dump(exclude_unset=True)
    if isinstance(value, dict) and list(value) == ["tz"]:
        return "tz"
    return _schedule_kind(value)


ScheduleKind = Annotated[
    Annotated[CronSpec, Tag("cron")]
    | Annotated[EverySpec, Tag("every")]
    | Annotated[EveryMsSpec, Tag("every_ms")]
    | Annotated[AtSpec, Tag("at")],
    Discriminator(
        _schedule_kind,
        custom_error_type="schedule_kind",
        custom_error_message="needs exactly one of 'cron', 'every', 'every_ms' or 'at', such as {\"cron\": "
        '"0 3 * * *"}, {"every": "5m"} or {"at": "2026-12-01T09:00:00+01:00"}',
    ),
]
ChangeKind = Annotated[
    Annotated[CronSpec, Tag("cron")]
    | Annotated[EverySpec, Tag("every")]
    | Annotated[EveryMsSpec, Tag("every_ms")]
    | Annotated[AtSpec, Tag("at")]
    | Annotated[ZoneSpec, Tag("tz")],
    Discriminator(
        _change_kind,
        custom_error_type="schedule_kind",
        custom_error_message="needs exactly one of 'cron', 'every', 'every_ms' or 'at', such as {\"cron\": "
        '"0 3 * * *"}, {"every": "5m"} or {"at": "2026-12-01T09:00:00+01:00"}',
    ),
]
Schedule = Annotated[
    ScheduleKind | None,
    Field(
        description='When it fires, exactly one of: {"cron": EXPR | [EXPR, ...], "tz"?: ZONE}, '
        '{"every": "15m"}, {"every_ms": 900000} or {"at": ISO}; a cron or every schedule may add '
        '"jitter": "5m".',
        examples=[{"cron": "0 7 * * MON-FRI", "tz": "Europe/Berlin"}, {"every": "15m"}],
    ),
]

ChangeSchedule = Annotated[
    ChangeKind | None,
    Field(
        description='When it fires, exactly one of: {"cron": EXPR, "tz"?: ZONE}, {"every": "15m"}, '
        '{"every_ms": 900000} or {"at": ISO}; or {"tz": ZONE} alone, which moves a cron job to that zone '
        "and keeps its expression.",
        examples=[{"cron": "0 7 * * MON-FRI", "tz": "Europe/Berlin"}, {"every": "15m"}],
    ),
]

# --- the fields a job is made of, shared by create and update -------------------------------------------

RunAt = Annotated[
    Instant | None,
    Field(description='The one-shot shorthand for {"at": ISO}: the instant to fire at, with its offset.'),
]
Args = Annotated[
    Object | None,
    Field(
        description="The action's arguments, matching its args_schema (see the `targets` action). Default "
        "{}. It may not hold a 'cron' key.",
        examples=[{"team": "ops"}],
    ),
]
Lifetime = Annotated[
    Annotated[str, text(64)] | None,
    Field(
        description="How long the schedule lives: a duration from now (30d, 12h, P30D) or an end instant "
        "(2026-06-30T00:00:00+02:00). Default and ceiling: the source's max_lifetime. It never fires at or "
        "after its end.",
        examples=["30d"],
    ),
]
Misfire = Annotated[
    Annotated[str, choice("skip", "coalesce")] | None,
    Field(
        description="Occurrences missed while the node was down or busy: skip (the default: run none) or "
        "coalesce (run one catch-up for the latest)."
    ),
]
MaxAttempts = Annotated[
    Annotated[int, whole(1, 100)] | None,
    Field(description="Attempts per occurrence, retries included (default 1: no retry)."),
]
RetryBackoff = Annotated[
    Annotated[int, whole(0, 86_400_000)] | None,
    Field(description="Milliseconds before the first retry; it doubles at each retry (default 1000)."),
]
Overlap = Annotated[
    Annotated[str, choice("skip", "buffer_one", "allow", "replace")] | None,
    Field(
        description="A firing while the previous occurrence still runs: skip (the default: counted in "
        "skipped.overlap), buffer_one (one waits, and starts when the running one ends), allow (it "
        "starts beside the running ones, within max_concurrency: counted in overlapped) or replace (the "
        "running one is stopped, its run ends cancelled, and the new one starts)."
    ),
]
Breaker = Annotated[
    Annotated[int, whole(0, 1000)] | None,
    Field(description="Failed occurrences in a row that pause the schedule (default 3; 0 never pauses)."),
]


class JobSpec(Model):
    """A schedule to create: the shape a job row shows. Give `schedule` or `run_at`."""

    name: Annotated[
        Name, Field(description="A unique name: 1-100 letters, digits, '.', '_' or '-'.", examples=["report"])
    ]
    target: Annotated[Text, Field(description="The allowlisted target to run.", examples=["reports"])]
    action: Annotated[Text, Field(description="The target's action to run.", examples=["daily"])]
    args: Args = None
    schedule: Schedule = None
    run_at: RunAt = None
    lifetime: Lifetime = None
    misfire: Misfire = None
    max_attempts: MaxAttempts = None
    retry_backoff_ms: RetryBackoff = None
    breaker_threshold: Breaker = None
    overlap: Overlap = None
    dedupe_key: Annotated[
        Text | None,
        Field(
            description="An idempotency key: while a schedule of yours with this key lives, a create with "
            "it returns that schedule (deduped: true) instead of making a second one."
        ),
    ] = None
    once: Annotated[
        Flag | None,
        Field(description="With dedupe_key: at most once ever for that key, even after it ended."),
    ] = None
    origin: Annotated[
        Labels | None,
        Field(description="A few labels saying where the schedule came from (default: the source's name)."),
    ] = None


# The fields a change may not touch: refused as `immutable_field`, not as unknown.
IMMUTABLE = ("target", "action", "dedupe_key", "origin", "created_by", "once", "id")


class Changes(Model):
    """What an update changes; the fields left out keep their values."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    name: Annotated[Name | None, Field(description="A new name.")] = None
    schedule: ChangeSchedule = None
    run_at: RunAt = None
    args: Args = None
    lifetime: Lifetime = None
    misfire: Misfire = None
    max_attempts: MaxAttempts = None
    retry_backoff_ms: RetryBackoff = None
    breaker_threshold: Breaker = None
    overlap: Overlap = None


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
