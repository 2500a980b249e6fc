"""The `backfill` operation (semantic 35): queue the occurrences of a range that never started.

The queue, and the ranges earlier backfills covered, live on the job's row, which every writer changes
by compare-and-swap on its version: two backfills racing (on one node or on two) cannot both queue an
occurrence, since the second one's write loses, reads the row again, and finds the range covered. A
pass then runs the queue, oldest first, one at a time (engine.tend), each occurrence with its own
fire_id.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from cronwright.core import engine, timetable
from cronwright.core.model import AtSchedule, CronSchedule, EverySchedule, Job, Run, State
from cronwright.core.sources import Source
from cronwright.core.timetable import fires_at
from cronwright.errors import Invalid, JobNotActive, JobRunning, JobTerminal
from cronwright.service.operations import Service
from cronwright.store.base import Write, WriteSet
from cronwright.timing.backfill import MAX_BACKFILL, Plan, check_range, cover, covered, grid_from, plan
from cronwright.timing.iso import as_utc, parse_instant, render
from cronwright.timing.zones import zone

if TYPE_CHECKING:  # the request models, for their types: see operations.py
    from cronwright.declare.requests import Backfill

CAS_TRIES = 8
_MICRO = timedelta(microseconds=1)


class _Done:
    """The nominal instants a backfill must not queue: they started, wait already, or cannot be told."""

    def __init__(self, job: Job, runs: Sequence[Run], now: datetime, history_full: bool) -> None:
        self.job = job
        self.now = now
        # Every occurrence in flight (several under overlap allow) has started, or waits to.
        extra = [flight.scheduled_for for flight in job.flights]
        self.started = sorted(as_utc(instant) for instant in [*(run.scheduled_for for run in runs), *extra])
        self.waiting = set(job.backfill)
        if job.buffered_for is not None:
            self.waiting.add(job.buffered_nominal or job.buffered_for)
        self.waiting.update(flight.nominal or flight.scheduled_for for flight in job.flights)
        # The history keeps the newest run_history runs (by finish). Once it is full, an occurrence
        # that fired before the oldest kept run finished may have run and been pruned: it is left out,
        # since running it again could run it twice.
        self.floor = min((as_utc(run.finished_at) for run in runs), default=None) if history_full else None

    def __contains__(self, nominal: object) -> bool:
        assert isinstance(nominal, datetime)
        if nominal in self.waiting or covered(self.job.backfill_covered, nominal):
            return True
        due = fires_at(self.job.id, self.job.schedule, nominal)
        # Not yet due with its jitter: the timetable fires it itself.
        if due > self.now or self._ran_in_slot(nominal):
            return True
        return self.floor is not None and due <= self.floor

    def _ran_in_slot(self, nominal: datetime) -> bool:
        """Whether a run was due in the occurrence's slot, from its instant to the next one's: jitter
        keeps each occurrence in its own slot, whatever jitter it had when it ran, so such a run is that
        occurrence (or a manual run made in its place)."""
        following = timetable.following(self.job.schedule, nominal)
        first = bisect.bisect_left(self.started, nominal)
        if first == len(self.started):
            return False
        return following is None or self.started[first] < following


def _walk(job: Job, start: datetime) -> Iterable[datetime]:
    """The schedule's nominal instants from `start` on, in order."""
    schedule = job.schedule
    if isinstance(schedule, CronSchedule):
        return schedule.expression.iter_after(as_utc(start) - _MICRO, zone(schedule.tz))
    assert isinstance(schedule, EverySchedule)
    anchor = job.nominal_next or (job.last_run.fired_at if job.last_run else job.created_at)
    return grid_from(anchor, schedule.period, start)


def _refuse(job: Job) -> None:
    """A backfill needs a live recurring schedule whose timetable can be read."""
    state = job.state.value
    if isinstance(job.schedule, AtSchedule):
        raise Invalid(
            "name", f"'{job.name}' is a one-shot: backfill runs a cron or every schedule's occurrences"
        )
    if not job.state.live:
        raise JobTerminal(
            f"'{job.name}' is {state}: a backfill could never run; renew it with update --lifetime first",
            state=state,
        )
    if job.state is State.PENDING:
        raise JobNotActive(f"'{job.name}' is pending: approve it before backfilling it", state=state)
    problem = engine.schedule_problem(job.schedule)
    if problem is not None:
        raise Invalid("name", f"'{job.name}' cannot be backfilled: {problem}")


def planned(service: Service, job: Job, start: datetime, end: datetime, now: datetime) -> Plan:
    """What a backfill of [start, end) of `job` would queue now, and how far it looked."""
    limit = service.limits.run_history
    runs = service.store.runs(job.id, limit)
    done = _Done(job, runs, now, history_full=len(runs) >= limit)
    room = MAX_BACKFILL - len(job.backfill)  # at most 1,000 wait on one job
    rules = service.node.rules
    return plan(
        _walk(job, start),
        end,
        now,
        done,
        lambda nominal: rules.exclusion(job.schedule, nominal) is not None,
        limit=max(room, 0),
    )


def backfill(service: Service, request: Backfill, source: Source) -> dict[str, Any]:
    """Queues the occurrences of [from, to) that never started (or, with dry_run, lists them)."""
    reading = service.zone
    start = parse_instant(request.from_, reading, "from")
    end = parse_instant(request.to, reading, "to")
    dry = bool(request.dry_run)
    job = service.job(request, source)
    for _ in range(CAS_TRIES):
        _refuse(job)
        now = service.node.clock.now()
        check_range(start, end, now)
        found = planned(service, job, start, end, now)
        if dry:
            return _reply(service, job, found, 0, source, dry=True)
        if not found.occurrences:
            return _reply(service, job, found, 0, source)
        queued = job.evolve(
            backfill=tuple(sorted({*job.backfill, *found.occurrences})),
            backfill_covered=cover(job.backfill_covered, start, found.until or min(as_utc(end), as_utc(now))),
            updated_at=now,
        )
        with service.quota_section(source, adds=not job.backfill):
            entry = service.entry("backfill", request, source, job, queued)
            shown = [render(t, service.zone) for t in found.occurrences]
            entry = entry.with_change("backfill", None, shown)
            # Never kept in memory while the store fails: a queue that did not land must not be said
            # queued, and the compare-and-swap is what keeps two backfills from queueing one occurrence.
            written = service.store.save(WriteSet([queued], audit=[entry]), keep=False).of(queued)
        if written is not Write.LOST:
            service.node.wake()
            return _reply(service, queued.evolve(version=queued.version + 1), found, len(shown), source)
        fresh = service.store.get(job.id)
        if fresh is None:
            raise JobRunning(f"'{job.name}' was deleted while this backfill was handled", state="deleted")
        job = fresh
    raise JobRunning(
        f"'{job.name}' kept changing while this backfill was handled; try again", state=job.state.value
    )


def _reply(
    service: Service, job: Job, found: Plan, queued: int, source: Source, dry: bool = False
) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "occurrences": [render(t, service.zone) for t in found.occurrences],
        "queued": queued,
        "more": found.more,
        "job": service.row(job),
    }
    if found.more and found.until is not None:
        reply["next_from"] = render(found.until, service.zone)
    if dry:
        used, most = service.quota_used(source, adds=bool(found.occurrences) and not job.backfill)
        return reply | {"dry_run": True, "quota": {"used": used, "max": most}}
    persistence = service.store.inner.persistence if queued else service.store.persistence
    return reply | {"persistence": persistence.value}
