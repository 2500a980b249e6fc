"""The value objects: jobs, their schedules, occurrences and runs. Frozen; change them with `replace()`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from cronwright.timing.cron_set import CronSet


class State(StrEnum):
    # Waits for an operator's approve (semantic 37): never fires, counts against its source's quota.
    PENDING = "pending"
    ACTIVE = "active"
    PAUSED = "paused"
    RUNNING = "running"
    EXPIRED = "expired"
    DONE = "done"
    FAILED = "failed"

    @property
    def live(self) -> bool:
        """Live jobs can still fire; the default dedupe looks at these only."""
        return self in (State.PENDING, State.ACTIVE, State.PAUSED, State.RUNNING)


class Outcome(StrEnum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    REFUSED = "refused"
    INTERRUPTED = "interrupted"
    # Stopped by its job's overlap policy (replace) for a newer occurrence: the policy, not a failure.
    CANCELLED = "cancelled"

    @property
    def retryable(self) -> bool:
        """An interrupted run is never retried: its process died, so running it again could run it twice.
        Nor is a cancelled one: the occurrence that replaced it runs instead."""
        return self in (Outcome.ERROR, Outcome.TIMEOUT, Outcome.CRASHED, Outcome.REFUSED)

    @property
    def failed(self) -> bool:
        """Whether it counts as a failure (the breaker, the `failed` alert): neither ok nor cancelled."""
        return self not in (Outcome.OK, Outcome.CANCELLED)


class Misfire(StrEnum):
    SKIP = "skip"
    COALESCE = "coalesce"


class Overlap(StrEnum):
    """What a firing does while the job's previous occurrence is still in flight (semantic 34)."""

    SKIP = "skip"  # it is skipped, and counted in skipped.overlap
    BUFFER_ONE = "buffer_one"  # at most one waits, and starts when the running one ends
    # Each occurrence starts when due, beside those still in flight, within max_concurrency. The flights
    # of one job all run on one node (the one that holds its first), so a dead node's are found together.
    ALLOW = "allow"
    REPLACE = "replace"  # the running one is stopped (it ends cancelled), and the new one starts


class PausedBy(StrEnum):
    """Who paused a job. A source can pause only its own jobs, so `source` names the job's `created_by`."""

    OPERATOR = "operator"
    SOURCE = "source"
    BREAKER = "breaker"


class Persistence(StrEnum):
    PERSISTED = "persisted"
    DEGRADED = "degraded"
    MEMORY_ONLY = "memory_only"


@dataclass(frozen=True, slots=True)
class CronSchedule:
    # One expression or several, fired at the union of their instants (semantic 31).
    expression: CronSet
    tz: str
    # Each occurrence is delayed by a stable offset in [0, jitter) (semantic 32); None: no jitter.
    jitter: timedelta | None = None
    # The names of the calendars whose dates it does not fire on (semantic 33).
    exclude: tuple[str, ...] = ()

    kind = "cron"


@dataclass(frozen=True, slots=True)
class EverySchedule:
    period: timedelta
    jitter: timedelta | None = None
    exclude: tuple[str, ...] = ()

    kind = "every"


@dataclass(frozen=True, slots=True)
class AtSchedule:
    at: datetime

    kind = "at"


Schedule = CronSchedule | EverySchedule | AtSchedule


@dataclass(frozen=True, slots=True)
class LastRun:
    fire_id: str
    fired_at: datetime
    attempt: int
    outcome: Outcome
    message: str
    took_ms: int


@dataclass(frozen=True, slots=True)
class InFlight:
    """The occurrence a job is working on, retries included.

    Exactly one of two holds: node `node` is running attempt `attempt` (started at `started_at`, and
    covered by that node's lease), or the occurrence waits for its next attempt at `retry_at`.

    A `handed_off` occurrence is a `run_now` that a short-lived process (the CLI, a stdio MCP server)
    left in the store for a serving node to run (semantic 28): it waits at attempt 0 until a pass
    takes it, as it would a retry, so it survives its requester.
    """

    fire_id: str
    scheduled_for: datetime
    attempt: int
    started_at: datetime
    node: str | None
    manual: bool = False
    retry_at: datetime | None = None
    handed_off: bool = False
    # The timetable's instant before jitter (semantic 32); None when it is `scheduled_for` itself.
    nominal: datetime | None = None
    # Overlap replace asked for this attempt to stop: the node that runs it stops it, and it ends
    # `cancelled`. Durable, so that the holding node sees it whichever node decided it.
    cancel: bool = False

    @property
    def waiting_for_a_node(self) -> bool:
        """A handed-off run_now that no node has taken yet."""
        return self.handed_off and self.attempt == 0


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One attempt of one occurrence, as handed to a runner. `fire_id` is stable across retries."""

    job_id: int
    fire_id: str
    scheduled_for: datetime
    attempt: int
    fired_at: datetime
    manual: bool = False
    # The job's name when it fired: a run whose job is deleted meanwhile is still recorded under it.
    job_name: str = ""
    # The timetable's instant before jitter; `scheduled_for` is the instant it was due, jitter included.
    nominal: datetime | None = None

    @property
    def nominal_for(self) -> datetime:
        return self.scheduled_for if self.nominal is None else self.nominal


# Not slots: `evolve` copies a job's __dict__ in one C call, where a slotted copy sets 45 fields one by one
# (a pass copies each firing's job about six times).
@dataclass(frozen=True)
class Job:
    id: int
    name: str
    target: str
    action: str
    args: Mapping[str, Any]
    schedule: Schedule
    ends_at: datetime
    created_at: datetime
    updated_at: datetime
    created_by: str = "cli"
    state: State = State.ACTIVE
    paused_by: PausedBy | None = None
    # Why and when it was paused (pause --note; the breaker says its own), cleared on resume.
    pause_note: str | None = None
    paused_at: datetime | None = None
    # When the next occurrence is due, jitter included: what wakes a pass and what rows show.
    next_run_at: datetime | None = None
    # That occurrence's timetable instant before jitter (semantic 32); None when it is next_run_at itself.
    next_nominal: datetime | None = None
    last_run: LastRun | None = None
    consecutive_failures: int = 0
    skipped_overlap: int = 0
    skipped_misfire: int = 0
    skipped_calendar: int = 0
    overlap: Overlap = Overlap.SKIP
    # buffer_one: the occurrence waiting for the running one to end (due at `buffered_for`, jitter
    # included; `buffered_nominal` its timetable instant, None when the same), and how many have waited.
    buffered_for: datetime | None = None
    buffered_nominal: datetime | None = None
    buffered: int = 0
    # replace: how many occurrences ended cancelled, stopped for a newer one.
    cancelled: int = 0
    # Backfill (semantic 35): the nominal instants queued to run, oldest first; the ranges earlier
    # backfills covered (every occurrence in them started, was queued, or was left out for good), so a
    # repeated backfill queues nothing twice; and how many backfilled occurrences have started.
    backfill: tuple[datetime, ...] = ()
    backfill_covered: tuple[tuple[datetime, datetime], ...] = ()
    backfilled: int = 0
    misfire: Misfire = Misfire.SKIP
    max_attempts: int = 1
    retry_backoff_ms: int = 1000
    breaker_threshold: int = 3
    dedupe_key: str | None = None
    once: bool = False
    origin: Mapping[str, str | int | float | bool | None] = field(default_factory=dict)
    # The occurrence in flight (the oldest, when several are), and under overlap allow the others started
    # beside it, oldest first; `alongside` is empty whenever `in_flight` is None.
    in_flight: InFlight | None = None
    alongside: tuple[InFlight, ...] = ()
    # overlap allow: how many occurrences started while another of the job was in flight.
    overlapped: int = 0
    occurrences: int = 0
    version: int = 0

    @property
    def kind(self) -> str:
        return self.schedule.kind

    @property
    def nominal_next(self) -> datetime | None:
        """The timetable's instant of the occurrence due at `next_run_at` (before jitter), or None."""
        if self.next_run_at is None or self.next_nominal is None:
            return self.next_run_at
        return self.next_nominal

    @property
    def one_shot(self) -> bool:
        return isinstance(self.schedule, AtSchedule)

    @property
    def flights(self) -> tuple[InFlight, ...]:
        """Every occurrence in flight, oldest first: at most one, but several under overlap allow."""
        return () if self.in_flight is None else (self.in_flight, *self.alongside)

    @property
    def flight_node(self) -> str | None:
        """The node running the job's attempts, None while none runs (all wait for a retry or a node).

        A job's attempts all run on one node, so its lease covers every one of them (Overlap.ALLOW)."""
        if not self.alongside:  # the common case, kept cheap: a pass asks it of every job it writes
            return None if self.in_flight is None else self.in_flight.node
        return next((flight.node for flight in self.flights if flight.node is not None), None)

    def flight(self, fire_id: str) -> InFlight | None:
        """The occurrence `fire_id` if it is in flight."""
        if not self.alongside:
            only = self.in_flight
            return only if only is not None and only.fire_id == fire_id else None
        return next((flight for flight in self.flights if flight.fire_id == fire_id), None)

    def with_flight(self, changed: InFlight) -> Job:
        """`self` with the flight of `changed`'s fire_id replaced by it, or `changed` added last."""
        flights = self.flights
        if all(flight.fire_id != changed.fire_id for flight in flights):
            flights = (*flights, changed)
        return self._flying(tuple(changed if f.fire_id == changed.fire_id else f for f in flights))

    def without_flight(self, fire_id: str) -> Job:
        """`self` with the occurrence `fire_id` no longer in flight (its state is the caller's to settle)."""
        return self._flying(tuple(flight for flight in self.flights if flight.fire_id != fire_id))

    def _flying(self, flights: tuple[InFlight, ...]) -> Job:
        return self.evolve(in_flight=flights[0] if flights else None, alongside=flights[1:])

    def evolve(self, **changes: Any) -> Job:
        """A copy with `changes`: its fields copied in one go, about ten times as fast as
        dataclasses.replace, which would run __init__ (a pass calls this several times per firing)."""
        unknown = changes.keys() - _JOB_FIELDS
        if unknown:
            raise TypeError(f"Job has no field {sorted(unknown)[0]!r}")
        copy = object.__new__(Job)
        fields_of_copy = copy.__dict__
        fields_of_copy.update(self.__dict__)
        fields_of_copy.update(changes)
        return copy

    @classmethod
    def stored(cls, **values: Any) -> Job:
        """A job with exactly these fields (every one of them), as a store's codec reads it from a row.

        Job has no __post_init__, so its __init__ checks nothing: it only sets each field, and a frozen
        one does so with an object.__setattr__ per field, about as costly as the rest of the read. So
        the fields go into the __dict__ of a bare instance, as `evolve` does. The codec passes every
        field by name (its test checks it), so no default is needed and none is missing.
        """
        job = object.__new__(cls)
        job.__dict__.update(values)
        return job

    def wake_at(self) -> datetime | None:
        """The earliest instant at which a scheduling pass could change this job; None while none can.

        Stores index it, so a pass reads only the jobs that need it, and its cost never grows with the
        jobs that are not due.
        """
        if self.state is State.ACTIVE:
            head = self.backfill[0] if self.backfill else None  # in the past: due at once
            return min(t for t in (self.next_run_at, self.ends_at, self.buffered_for, head) if t is not None)
        if self.state in (State.PAUSED, State.PENDING):
            return self.ends_at  # it never fires, but it expires
        if self.state is State.RUNNING and self.in_flight is not None:
            times = [t for t in (self.in_flight.retry_at, self.next_run_at) if t is not None]
            times += [flight.retry_at for flight in self.alongside if flight.retry_at is not None]
            return min(times) if times else None
        return None


_JOB_FIELDS = frozenset(item.name for item in fields(Job))


@dataclass(frozen=True, slots=True)
class Result:
    """What a runner reports for one attempt."""

    outcome: Outcome
    message: str = ""
    took_ms: int = 0
    output: str = ""


# One attempt that ended, and how: what a runner hands back and a pass records.
Finished = tuple[Occurrence, Result]


@dataclass(frozen=True, slots=True)
class Run:
    """One attempt, as kept in the history."""

    job_id: int
    job_name: str
    fire_id: str
    attempt: int
    scheduled_for: datetime
    started_at: datetime
    finished_at: datetime
    outcome: Outcome
    message: str
    took_ms: int
    node: str
    output: str = ""
    # The store's id for the row (its insertion order), None until the run is written: `history`
    # pages on it (`before`).
    id: int | None = None
