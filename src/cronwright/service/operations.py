"""The operations every front shares: validation, authorization, quotas, then the engine and the store.

Each operation takes the request's fields as decoded JSON and the source asking, and returns the
reply's fields. A refusal raises a `Refusal` and changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.core import engine, timetable
from cronwright.core.audit import AuditEntry, changes
from cronwright.core.model import (
    AtSchedule,
    CronSchedule,
    EverySchedule,
    Job,
    Misfire,
    Overlap,
    Persistence,
    Schedule,
    State,
)
from cronwright.core.notifications import Notification
from cronwright.core.sources import Source
from cronwright.errors import (
    ImmutableField,
    Invalid,
    JobRunning,
    LifetimeTooLong,
    NameTaken,
    NotFound,
    PeriodTooShort,
    QuotaExceeded,
    RunAtPassed,
    TargetNotAllowed,
)
from cronwright.node.scheduler import Node
from cronwright.service import dryrun, fields
from cronwright.service.job_rows import job_row
from cronwright.store.base import Write, WriteSet
from cronwright.targets.allowlist import Allowlist
from cronwright.timing.cron_set import CronSet
from cronwright.timing.durations import format_duration, parse_duration
from cronwright.timing.iso import parse_instant, render
from cronwright.timing.jitter import parse_jitter
from cronwright.timing.lifetime import resolve_end
from cronwright.timing.zones import zone

JOB_FIELDS = {
    "name", "target", "action", "args", "schedule", "run_at", "lifetime", "misfire", "max_attempts",
    "retry_backoff_ms", "breaker_threshold", "dedupe_key", "once", "origin", "overlap",
}  # fmt: skip
MUTABLE = {"schedule", "run_at", "args", "lifetime", "name", "misfire", "max_attempts", "retry_backoff_ms",
           "breaker_threshold", "overlap"}  # fmt: skip
IMMUTABLE = {"target", "action", "dedupe_key", "origin", "created_by", "once", "id"}
SCHEDULE_KEYS = {"cron", "tz", "every", "every_ms", "at", "jitter", "exclude"}
MAX_ARGS_BYTES = 16_384
LIST_PAGE_MAX = 1000  # the most rows one page of `list` holds
_MS = timedelta(milliseconds=1)
NEXT_FIRINGS = 5  # the occurrences to come that `get` (and `show`) lists


@dataclass(frozen=True, slots=True)
class Limits:
    zone: ZoneInfo
    max_lifetime: timedelta = timedelta(days=90)
    min_period: timedelta = timedelta(seconds=60)
    misfire_grace: timedelta = timedelta(seconds=60)
    # The runs each job's history keeps (node.run_history): a backfill reads them to tell what ran.
    run_history: int = 100


class Service:
    def __init__(self, node: Node, allowlist: Allowlist, limits: Limits) -> None:
        self.node = node
        self.store = node.store
        self.allowlist = allowlist
        self.limits = limits
        # Serializes a create's dedupe, quota and name checks with its insert, so concurrent creates
        # cannot slip past a dedupe key or a source's max_schedules together: the lock among this
        # process's threads (HTTP and MCP), the store's exclusive section among processes and nodes.
        self._create_lock = threading.Lock()
        # How the last reload of the config went, for `status` (App.reload, issue 38); None before any.
        self.last_reload: dict[str, Any] | None = None

    @property
    def zone(self) -> ZoneInfo:
        return self.limits.zone

    def row(self, job: Job) -> dict[str, Any]:
        return job_row(job, self.zone)

    def entry(
        self,
        action: str,
        request: Mapping[str, Any],
        source: Source,
        before: Job | None,
        after: Job | None,
        note: str | None = None,
    ) -> AuditEntry:
        """The audit entry of a mutation of a job from `before` to `after` (semantic 36)."""
        job = after or before
        assert job is not None, "an entry records a job"
        request_id = request.get("request_id")
        return AuditEntry(
            at=self.node.clock.now(),
            source=source.name,
            action=action,
            job_id=job.id,
            name=job.name,
            owner=job.created_by,
            changes=changes(
                None if before is None else self.row(before), None if after is None else self.row(after)
            ),
            request_id=request_id if isinstance(request_id, str) else None,
            origin=dict(job.origin),
            note=note,
        )

    # --- reading --------------------------------------------------------------------------------

    def job(self, request: Mapping[str, Any], source: Source) -> Job:
        """The job a request names by `job_id` or `name`, as that source may see it."""
        if request.get("job_id") is not None:
            job_id = fields.integer(request, "job_id", 1, 2**62)
            job = self.store.get(job_id)
            label = f"id {job_id}"
        else:
            label = f"name '{fields.required_text(request, 'name')}'"
            job = self.store.find(request["name"])
        if job is None or not source.sees(job.created_by):
            raise NotFound(f"no job with {label}; `list` shows the jobs there are")
        return job

    # --- validation shared by create and update ------------------------------------------------

    def _schedule(self, job: Mapping[str, Any], source: Source, base: Schedule | None = None) -> Schedule:
        """The schedule a create (`base` None) or an update of a job scheduled `base` gives, normalized.

        The result is a value object, so two spellings of one schedule (`@daily` and `0 0 * * *`, `60m`
        and `PT1H`) compare equal. An update keeps what it is not given (DESIGN semantic 26): a cron
        without `tz` keeps the zone of a cron job, and a `tz` alone moves a cron job to that zone.
        Checks that depend on the moment (a `run_at` in the past) are `_check_new`'s.
        """
        run_at = job.get("run_at")
        raw = job.get("schedule")
        if run_at is not None and raw is not None:
            raise Invalid("schedule", "give either 'schedule' or 'run_at', not both")
        if run_at is not None:
            raw = {"at": run_at}
        if raw is None:
            raise Invalid(
                "schedule",
                '\'schedule\' is required: {"cron": "0 3 * * *"}, {"every": "5m"} or {"at": ISO}',
            )
        if not isinstance(raw, dict):
            raise Invalid("schedule", '\'schedule\' must be an object such as {"cron": "0 3 * * *"}')
        fields.only(raw, SCHEDULE_KEYS, "'schedule'")
        kinds = [k for k in ("cron", "every", "every_ms", "at") if k in raw]
        if not kinds and list(raw) == ["tz"] and base is not None:
            return self._moved_zone(raw, base)
        if len(kinds) != 1:
            raise Invalid("schedule", "'schedule' needs exactly one of 'cron', 'every', 'every_ms' or 'at'")
        if "tz" in raw and kinds != ["cron"]:
            raise Invalid("schedule.tz", "'tz' goes with 'cron' only; 'at' instants carry their own offset")
        timing = self._timing(raw, kinds[0], source, base)
        if isinstance(timing, AtSchedule):
            for extra in ("jitter", "exclude"):
                if raw.get(extra) is not None:
                    raise Invalid(
                        f"schedule.{extra}",
                        f"'{extra}' goes with 'cron' and 'every' only: 'at' fires once, when given",
                    )
            return timing
        if raw.get("jitter") is not None:
            spread = parse_jitter(raw["jitter"], "schedule.jitter")
            # Offsets are whole milliseconds (timing/jitter.py), and so is the stored jitter.
            timing = replace(timing, jitter=spread - spread % _MS)
        if raw.get("exclude"):
            timing = replace(timing, exclude=self._calendar_names(raw["exclude"], "schedule.exclude"))
        return timing

    def _calendar_names(self, names: object, field: str) -> tuple[str, ...]:
        """The calendars a schedule (or a preview) excludes, each once, in the order given; a name no
        [calendars.NAME] defines is refused (`unknown_calendar`, semantic 33)."""
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise Invalid(field, f"'{field}' must be a list of calendar names, such as [\"holidays\"]")
        self.node.rules.calendars.check(names)
        return tuple(dict.fromkeys(names))

    def _timing(self, raw: Mapping[str, Any], kind: str, source: Source, base: Schedule | None) -> Schedule:
        """The schedule of one `kind` (cron, every, every_ms, at) that `raw` gives, without its jitter."""
        kinds = [kind]
        if kinds == ["cron"]:
            expression = CronSet.parse(raw["cron"], "schedule.cron")
            tz_name = fields.text(raw, "tz", limit=64, required=False)
            if tz_name:
                return CronSchedule(expression, zone(tz_name, "schedule.tz").key)
            kept = base.tz if isinstance(base, CronSchedule) else self.zone.key
            return CronSchedule(expression, kept)
        if kinds == ["at"]:
            if not isinstance(raw["at"], str):
                raise Invalid(
                    "run_at", "'run_at' must be an ISO-8601 string such as 2026-12-01T09:00:00+01:00"
                )
            return AtSchedule(parse_instant(raw["at"], self.zone, "run_at"))
        if kinds == ["every_ms"]:
            period = timedelta(milliseconds=fields.integer(raw, "every_ms", 1, 10**12))
        else:
            period = parse_duration(raw["every"], "schedule.every")
        floor = max(self.limits.min_period, source.min_period or timedelta(0))
        if period < floor:
            whose = (
                f"source '{source.name}'s min_period"
                if source.min_period is not None and source.min_period >= self.limits.min_period
                else "the node's min_period"
            )
            raise PeriodTooShort(
                f"a period of {format_duration(period)} is shorter than {whose} of "
                f"{format_duration(floor)}; use at least {format_duration(floor)}",
                min_period=format_duration(floor),
            )
        return EverySchedule(period)

    def _moved_zone(self, raw: Mapping[str, Any], base: Schedule) -> CronSchedule:
        """`{"tz": Z}` alone: the cron job's expression, read in zone Z from now on."""
        if not isinstance(base, CronSchedule):
            raise Invalid(
                "schedule.tz",
                f"'tz' alone moves a cron schedule to another zone; this job's schedule is "
                f"'{base.kind}': give a whole schedule instead",
            )
        problem = base.expression.problem()
        if problem is not None:
            raise Invalid(
                "schedule.cron", f"the stored expression cannot be read ({problem}); give 'cron' too"
            )
        tz_name = fields.required_text(raw, "tz")
        return replace(base, tz=zone(tz_name, "schedule.tz").key)

    def _check_new(self, schedule: Schedule, now: datetime) -> None:
        """What a new schedule must meet at the moment it is given: a `run_at` is not long past
        (DESIGN semantic 4). A schedule an update leaves as it was is not new, so a one-shot whose
        instant passed while the node was down keeps its late run (semantic 6)."""
        if isinstance(schedule, AtSchedule) and schedule.at < now - self.limits.misfire_grace:
            raise RunAtPassed(
                f"'run_at' {render(schedule.at, self.zone)} is more than the misfire grace "
                f"({format_duration(self.limits.misfire_grace)}) in the past; give a future instant",
            )

    def _lifetime(self, spec: object, source: Source, now: datetime) -> datetime:
        ceiling = self.limits.max_lifetime
        whose = "the node's max_lifetime"
        if source.max_lifetime is not None and source.max_lifetime < ceiling:
            ceiling = source.max_lifetime
            whose = f"source '{source.name}'s max_lifetime"
        if spec is None:
            return now + ceiling
        try:
            return resolve_end(spec, now, self.zone, ceiling)
        except LifetimeTooLong as refusal:
            raise LifetimeTooLong(
                f"{refusal.message} ({whose})", max_lifetime=format_duration(ceiling)
            ) from None

    def _args(self, data: Mapping[str, Any], target: str, action: str) -> dict[str, Any]:
        args = fields.mapping(data, "args")
        if "cron" in args:
            raise Invalid(
                "args", "args may not hold a 'cron' key: the scheduler adds it, so it cannot be forged"
            )
        if len(repr(args)) > MAX_ARGS_BYTES:
            raise Invalid("args", f"args are larger than {MAX_ARGS_BYTES} bytes; keep large data elsewhere")
        self.allowlist.check(target, action, args)
        return args

    def _overlap(self, data: Mapping[str, Any], base: Job | None) -> Overlap:
        """The overlap policy (semantic 34): skip, buffer_one, allow or replace."""
        name = fields.text(data, "overlap", required=False)
        if not name:
            return base.overlap if base else Overlap.SKIP
        try:
            overlap = Overlap(name)
        except ValueError:
            raise Invalid(
                "overlap",
                f"'overlap' must be 'skip', 'buffer_one', 'allow' or 'replace', not {name[:50]!r}",
            ) from None
        return overlap

    def _knobs(self, data: Mapping[str, Any], base: Job | None) -> dict[str, Any]:
        misfire_name = fields.text(data, "misfire", required=False)
        try:
            misfire = Misfire(misfire_name) if misfire_name else (base.misfire if base else Misfire.SKIP)
        except ValueError:
            raise Invalid(
                "misfire", f"'misfire' must be 'skip' or 'coalesce', not {misfire_name!r}"
            ) from None
        return {
            "misfire": misfire,
            "overlap": self._overlap(data, base),
            "max_attempts": fields.integer(data, "max_attempts", 1, 100, base.max_attempts if base else 1),
            "retry_backoff_ms": fields.integer(
                data, "retry_backoff_ms", 0, 86_400_000, base.retry_backoff_ms if base else 1000
            ),
            "breaker_threshold": fields.integer(
                data, "breaker_threshold", 0, 1000, base.breaker_threshold if base else 3
            ),
        }

    # --- changing -------------------------------------------------------------------------------

    def create_job(
        self, request: Mapping[str, Any], source: Source, *, audit_as: str = "create"
    ) -> dict[str, Any]:
        """Creates a job. `audit_as` is the audit entry's action (a seed's upsert says `seed`)."""
        data = request.get("job")
        if not isinstance(data, dict):
            raise Invalid("job", "'job' must be an object with name, target, action and schedule (or run_at)")
        fields.only(data, JOB_FIELDS, "'job'")
        dry = fields.flag(request, "dry_run")
        now = self.node.clock.now()
        name = fields.name(data)
        target = fields.required_text(data, "target")
        action = fields.required_text(data, "action")
        if not source.allows(target, action):
            raise TargetNotAllowed(
                f"source '{source.name}' may not schedule {target}.{action}; `targets` lists what it may"
            )
        dedupe_key = fields.text(data, "dedupe_key", required=False)
        once = fields.flag(data, "once")
        if once and dedupe_key is None:
            raise Invalid("once", "'once' needs a 'dedupe_key': it means at most once ever for that key")
        if once and self.store.inner.persistence is Persistence.MEMORY_ONLY:
            raise Invalid("once", "'once' needs a durable store; this node keeps jobs in memory only")
        schedule = self._schedule(data, source)
        self._check_new(schedule, now)
        ends_at = self._lifetime(data.get("lifetime"), source, now)
        args = self._args(data, target, action)
        job = Job(
            id=0,
            name=name,
            target=target,
            action=action,
            args=args,
            schedule=schedule,
            ends_at=ends_at,
            created_at=now,
            updated_at=now,
            created_by=source.name,
            dedupe_key=dedupe_key,
            once=once,
            origin=fields.scalar_map(data, "origin") or {"source": source.name},
            **self._knobs(data, None),
        )
        with self._create_lock, self.store.exclusive():
            if dedupe_key is not None:
                existing = self._deduped(dedupe_key, once, source)
                if existing is not None:
                    return {"job": self.row(existing), "deduped": True, **({"dry_run": True} if dry else {})}
            if isinstance(schedule, AtSchedule) and schedule.at >= ends_at:
                raise Invalid(
                    "run_at", "'run_at' is at or after the end of the job's lifetime; give a longer lifetime"
                )
            self._check_quota(source)
            taken = self.store.find(name)
            if taken is not None:
                # Only the caller's own job may be offered for deletion: another source's is not its to see.
                yours = (
                    "; choose another name, or `delete` it first"
                    if source.sees(taken.created_by)
                    else ("; names are shared by every source: choose another")
                )
                raise NameTaken(f"a job named '{name}' exists{yours}")
            armed = engine.arm(job, now)
            made = _awaiting(armed, source)
            if dry:
                return self._dry(made, source, adds=1, armed=armed)
            stored = self.store.insert(made, self.entry(audit_as, request, source, None, made))
            if timetable.jitter_of(schedule) is not None and stored.state is not State.PENDING:
                stored = self._jitter_with_id(stored, now)
        self.node.wake()
        return _approval({"job": self.row(stored), "persistence": self.store.persistence.value}, stored)

    def _jitter_with_id(self, stored: Job, now: datetime) -> Job:
        """Arms a new job again now that the store gave it its id: a jitter offset is a function of the
        job's id (semantic 32), which the insert only just assigned."""
        rearmed = engine.arm(stored, now)
        if rearmed == stored or self.store.save(WriteSet([rearmed])).of(rearmed) is Write.LOST:
            return stored
        return rearmed.evolve(version=rearmed.version + 1)

    def _deduped(self, key: str, once: bool, source: Source) -> Job | None:
        # Keys are per source: another source's job is neither returned nor counted.
        rows = [
            (job, deleted) for job, deleted in self.store.with_dedupe_key(key) if source.sees(job.created_by)
        ]
        live = [job for job, deleted in rows if not deleted and job.state.live]
        if live:
            return live[-1]
        if once and rows:
            # At most once ever: a key that has a row that ended (or was deleted) makes this a no-op.
            return rows[-1][0]
        return None

    def _check_quota(self, source: Source) -> None:
        if source.max_schedules is None:
            return
        live = self.store.count_live(source.name)
        waiting = self._backfills_waiting(source)
        if live + waiting >= source.max_schedules:
            backfills = f" and {waiting} backfills still waiting to run" if waiting else ""
            raise QuotaExceeded(
                f"source '{source.name}' already has {live} live schedules{backfills}, its limit "
                f"(max_schedules = {source.max_schedules}); delete one first"
                + (", or let the backfills run" if waiting else ""),
                max_schedules=source.max_schedules,
            )

    def _backfills_waiting(self, source: Source) -> int:
        """The source's jobs with backfilled occurrences queued: each counts as one schedule against its
        max_schedules until its queue has started (docs/backfill.md). Counted by the store from an
        index, no job decoded: a create costs the same at a source's 100,000th schedule (semantic 42)."""
        if source.max_schedules is None:
            return 0
        return self.store.backfills_waiting(source.name)

    def quota_used(self, source: Source, adds: bool) -> tuple[int, int | None]:
        """The source's count against max_schedules were a backfill that `adds` a queue made, and the max."""
        used = self.store.count_live(source.name) + self._backfills_waiting(source) + int(adds)
        return used, source.max_schedules

    @contextmanager
    def quota_section(self, source: Source, adds: bool) -> Iterator[None]:
        """A section that checks the source's quota for one more schedule (or backfill) and writes it
        atomically with that check, as a create does; without `adds` (nothing new counts), just a section."""
        if not adds or source.max_schedules is None:
            yield
            return
        with self._create_lock, self.store.exclusive():
            self._check_quota(source)
            yield

    def _dry(self, job: Job, source: Source, adds: int, armed: Job | None = None) -> dict[str, Any]:
        """A dry run's reply: what the request would leave, written nowhere (DESIGN, protocol). A job
        that would wait for approval shows the firings it would have once approved now (`armed`)."""
        used = self.store.count_live(source.name) + self._backfills_waiting(source) + adds
        reply = dryrun.reply(self.row(job), armed or job, used, source.max_schedules, self.zone)
        return _approval(reply, job)

    def save(self, job: Job, entry: AuditEntry, notes: Sequence[Notification] = ()) -> dict[str, Any]:
        """Writes an operator's change, with its audit entry and the notifications of the transitions it
        makes; on a lost race the request is refused, never half-applied (and neither is written)."""
        written = self.store.save(WriteSet([job], audit=[entry], notes=notes)).of(job)
        if written is Write.LOST:
            current = self.store.get(job.id)
            state = current.state.value if current else "deleted"
            raise JobRunning(f"'{job.name}' changed while this request was handled; try again", state=state)
        self.node.wake()
        persistence = Persistence.DEGRADED if written is Write.KEPT else self.store.inner.persistence
        reply = {"job": self.row(job.evolve(version=job.version + 1)), "persistence": persistence.value}
        return _approval(reply, job)

    def update(
        self, request: Mapping[str, Any], source: Source, *, audit_as: str = "update"
    ) -> dict[str, Any]:
        job = self.job(request, source)
        changes = request.get("changes")
        if not isinstance(changes, dict) or not changes:
            raise Invalid("changes", f"'changes' must be an object with any of: {', '.join(sorted(MUTABLE))}")
        for key in changes:
            if key in IMMUTABLE:
                raise ImmutableField(f"'{key}' cannot change; create a new job for another {key}", field=key)
        fields.only(changes, MUTABLE, "'changes'")
        engine.check_updatable(job)
        dry = fields.flag(request, "dry_run")
        now = self.node.clock.now()
        updated = job.evolve(updated_at=now, **self._knobs(changes, job))
        if "name" in changes:
            name = fields.name(changes)
            other = self.store.find(name)
            if other is not None and other.id != job.id:
                raise NameTaken(f"a job named '{name}' exists; choose another name")
            updated = updated.evolve(name=name)
        if "args" in changes:
            updated = updated.evolve(args=self._args(changes, job.target, job.action))
        if "schedule" in changes or "run_at" in changes:
            schedule = self._schedule(changes, source, job.schedule)
            if schedule != job.schedule:
                # A changed schedule re-arms from the moment of the update; the same schedule, however
                # spelled, keeps its next occurrence (and an `every` job its phase).
                self._check_new(schedule, now)
                updated = engine.arm(updated.evolve(schedule=schedule), now)
        if "lifetime" in changes:
            if changes["lifetime"] is None:
                # Only an explicit lifetime renews: a null must never stretch a life to the ceiling.
                raise Invalid(
                    "lifetime",
                    "'lifetime' must be a duration such as 30d or an end instant; leave it out "
                    "to keep the end where it is",
                )
            updated = engine.renew(updated, self._lifetime(changes["lifetime"], source, now), now)
        elif updated.next_run_at is not None and updated.next_run_at >= updated.ends_at:
            updated = updated.evolve(next_run_at=None)
        armed = updated
        if updated.schedule != job.schedule or updated.args != job.args or job.state is State.PENDING:
            # A new timing or new args from a source that needs approval wait for it again (semantic 37).
            updated = _awaiting(updated, source if job.state is not State.PENDING else _PENDING)
        if updated.evolve(updated_at=job.updated_at) == job:
            # Nothing changed (an unchanged seed at boot, say): nothing is written.
            if dry:
                return self._dry(job, source, adds=0)
            return {"job": self.row(job), "persistence": self.store.persistence.value}
        if updated.state.live and not job.state.live:
            # A renewal brings the job back to life, so it counts against the quota again: checked and
            # written in one exclusive section, as a create is, so racing renewals cannot both pass.
            with self._create_lock, self.store.exclusive():
                self._check_quota(source)
                if dry:
                    return self._dry(updated, source, adds=1, armed=armed)
                return self.save(updated, self.entry(audit_as, request, source, job, updated))
        if dry:
            return self._dry(updated, source, adds=0, armed=armed)
        return self.save(updated, self.entry(audit_as, request, source, job, updated))

    # --- approval (semantic 37) ----------------------------------------------------------------


# Stands for whoever changes a job that is pending already: it stays pending, whatever changes.
_PENDING = Source("", needs_approval=True)


def _awaiting(job: Job, source: Source) -> Job:
    """The job as a source that needs approval leaves it: pending, with no firing until approved."""
    if not source.needs_approval or source.operator:
        return job
    return job.evolve(state=State.PENDING, next_run_at=None, paused_by=None)


def _approval(reply: dict[str, Any], job: Job) -> dict[str, Any]:
    """A reply about a job that waits for approval says so."""
    return {**reply, "awaiting_approval": True} if job.state is State.PENDING else reply
