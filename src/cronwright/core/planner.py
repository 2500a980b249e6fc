"""The planner of a scheduling pass: what to claim, what to record, what settles.

Pure: no I/O, no clock, no threads, no store. The node (node.py) reads the due jobs and the finished
attempts, asks here what to do with them, and then writes, dispatches and emits what the plan says.
Each rule is decided once, here, so that it can be tested without a store, a runner or a clock.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from cronwright.core import detect, engine
from cronwright.core.model import Finished, Job, Run
from cronwright.core.notifications import Transition

# How many due jobs one read of the store takes beyond the free slots, once a pass is settling jobs
# (skips and expiries) rather than firing them.
DUE_CHUNK = 64

# The attempts of one job that ended, and the one decision that records them all.
Decided = tuple[list[Finished], engine.Decision]


# --- the due jobs of one read ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DuePlan:
    """What a pass does with the due jobs of one read."""

    # Decisions that settle a job without firing it (misfire and overlap skips, expiries, ...).
    settled: list[engine.Decision] = field(default_factory=list)
    # Firings to claim now: at most the free slots, in the order the store gave the jobs.
    claims: list[engine.Decision] = field(default_factory=list)
    # Firings that found no free slot: unclaimed, their jobs stay due for the pass after a run ends.
    waiting: list[engine.Decision] = field(default_factory=list)
    # Some job was left to the peer that runs its flights (overlap allow), so it stays due.
    left_to_peer: bool = False
    # How many occurrences the settled decisions skip (the claims' own skips count once they are won).
    skipped: int = 0
    # The changes to the node's memory of the occurrences that wait for a slot (job id -> due instant):
    # `forget` is dropped first, then `remember` is set where the job has no entry yet, so a job keeps
    # the instant it first waited from.
    forget: list[int] = field(default_factory=list)
    remember: list[tuple[int, datetime]] = field(default_factory=list)


def plan_due(
    batch: list[Job], now: datetime, rules: engine.Rules, free: int, waiting: Mapping[int, datetime]
) -> DuePlan:
    """Decides the due jobs `batch` (none seen before in this pass) at `now`, with `free` slots.

    `waiting` is what the node remembers of the occurrences that waited for a slot, by job id: one
    skipped by the misfire policy after waiting past its grace is `late`, not `missed` (semantic 38).
    """
    settled: list[engine.Decision] = []
    claims: list[engine.Decision] = []
    queued: list[engine.Decision] = []
    left_to_peer = False
    for job in batch:
        decision = engine.tend(job, now, rules)
        if not left_to_peer and engine.held_elsewhere(job, rules):
            left_to_peer = True
        if decision.fire is not None:
            (claims if len(claims) < free else queued).append(decision)
        elif decision.runs or decision.job != job:
            settled.append(late(decision, waiting.get(job.id), now))
        # else nothing to do here (it woke for a lifetime check that is not yet due): left alone
    forget = [d.job.id for d in settled]
    forget.extend(d.job.id for d in claims)
    remember = [(d.job.id, d.fire.scheduled_for) for d in queued if d.fire is not None]
    return DuePlan(
        settled,
        claims,
        queued,
        left_to_peer,
        sum(skipped(d) for d in settled),
        forget,
        remember,
    )


def late(decision: engine.Decision, waited_since: datetime | None, now: datetime) -> engine.Decision:
    """A misfire skip of an occurrence that waited for a slot (since `waited_since`) past its grace
    is `late`, not `missed`: the node was up, and every slot was busy (semantic 38)."""
    if waited_since is None or not any(a.transition is Transition.MISSED for a in decision.alerts):
        return decision
    alerts = tuple(
        detect.late(decision.job, waited_since, now) if alert.transition is Transition.MISSED else alert
        for alert in decision.alerts
    )
    return engine.Decision(decision.job, decision.fire, decision.runs, decision.events, alerts)


def skipped(decision: engine.Decision) -> int:
    """How many occurrences `decision` skips (misfire, overlap, calendar ...), as its events count them."""
    return sum(event.fields.get("count", 0) for event in decision.events)


# --- the reads of one pass ------------------------------------------------------------------------


def free_slots(max_concurrency: int, in_flight: int, unrecorded: int) -> int:
    """The slots free for claims: runs over but not yet recorded (`unrecorded`) count as free."""
    return max(max_concurrency - in_flight + unrecorded, 0)


def read_limit(free: int, settling: bool) -> int:
    """How many due jobs a read takes: as many as the free slots, so that a pass costs what the slots
    do and not what waits; a chunk more with no slot free, or once the pass is settling jobs."""
    return free if free and not settling else free + DUE_CHUNK


def reads_on(read: int, limit: int, fresh: int, plan: DuePlan, free: int, wrote: bool) -> bool:
    """Whether a pass reads the due jobs again after a read of `read` rows (at most `limit`), `fresh`
    of them not seen before in this pass, that planned `plan` with `free` slots and wrote (`wrote`)."""
    if read < limit:
        return False  # nothing more is due
    if plan.waiting or (free > 0 and len(plan.claims) == free):
        return False  # out of slots: the rest waits for the pass after a run
    # A read of nothing new that wrote nothing would read the same again. One that wrote (the rows of
    # runs that just finished were still due, and came first) reads on past them.
    return fresh > 0 or wrote


# --- finished attempts ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FinishPlan:
    """How the outcomes of finished attempts are recorded."""

    # One decision a job, however many of its occurrences ended, with the outcomes it records.
    decided: list[Decided] = field(default_factory=list)
    # The history rows, in the order of the outcomes, the deleted jobs' among them.
    runs: list[Run] = field(default_factory=list)
    # Outcomes whose job was deleted: their run is history only (in `runs`), nothing else is written.
    gone: list[Finished] = field(default_factory=list)
    # Outcomes whose row cannot be read (edited by hand): they wait, their slot held, for a later pass.
    requeue: list[Finished] = field(default_factory=list)


def plan_finished(
    done: list[Finished],
    stored: Mapping[int, Job],
    unreadable: Collection[int],
    now: datetime,
    rules: engine.Rules,
) -> FinishPlan:
    """Decides the outcomes `done`, each on its job as `stored` holds it (absent: deleted meanwhile).

    A job's outcomes (overlap allow) make one decision, each decided on the job as the one before it
    left it (`Decision.then`). A job whose row is `unreadable` is not gone, so its outcome is no
    deleted job's run: it is requeued.
    """
    decided: list[Decided] = []
    by_job: dict[int, int] = {}  # a job's index in `decided`
    runs: list[Run] = []
    gone: list[Finished] = []
    requeue: list[Finished] = []
    for item in done:
        occurrence, result = item
        if occurrence.job_id in unreadable:
            requeue.append(item)
            continue
        index = by_job.get(occurrence.job_id)
        base = stored.get(occurrence.job_id) if index is None else decided[index][1].job
        decision = engine.finish(base, occurrence, result, now, rules)
        if decision is None:
            runs.append(engine.run_of(occurrence, result, now, rules.node))
            gone.append(item)
            continue
        runs.extend(decision.runs)
        if index is None:
            by_job[occurrence.job_id] = len(decided)
            decided.append(([item], decision))
        else:
            ended, before = decided[index]
            decided[index] = ([*ended, item], before.then(decision))
    return FinishPlan(decided, runs, gone, requeue)
