"""What a job is made of, as the protocol's requests give it: the strict base `Model` of every request
model, the shared field types (text, zone, instant, id, cron expressions), the schedule kinds and their
unions, the fields a job is made of, `JobSpec` (what create makes) and `Changes` (what update changes).

The per-action request models, which are built of these, are `declare.requests`. As there, the models say
the shape of a value; what it means (a cron expression that can fire, a zone that exists) is the service's
to check.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from cronwright.declare.types import Flag, Labels, Name, Object, choice, one_or_more, text, texts, whole

Text = Annotated[str, text()]
# A cron schedule's expressions: one, or a list of up to 20 fired as their union (semantic 31).
CronTexts = Annotated[str | list[str], one_or_more(200, 20)]
Zone = Annotated[str, text(64, examples=["Europe/Berlin"])]
Instant = Annotated[str, text(64, examples=["2026-12-01T09:00:00+01:00"])]
Id = Annotated[int, whole(1, 2**62)]


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


# What a schedule of no kind is told, on create and on update alike.
NO_KIND = (
    "needs exactly one of 'cron', 'every', 'every_ms' or 'at', such as {\"cron\": \"0 3 * * *\"}, "
    '{"every": "5m"} or {"at": "2026-12-01T09:00:00+01:00"}'
)

ScheduleKind = Annotated[
    Annotated[CronSpec, Tag("cron")]
    | Annotated[EverySpec, Tag("every")]
    | Annotated[EveryMsSpec, Tag("every_ms")]
    | Annotated[AtSpec, Tag("at")],
    Discriminator(
        _schedule_kind,
        custom_error_type="schedule_kind",
        custom_error_message=NO_KIND,
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
        custom_error_message=NO_KIND,
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
