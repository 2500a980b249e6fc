"""The operations every front shares: validation, authorization, quotas, then the engine and the store.

Each operation takes its request as the protocol validated it (its model in `declare.requests`: the
shape is checked there, once) and the source asking, and returns the reply's fields. What the values
mean (a cron expression that can fire, a zone that exists, a quota) is checked here. A refusal raises a
`Refusal` and changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
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
from cronwright.service import dryrun
from cronwright.service.job_rows import job_row
from cronwright.store.base import Write, WriteSet
from cronwright.targets.allowlist import Allowlist
from cronwright.timing.cron_set import CronSet
from cronwright.timing.durations import format_duration, parse_duration
from cronwright.timing.iso import parse_instant, render
from cronwright.timing.jitter import parse_jitter
from cronwright.timing.lifetime import resolve_end
from cronwright.timing.zones import zone

if TYPE_CHECKING:
    # The request models, for their types only: `tick` builds a service, validates no request, and must
    # not load pydantic for it (tests/cli/test_tick_imports.py). A request reaching an operation was
    # validated by them, so they are loaded by then; the isinstance checks import them there.
    from cronwright.declare.job_fields import (
        AtSpec,
        Changes,
        CronSpec,
        EveryMsSpec,
        EverySpec,
        JobSpec,
        ZoneSpec,
    )
    from cronwright.declare.requests import CreateJob, Request, Update

    # A schedule as a create or an update gives it (ZoneSpec: an update's zone alone).
    ScheduleSpec = CronSpec | EverySpec | EveryMsSpec | AtSpec

MAX_ARGS_BYTES = 16_384
LIST_PAGE_MAX = 1000  # the most rows one page of `list` holds
_MS = timedelta(milliseconds=1)
NEXT_FIRINGS = 5  # the occurrences to come that `get` (and `show`) lists
MAX_ORIGIN_BYTES = 4096  # a job's origin is stored with it and shown in every row


class Named(Protocol):
    """A request that may name one schedule, by `job_id` or `name` (a ByJob request, or history's)."""

    @property
    def name(self) -> str | None: ...

    @property
    def job_id(self) -> int | None: ...


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
        request: Request,
        source: Source,
        before: Job | None,
        after: Job | None,
        note: str | None = None,
        *,
        after_row: dict[str, Any] | None = None,
    ) -> AuditEntry:
        """The audit entry of a mutation of a job from `before` to `after` (semantic 36); `after_row`,
        when the caller has it already, is `after`'s row (so that a create renders its job once)."""
        job = after or before
        assert job is not None, "an entry records a job"
        if after is not None and after_row is None:
            after_row = self.row(after)
        return AuditEntry(
            at=self.node.clock.now(),
            source=source.name,
            action=action,
            job_id=job.id,
            name=job.name,
            owner=job.created_by,
            changes=changes(None if before is None else self.row(before), after_row),
            request_id=request.request_id,
            origin=dict(job.origin),
            note=note,
        )

    # --- reading --------------------------------------------------------------------------------

    def job(self, request: Named, source: Source) -> Job:
        """The job a request names by `job_id` or `name`, as that source may see it."""
        if request.job_id is not None:
            job = self.store.get(request.job_id)
            label = f"id {request.job_id}"
        else:
            assert request.name is not None, "the request's model requires a name or an id"
            job = self.store.find(request.name)
            label = f"name '{request.name}'"
        if job is None or not source.sees(job.created_by):
            raise NotFound(f"no job with {label}; `list` shows the jobs there are")
        return job

    # --- validation shared by create and update ------------------------------------------------

    def _schedule(
        self,
        spec: ScheduleSpec | ZoneSpec | None,
        run_at: str | None,
        source: Source,
        base: Schedule | None = None,
    ) -> Schedule:
        """The schedule a create (`base` None) or an update of a job scheduled `base` gives, normalized.

        The result is a value object, so two spellings of one schedule (`@daily` and `0 0 * * *`, `60m`
        and `PT1H`) compare equal. An update keeps what it is not given (DESIGN semantic 26): a cron
        without `tz` keeps the zone of a cron job, and a `tz` alone moves a cron job to that zone.
        The request's model checked the shape (one kind, its own keys); checks that depend on the moment
        (a `run_at` in the past) are `_check_new`'s.
        """
        from cronwright.declare.job_fields import AtSpec, ZoneSpec  # loaded: see TYPE_CHECKING above

        if run_at is not None and spec is not None:
            raise Invalid("schedule", "give either 'schedule' or 'run_at', not both")
        if run_at is not None:
            return AtSchedule(parse_instant(run_at, self.zone, "run_at"))
        if spec is None:
            raise Invalid(
                "schedule",
                '\'schedule\' is required: {"cron": "0 3 * * *"}, {"every": "5m"} or {"at": ISO}',
            )
        if isinstance(spec, ZoneSpec):
            if base is None:
                raise Invalid(
                    "schedule", "'schedule' needs exactly one of 'cron', 'every', 'every_ms' or 'at'"
                )
            return self._moved_zone(spec.tz, base)
        timing = self._timing(spec, source, base)
        if isinstance(spec, AtSpec) or isinstance(timing, AtSchedule):
            return timing  # its model has no jitter and no exclude: it fires once, when given
        if spec.jitter is not None:
            spread = parse_jitter(spec.jitter, "schedule.jitter")
            # Offsets are whole milliseconds (timing/jitter.py), and so is the stored jitter.
            timing = replace(timing, jitter=spread - spread % _MS)
        if spec.exclude:
            timing = replace(timing, exclude=self._calendar_names(spec.exclude, "schedule.exclude"))
        return timing

    def _calendar_names(self, names: list[str], field: str) -> tuple[str, ...]:
        """The calendars a schedule (or a preview) excludes, each once, in the order given; a name no
        [calendars.NAME] defines is refused (`unknown_calendar`, semantic 33)."""
        self.node.rules.calendars.check(names)
        return tuple(dict.fromkeys(names))

    def _timing(self, spec: ScheduleSpec, source: Source, base: Schedule | None) -> Schedule:
        """The schedule `spec` gives, without its jitter."""
        from cronwright.declare.job_fields import AtSpec, CronSpec, EveryMsSpec  # see TYPE_CHECKING above

        if isinstance(spec, CronSpec):
            expression = CronSet.parse(spec.cron, "schedule.cron")
            if spec.tz:
                return CronSchedule(expression, zone(spec.tz, "schedule.tz").key)
            kept = base.tz if isinstance(base, CronSchedule) else self.zone.key
            return CronSchedule(expression, kept)
        if isinstance(spec, AtSpec):
            return AtSchedule(parse_instant(spec.at, self.zone, "run_at"))
        if isinstance(spec, EveryMsSpec):
            period = timedelta(milliseconds=spec.every_ms)
        else:
            period = parse_duration(spec.every, "schedule.every")
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

    def _moved_zone(self, tz_name: str, base: Schedule) -> CronSchedule:
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

    def _args(self, args: dict[str, Any] | None, target: str, action: str) -> dict[str, Any]:
        args = args or {}
        if "cron" in args:
            raise Invalid(
                "args", "args may not hold a 'cron' key: the scheduler adds it, so it cannot be forged"
            )
        if len(repr(args)) > MAX_ARGS_BYTES:
            raise Invalid("args", f"args are larger than {MAX_ARGS_BYTES} bytes; keep large data elsewhere")
        self.allowlist.check(target, action, args)
        return args

    def _knobs(self, given: JobSpec | Changes, base: Job | None) -> dict[str, Any]:
        """The misfire and overlap policies (semantic 34), retries and breaker: what is given, else the
        job's own (`base`), else the defaults."""
        return {
            "misfire": Misfire(given.misfire) if given.misfire else (base.misfire if base else Misfire.SKIP),
            "overlap": Overlap(given.overlap) if given.overlap else (base.overlap if base else Overlap.SKIP),
            "max_attempts": _given(given.max_attempts, base.max_attempts if base else 1),
            "retry_backoff_ms": _given(given.retry_backoff_ms, base.retry_backoff_ms if base else 1000),
            "breaker_threshold": _given(given.breaker_threshold, base.breaker_threshold if base else 3),
        }

    # --- changing -------------------------------------------------------------------------------

    def create_job(self, request: CreateJob, source: Source, *, audit_as: str = "create") -> dict[str, Any]:
        """Creates a job. `audit_as` is the audit entry's action (a seed's upsert says `seed`)."""
        spec = request.job
        dry = bool(request.dry_run)
        now = self.node.clock.now()
        name, target, action = spec.name, spec.target, spec.action
        if not source.allows(target, action):
            raise TargetNotAllowed(
                f"source '{source.name}' may not schedule {target}.{action}; `targets` lists what it may"
            )
        dedupe_key = spec.dedupe_key
        once = bool(spec.once)
        if once and dedupe_key is None:
            raise Invalid("once", "'once' needs a 'dedupe_key': it means at most once ever for that key")
        if once and self.store.inner.persistence is Persistence.MEMORY_ONLY:
            raise Invalid("once", "'once' needs a durable store; this node keeps jobs in memory only")
        schedule = self._schedule(spec.schedule, spec.run_at, source)
        self._check_new(schedule, now)
        ends_at = self._lifetime(spec.lifetime, source, now)
        args = self._args(spec.args, target, action)
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
            origin=_origin(spec.origin) or {"source": source.name},
            **self._knobs(spec, None),
        )
        # What the job and its audit entry will be is worked out before the store's write lock is taken:
        # while it is held, a firing node's claim waits (store/turnstile.py), so it holds only the reads
        # that decide the create and the write itself.
        armed = engine.arm(job, now)
        made = _awaiting(armed, source)
        shown = self.row(made)
        entry = self.entry(audit_as, request, source, None, made, after_row=shown)
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
            if dry:
                return self._dry(made, source, adds=1, armed=armed)
            stored = self.store.insert(made, entry)
            if timetable.jitter_of(schedule) is not None and stored.state is not State.PENDING:
                stored = self._jitter_with_id(stored, now)
        self.node.wake()
        # The insert changed only the id (and the version, which a row does not show), unless a jitter
        # armed the job again: the row rendered for the audit entry is the reply's, with its id.
        row = {**shown, "id": stored.id} if stored.version == 1 else self.row(stored)
        return _approval({"job": row, "persistence": self.store.persistence.value}, stored)

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

    def update(self, request: Update, source: Source, *, audit_as: str = "update") -> dict[str, Any]:
        """Changes what the request's `changes` give, and keeps every field they leave out (the fields
        the caller sent are its `model_fields_set`: a null sent is not a field left out)."""
        job = self.job(request, source)
        changes = request.changes
        given = changes.model_fields_set
        if not given:
            mutable = ", ".join(sorted(type(changes).model_fields))
            raise Invalid("changes", f"'changes' must be an object with any of: {mutable}")
        engine.check_updatable(job)
        dry = bool(request.dry_run)
        now = self.node.clock.now()
        updated = job.evolve(updated_at=now, **self._knobs(changes, job))
        if "name" in given:
            if changes.name is None:
                raise Invalid("name", "'name' is required")
            other = self.store.find(changes.name)
            if other is not None and other.id != job.id:
                raise NameTaken(f"a job named '{changes.name}' exists; choose another name")
            updated = updated.evolve(name=changes.name)
        if "args" in given:
            updated = updated.evolve(args=self._args(changes.args, job.target, job.action))
        if "schedule" in given or "run_at" in given:
            schedule = self._schedule(changes.schedule, changes.run_at, source, job.schedule)
            if schedule != job.schedule:
                # A changed schedule re-arms from the moment of the update; the same schedule, however
                # spelled, keeps its next occurrence (and an `every` job its phase).
                self._check_new(schedule, now)
                updated = engine.arm(updated.evolve(schedule=schedule), now)
        if "lifetime" in given:
            if changes.lifetime is None:
                # Only an explicit lifetime renews: a null must never stretch a life to the ceiling.
                raise Invalid(
                    "lifetime",
                    "'lifetime' must be a duration such as 30d or an end instant; leave it out "
                    "to keep the end where it is",
                )
            updated = engine.renew(updated, self._lifetime(changes.lifetime, source, now), now)
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


def _given(value: int | None, default: int) -> int:
    return default if value is None else value


def _origin(labels: dict[str, Any] | None) -> dict[str, Any]:
    """A job's origin labels (their values the model checked), within MAX_ORIGIN_BYTES."""
    if labels and len(repr(labels)) > MAX_ORIGIN_BYTES:
        raise Invalid(
            "origin", f"'origin' is larger than {MAX_ORIGIN_BYTES} bytes; keep it to a few short labels"
        )
    return labels or {}


def _awaiting(job: Job, source: Source) -> Job:
    """The job as a source that needs approval leaves it: pending, with no firing until approved."""
    if not source.needs_approval or source.operator:
        return job
    return job.evolve(state=State.PENDING, next_run_at=None, paused_by=None)


def _approval(reply: dict[str, Any], job: Job) -> dict[str, Any]:
    """A reply about a job that waits for approval says so."""
    return {**reply, "awaiting_approval": True} if job.state is State.PENDING else reply
