"""The imperative shell: the clock, wake-ups, scheduling passes, claims, dispatch and recovery.

The store is the truth. The node reads the jobs that are due, lets the engine decide, writes each
decision as a compare-and-swap, and runs only the occurrences whose claim it won and made durable.
Four parts: the passes here, a shell of reads, writes, dispatch and events over the planner (planner.py:
the pure decisions of a pass, what to claim, what waits for a slot, what settles and how finished
attempts are recorded), the dispatcher (dispatch.py: the runs in flight, whose outcomes come back through
a queue and are recorded in batches by the next pass, so one transaction records many), and the lease
keeper (lease.py: the beats, on a monotonic clock and a timer of their own).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from cronwright.clock import Clock
from cronwright.core import detect, engine, planner
from cronwright.core.audit import AuditEntry
from cronwright.core.calendars import NO_CALENDARS, Calendars
from cronwright.core.events import EventSink
from cronwright.core.leases import LEASE_BEAT, LEASE_TTL
from cronwright.core.model import Finished, InFlight, Job, Occurrence, Outcome, Persistence, Result, Run
from cronwright.core.notifications import Alert, Notification
from cronwright.errors import AtMaxConcurrency, JobRunning, NotFound, StoreError
from cronwright.node.dispatch import Attempt, Dispatcher, attempt_of
from cronwright.node.lease import LeaseKeeper, StepGuard
from cronwright.node.runner import Runner
from cronwright.notify.alerting import Alerting, StoreTransitions
from cronwright.store.base import Backend, Flushed, Store, Watches, Write
from cronwright.store.resilient import ResilientStore

log = logging.getLogger("cronwright.node")

# How many due jobs one read of the store takes beyond the free slots, once a pass is settling jobs.
DUE_CHUNK = planner.DUE_CHUNK
# How long a tick lingers after a run ends, so that runs ending together are recorded together.
GROUP_COMMIT_WINDOW = 0.005
# The least a node sleeps when a peer's lease is due, so that an overdue one never spins the loop.
PEER_LEASE_FLOOR = timedelta(seconds=1)
# How many times a compare-and-swap that lost to another writer is read and decided again.
CAS_TRIES = 5
# A failed pass is tried again after 1 s, then 2, 4, ... up to this many seconds.
RETRY_MAX = 30.0


@dataclass(frozen=True, slots=True)
class NodeSettings:
    misfire_grace: timedelta = timedelta(seconds=60)
    max_concurrency: int = 16
    shutdown_grace: timedelta = timedelta(seconds=30)
    # An idle node still wakes this often, to see changes made by processes that could not wake it
    # and to notice another node's death. Once a minute keeps `status` honest and costs nothing.
    safety_interval: timedelta = timedelta(seconds=60)
    # A node with runs in flight beats at least every `lease_beat`; one silent for `lease_ttl` is dead.
    lease_beat: timedelta = LEASE_BEAT
    lease_ttl: timedelta = LEASE_TTL
    # Audit entries older than this are dropped, by a pass at most once per AUDIT_PRUNE_EVERY.
    audit_retention: timedelta = timedelta(days=90)
    # The node zone (an `every` schedule's dates are read in it) and the calendars schedules may exclude.
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    calendars: Calendars = NO_CALENDARS


# How often a node's passes drop the audit entries past their retention: a cheap indexed delete.
AUDIT_PRUNE_EVERY = timedelta(hours=1)


# The attempts of one job that ended, and the one decision that records them all.
Decided = planner.Decided


@dataclass(slots=True)
class PassReport:
    fired: list[str] = field(default_factory=list)
    skipped: int = 0
    recovered: list[str] = field(default_factory=list)


# The last part of a serving node's id (`cronwright serve`): what a short-lived process looks for in the
# beats to hand a run_now to (semantic 28). Other processes' ids have three parts.
SERVING = "serve"


def new_node_id(serving: bool = False) -> str:
    """`host:pid:random`, and `:serve` for a node that runs a scheduling loop until it is stopped."""
    base = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
    return f"{base}:{SERVING}" if serving else base


def is_serving(node_id: str) -> bool:
    return node_id.rsplit(":", 1)[-1] == SERVING


class Node:
    def __init__(
        self,
        store: Backend,
        runner: Runner,
        clock: Clock,
        events: EventSink,
        settings: NodeSettings | None = None,
        node_id: str | None = None,
        short_lived: bool = False,
        alerting: Alerting | None = None,
    ) -> None:
        self.id = node_id or new_node_id()
        # A process that runs no scheduling loop (the CLI, a stdio MCP server) hands its run_now to a
        # serving node when there is one (semantic 28).
        self.short_lived = short_lived
        self.settings = settings or NodeSettings()
        # The transitions decisions carry become notifications, written with the decisions (semantic 38).
        self.alerting = alerting or Alerting()
        self.store: Store = ResilientStore(store, events, StoreTransitions(self.alerting, self.id, clock))
        # Told when notifications were written, so that a delivery loop sends them now.
        self.on_notes: Callable[[], None] | None = None
        # Due occurrences that waited for a free slot, by job id: past their grace they were late.
        self._waiting: dict[int, datetime] = {}
        self.clock = clock
        self.rules = engine.Rules(
            self.id, self.settings.misfire_grace, self.settings.calendars, self.settings.zone
        )
        self._events = events
        # A claim's write failed and could not be read back: it may have landed. Until a pass has
        # reconciled this node's rows with what it runs, passes come soon.
        self._unsettled = False
        # The dispatch's own record of what it never started (semantic 29): the claims this node made
        # whose write was not durable, and which it has not started since, with the monotonic second
        # of the claim. Only these may ever be given back; a row held for any other attempt is one
        # this node ran.
        self._unstarted: dict[Attempt, float] = {}
        # The outcomes of attempts this node ran whose finishing write is not durable yet (kept in
        # memory while the store fails, or lost to another writer): if the row moves on meanwhile (a
        # peer's overlap skip), they are decided again on the row as it is, never guessed.
        self._unwritten: dict[Attempt, Finished] = {}
        self._lock = threading.RLock()
        self._wake = threading.Event()
        # Set with `_wake` by everything but a finished run: a wake-up that only a finished run caused,
        # and whose outcome a pass has already recorded, needs no pass of its own.
        self._poked = threading.Event()
        # Set by every wake-up from outside the loop (another node's NOTIFY, a front's change): the next
        # pass reads the rows this node holds if it runs any, for an overlap replace asking it to stop one.
        self._changed = threading.Event()
        self._stopping = threading.Event()
        # The dispatcher runs what passes claimed; a run that ends wakes the loop to record it.
        self.runs = Dispatcher(runner, self.settings.max_concurrency, self._wake.set, self._stopping)
        self._lease = LeaseKeeper(
            lambda: self.store.beat(self.id, self.clock.now()), self.settings.lease_beat, clock.monotonic
        )
        # Judging peers' leases pauses for a lease after this node's wall clock jumps forward.
        self._step_guard = StepGuard(self.settings.lease_ttl, tolerance=self.settings.lease_beat)
        # When this node last looked for peers' runs whose lease ran out (monotonic seconds).
        self._judged_at: float | None = None
        self._judge_every = self.settings.lease_beat.total_seconds()
        self.last_pass_at: datetime | None = None  # the last pass that ended without error (metrics)
        self._audit_pruned_at: datetime | None = None
        # The last pass left a due job to the peer that runs its flights (overlap allow): it stays due
        # until that peer starts it, so the next pass is not sooner than PEER_LEASE_FLOOR.
        self._left_to_peer = False

    # --- passes ---------------------------------------------------------------------------------

    def boot(self) -> PassReport:
        """Announces this node, recovers runs of dead processes, and runs a first pass."""
        self._beat(self.clock.now(), force=True)
        return self.run_pass()

    def run_pass(self) -> PassReport:
        """One scheduling pass at the clock's now: record what finished, recover, fire what is due."""
        with self._lock:
            now = self.clock.now()
            finished = self.runs.drain()
            try:
                self._rewrite_dropped(self.store.flush(), now)
                beaten = self._beat(now)
            except Exception:
                # While the store fails (a full disk), the beat fails the pass; the outcomes are kept in
                # memory first (`degraded`, visible to reads) and flushed by a later pass. Where even the
                # read they are decided on fails (the store is out of reach), they wait for a later pass.
                try:
                    self._record_all(finished, now)
                except StoreError:
                    self.runs.requeue(finished)
                raise
            report = PassReport()
            try:
                changed = self._changed.is_set() and self.runs.in_flight() > 0
                self._changed.clear()
                if self._unsettled or beaten or changed:
                    self._reconcile()
                self._recover(now, report)
            except Exception:
                self.runs.requeue(finished)
                raise
            if self._stopping.is_set():
                self._record_all(finished, now)
            else:
                with self.runs.one_look():  # the runs it starts take one look at their targets' files
                    self._tend_due(now, report, finished)
            self.last_pass_at = now
            self._prune_audit(now)
            return report

    def _prune_audit(self, now: datetime) -> None:
        """Drops the audit entries past `audit_retention` (semantic 36), at most once an hour."""
        if self._audit_pruned_at is not None and now - self._audit_pruned_at < AUDIT_PRUNE_EVERY:
            return
        try:
            self.store.prune_audit(now - self.settings.audit_retention)
        except StoreError as error:
            log.warning("could not drop old audit entries (the next pass tries again): %s", error)
            return
        self._audit_pruned_at = now

    def _beat(self, now: datetime, force: bool = False) -> bool:
        """Renews this node's lease when a beat is due by the monotonic clock (or `force`); returns
        whether the lease was beaten since the last pass, here or by the lease keeper's thread."""
        self._lease.beat_if_due(force)
        return self._lease.took_beat()

    @property
    def lease(self) -> LeaseKeeper:
        return self._lease

    def _track_runs(self) -> None:
        """The lease keeper beats on its own timer while runs are in flight, and sleeps while none are."""
        busy = self.runs.in_flight() > 0
        if busy:
            self._lease.start()
        self._lease.busy(busy)

    def _reconcile(self) -> None:
        """Settles the rows that say this node runs an attempt it does not run now (semantic 29).

        Never by guessing. A claim whose write failed, and could not be read back, never runs; if it
        landed all the same, its row says `running` on this node while nothing runs it. The dispatch
        keeps its own record of such claims (`_unstarted`), so only an attempt this node knows it never
        started is given back (engine.release): the pass goes on to decide that job afresh, under a
        new fire_id. Any other such row is of an attempt this node did start and that ended, whose
        finishing write did not land: it is recorded from what is known, its outcome if the node kept
        it, else `interrupted`, and never run again. Done while unsettled, and at each beat, since a
        commit may land a moment after a read back found it missing.

        The same read finds the attempts that overlap replace asked this node to stop, whichever node
        decided it: so a holder stops one within a beat, or at once when a peer's change wakes it.
        """
        held = self.store.held(self.id)
        for job in held:
            self._stop_if_replaced(job)
        stranded: list[tuple[Job, list[InFlight]]] = []
        ended: list[Finished] = []
        for job in held:
            idle = self._not_running(job)
            back = [flight for flight in idle if self._never_started(job, flight)]
            if back:
                stranded.append((job, back))
            ended += [self._ended(job, flight) for flight in idle if flight not in back]
        self._forget_old_claims()
        if ended:
            self._record_ended(ended)
        # Written like a claim (kept nowhere if it fails): a release that fails is found again.
        released = [engine.release_all(job, [f.fire_id for f in flights]) for job, flights in stranded]
        written = self.store.save([], claims=released) if stranded else []
        for (job, flights), outcome in zip(stranded, written, strict=True):
            if outcome is Write.DURABLE:
                for flight in flights:
                    self._unstarted.pop((job.id, flight.fire_id, flight.attempt), None)
                    log.warning(
                        "%s attempt %d of '%s' was claimed by a write whose reply was lost, and this node"
                        " never started it: it is given back to the schedule (a later firing takes a new"
                        " fire_id)",
                        flight.fire_id,
                        flight.attempt,
                        job.name,
                    )
        self._unsettled = any(outcome is not Write.DURABLE for outcome in written)

    def _not_running(self, job: Job) -> list[InFlight]:
        """The attempts of `job` that its row says run here, and that this process does not run now."""
        return [
            flight
            for flight in job.flights
            if flight.node == self.id and not self.runs.started((job.id, flight.fire_id, flight.attempt))
        ]

    def _never_started(self, job: Job, flight: InFlight) -> bool:
        """Whether the dispatch's own record says this node claimed `flight` and never started it."""
        return (job.id, flight.fire_id, flight.attempt) in self._unstarted

    def _ended(self, job: Job, flight: InFlight) -> Finished:
        """An attempt this node started, not running now, whose row still says it runs here: its outcome
        as this node kept it, or `interrupted` if it has none (it is never run again)."""
        kept = self._unwritten.get((job.id, flight.fire_id, flight.attempt))
        if kept is not None:
            return kept
        log.warning(
            "%s attempt %d of '%s' started on this node, and its outcome is lost: it is recorded"
            " interrupted, never run again",
            flight.fire_id,
            flight.attempt,
            job.name,
        )
        why = f"node {self.id} ran it, and lost its outcome before it could be recorded"
        return engine.occurrence_of(job, flight), Result(Outcome.INTERRUPTED, why)

    def _record_ended(self, ended: list[Finished]) -> None:
        """Records attempts that ended here and whose rows still hold them, on the rows as they are.

        An outcome this node kept has its run row written already (or waiting in memory with the
        store), so only the job is decided again; an `interrupted` one gets its row now."""
        now = self.clock.now()
        known = [item for item in ended if attempt_of(item[0]) in self._unwritten]
        lost = [item for item in ended if attempt_of(item[0]) not in self._unwritten]
        if known:
            self._record_all(known, now, with_runs=False)
        if lost:
            self._record_all(lost, now)

    def _rewrite_dropped(self, flushed: Flushed, now: datetime) -> None:
        """After a flush: kept jobs written are settled; a kept job whose row moved on (a peer's overlap
        skip while this node was cut off) is decided again, on that row, from the outcomes it held."""
        for key in [key for key in self._unwritten if key[0] in flushed.written]:
            del self._unwritten[key]
        redo = [item for key, item in self._unwritten.items() if key[0] in flushed.dropped]
        if not redo:
            return
        rows = self.store.get_many(list({occurrence.job_id for occurrence, _ in redo}))
        still = [item for item in redo if _holds(rows.get(item[0].job_id), item[0], self.id)]
        for occurrence, _ in redo:
            if not _holds(rows.get(occurrence.job_id), occurrence, self.id):
                # Concluded already: its own write had landed unheard, or a peer recorded it.
                self._unwritten.pop(attempt_of(occurrence), None)
        if still:
            self._record_all(still, now, with_runs=False)

    def _forget_old_claims(self) -> None:
        """A claim not seen landed within several leases never will: its record is let go."""
        oldest = self.clock.monotonic() - 4 * self.settings.lease_ttl.total_seconds()
        for key in [key for key, claimed in self._unstarted.items() if claimed < oldest]:
            del self._unstarted[key]

    def _stop_if_replaced(self, job: Job) -> None:
        """Stops the attempt this node runs for `job` if overlap replace asked it to (semantic 34)."""
        flight = job.in_flight
        if flight is not None and flight.cancel and flight.node == self.id:
            self.runs.cancel((job.id, flight.fire_id, flight.attempt))

    def _won(self, outcome: Write) -> bool:
        """Whether a claim's write made it this node's to run; one of unknown outcome is reconciled."""
        if outcome is Write.UNKNOWN:
            self._unsettled = True
        return outcome is Write.DURABLE

    def _claimed(self, fire: Occurrence | None, outcome: Write) -> bool:
        """As `_won`, for a claim of the attempt `fire`: one not won is noted as never started here,
        the one record that lets a reconcile give it back if its write landed unheard."""
        won = self._won(outcome)
        if not won and fire is not None:
            self._unstarted[attempt_of(fire)] = self.clock.monotonic()
        return won

    def _recover(self, now: datetime, report: PassReport) -> None:
        if not self._step_guard.may_judge(now, self.clock.monotonic()):
            return  # the wall clock just jumped ahead: peers' beats look old until they beat again
        judged = self.clock.monotonic()
        if (
            self.runs.in_flight()
            and self._judged_at is not None
            and judged - self._judged_at < self._judge_every
        ):
            # A busy node passes after every batch of runs; peers' leases are judged once a beat, which
            # still finds a dead peer's runs within a lease, not once a pass.
            return
        self._judged_at = judged
        for job in self.store.orphans(now, self.settings.lease_ttl):
            node = job.flight_node
            if node is None or node == self.id:
                continue
            why = f"node {node} stopped renewing its lease, so its run was interrupted"
            decision = engine.interrupt(job, now, self.rules, why)
            # The peer's lease ran out: its down-ness is told with the first of its runs recovered (the
            # notification's id names the node, so every recovery and every peer makes the same one).
            down = detect.node_down(node, now)
            notes = self._notes([decision], extra=[down])
            # Written like a claim (kept nowhere if it fails): several nodes may recover one orphan at
            # once, and the loser's `interrupted` run is a second record of the attempt, which the store
            # refuses whole. Kept in memory, it would be retried, and refused, forever. Not kept, the
            # loser simply finds the job recovered; after an outage the next pass finds the orphan again.
            if self._won(self.store.save([decision.job], decision.runs, keep=False, notes=notes)[0]):
                self._emit(decision)
                self._noted(notes)
                report.recovered.extend(run.fire_id for run in decision.runs)

    def _tend_due(self, now: datetime, report: PassReport, finished: list[Finished]) -> None:
        """Decides every due job, claiming firings while slots are free.

        Beyond max_concurrency a firing waits for a slot unclaimed: its job stays due, and the pass that
        follows a finished run fires it, or, once its grace has passed, applies the misfire policy. So a
        crash can only ever interrupt runs that had started, never a queue of claimed ones. A pass first
        reads as many due jobs as there are free slots, and stops when the slots run out, so its cost
        follows the slots, not the number of jobs waiting. A node with no free slot, or a read that
        turned up jobs to settle (misfire and overlap skips, expiries), reads on in chunks.

        The outcomes of the runs that `finished` are recorded in the same transaction as the first
        claims, so a busy node pays one durable write per slot's worth of firings, not two.
        """
        try:
            finishing, finish_runs = self._finish_decisions(finished, now, held=True)
        except Exception:
            self.runs.requeue(finished)
            raise
        seen = {occurrence.job_id for occurrence, _ in finished}
        unrecorded = finished  # their runs are over, so their slots count as free
        settling = False
        self._left_to_peer = False
        while True:
            free = planner.free_slots(self.settings.max_concurrency, self.runs.in_flight(), len(unrecorded))
            limit = planner.read_limit(free, settling)
            try:
                due = self.store.due(now, limit)
            except Exception:
                # The pass fails (the store is unreachable, say); the outcomes wait for the next one.
                self.runs.requeue(unrecorded)
                raise
            batch = [job for job in due if job.id not in seen]
            seen.update(job.id for job in batch)
            plan = planner.plan_due(batch, now, self.rules, free, self._waiting)
            self._left_to_peer |= plan.left_to_peer
            self._wait_for_slots(plan)
            settled, claims = plan.settled, plan.claims
            kept = [d for _, d in finishing] + settled
            runs = finish_runs + [run for d in settled for run in d.runs]
            notes = self._notes([*kept, *claims])
            written = (
                self.store.save([d.job for d in kept], runs, claims=[d.job for d in claims], notes=notes)
                if kept or runs or claims
                else []
            )
            self._noted(notes)
            lost = [
                item
                for (ended, _), outcome in zip(finishing, written, strict=False)
                if outcome is Write.LOST
                for item in ended
            ]
            for decision, outcome in zip(kept, written, strict=False):
                if outcome is not Write.LOST:
                    self._emit(decision)
                    self._stop_if_replaced(decision.job)
            for (ended, decision), outcome in zip(finishing, written, strict=False):
                if outcome is not Write.LOST:
                    self._recorded(ended, decision, outcome)
            if lost:
                # Another writer changed these jobs first: decide again; their runs are recorded.
                self._record_all(lost, now, with_runs=False)
            self.runs.freed(unrecorded)
            self._track_runs()
            finishing, finish_runs, unrecorded = [], [], []
            report.skipped += plan.skipped
            won = written[len(kept) :]
            for decision, outcome in zip(claims, won, strict=True):
                if self._claimed(decision.fire, outcome):
                    self._emit(decision)
                    report.skipped += planner.skipped(decision)
                    assert decision.fire is not None
                    self._dispatch(decision.job.evolve(version=decision.job.version + 1), decision.fire)
                    report.fired.append(decision.fire.fire_id)
            if not planner.reads_on(len(due), limit, len(batch), plan, free, bool(written)):
                return  # nothing more is due, or out of slots: the rest waits for the pass after a run
            settling = True

    def _notes(self, decisions: Iterable[engine.Decision], extra: Iterable[Alert] = ()) -> list[Notification]:
        """The notifications of the transitions `decisions` make, to be written with them."""
        return self.alerting.notes([*(alert for d in decisions for alert in d.alerts), *extra])

    def notes_of(self, decision: engine.Decision) -> list[Notification]:
        """The notifications of a decision the service writes (a resume's misfire skip)."""
        return self._notes([decision])

    def _noted(self, notes: list[Notification]) -> None:
        """New notifications were written (or wait in memory to be): the delivery loop sends them now."""
        if notes and self.on_notes is not None:
            self.on_notes()

    def _wait_for_slots(self, plan: planner.DuePlan) -> None:
        """Remembers the due occurrences that found no free slot, until one starts or is skipped."""
        for job_id in plan.forget:
            self._waiting.pop(job_id, None)
        for job_id, due in plan.remember:
            self._waiting.setdefault(job_id, due)

    def _write(self, decisions: list[engine.Decision]) -> list[Write]:
        """Saves decisions (kept in memory if the store fails) and emits the events of those that landed."""
        runs = [run for d in decisions for run in d.runs]
        notes = self._notes(decisions)
        written = self.store.save([d.job for d in decisions], runs, notes=notes) if decisions else []
        self._noted(notes)
        for decision, outcome in zip(decisions, written, strict=True):
            if outcome is not Write.LOST:
                self._emit(decision)
        return written

    def _emit(self, decision: engine.Decision) -> None:
        for event in decision.events:
            self._events.emit(event)

    def announce(self, decision: engine.Decision) -> None:
        """Emits the events of a decision the service made and saved (a resume's misfire skip)."""
        self._emit(decision)

    # --- attempts -------------------------------------------------------------------------------

    def _dispatch(self, job: Job, occurrence: Occurrence) -> None:
        self._unstarted.pop(attempt_of(occurrence), None)  # started now, whatever an earlier claim did
        self.runs.start(job, occurrence)
        self._track_runs()

    def record_finished(self) -> int:
        """Records every attempt that has finished, in one transaction where it can. Returns how many."""
        with self._lock:
            done = self.runs.drain()
            self._record_all(done, self.clock.now())
            return len(done)

    def _record_all(self, done: list[Finished], now: datetime, with_runs: bool = True) -> None:
        pending = done
        for _ in range(CAS_TRIES):
            if not pending:
                break
            pending = self._record(pending, now, with_runs)
            # Another writer changed these jobs first (an overlap skip on another node, say): read them
            # again and decide again; their runs are already in the history.
            with_runs = False
        for occurrence, result in pending:
            # Still losing to other writers: kept, and decided again when a reconcile finds the row.
            log.warning(
                "the outcome of %s lost %d writes in a row; it is kept", occurrence.fire_id, CAS_TRIES
            )
            self._unwritten[attempt_of(occurrence)] = (occurrence, result)
        self.runs.freed(done)
        self._track_runs()

    def _finish_decisions(
        self, done: list[Finished], now: datetime, held: bool = False
    ) -> tuple[list[Decided], list[Run]]:
        """The decisions and history rows of finished attempts (a deleted job's run is history only):
        one decision a job, however many of its occurrences ended (overlap allow), each decided on the
        job as the one before left it.

        `held`: decided on the jobs as this node claimed them, where it holds them; else read afresh.
        """
        known: dict[int, Job] = {}
        if held and self.store.persistence is not Persistence.DEGRADED:
            unreadable_before = self.store.unreadable  # such a row is read again, to see it repaired
            doubtful: set[int] = set()
            for occurrence, _ in done:
                claimed = self.runs.claimed(occurrence)
                if claimed is None or occurrence.job_id in unreadable_before:
                    continue
                known[occurrence.job_id] = claimed
                if claimed.flight(occurrence.fire_id) is None:
                    doubtful.add(occurrence.job_id)  # an older copy than another attempt's: read it
            for job_id in doubtful:
                del known[job_id]
        unread = list(dict.fromkeys(o.job_id for o, _ in done if o.job_id not in known))
        stored = {**(self.store.get_many(unread) if unread else {}), **known}
        plan = planner.plan_finished(done, stored, self.store.unreadable, now, self.rules)
        # An unreadable row is not gone, so its outcome is no deleted job's run: it waits, its slot
        # held, until the row can be read again.
        self.runs.requeue(plan.requeue)
        for occurrence, _ in plan.gone:
            self.runs.recorded(occurrence)  # a deleted job's run is history only
        return plan.decided, plan.runs

    def _record(self, done: list[Finished], now: datetime, with_runs: bool) -> list[Finished]:
        """Records attempts; returns those whose job write lost a race and must be decided again."""
        decided, runs = self._finish_decisions(done, now)
        notes = self._notes(d for _, d in decided)
        written = self.store.save([d.job for _, d in decided], runs if with_runs else [], notes=notes)
        self._noted(notes)
        lost: list[Finished] = []
        for (ended, decision), outcome in zip(decided, written, strict=True):
            if outcome is Write.LOST:
                lost.extend(ended)
            else:
                self._emit(decision)
                self._recorded(ended, decision, outcome)
        return lost

    def _recorded(self, ended: list[Finished], decision: engine.Decision, outcome: Write) -> None:
        """The outcomes `ended` are written (or wait in memory to be) by `decision`."""
        for occurrence, result in ended:
            self.runs.recorded(occurrence)
            if outcome is not Write.DURABLE:
                self._unwritten[attempt_of(occurrence)] = (occurrence, result)
        if outcome is Write.DURABLE:
            # Decided on the row as this node saw it, its kept outcomes included: all settled now.
            for key in [key for key in self._unwritten if key[0] == decision.job.id]:
                del self._unwritten[key]
        if outcome is Write.DURABLE and decision.job.in_flight is not None:
            # The job's other attempts here (overlap allow) are decided on the row as written now.
            self.runs.wrote(decision.job.evolve(version=decision.job.version + 1))

    def in_flight(self) -> int:
        return self.runs.in_flight()

    def wait_for_runs(self, timeout: float | None = None) -> None:
        """Blocks until every attempt this node started has finished and been recorded.

        It beats meanwhile: a process with no scheduling loop (a `tick`) must still renew its lease, or
        the next process would take its live runs for dead. At each beat it also stops the runs overlap
        replace asked it to (a `run-now` or stdio MCP process holds its run here, with no pass to read
        its rows). TimeoutError after `timeout` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        beat = self.settings.lease_beat.total_seconds()
        while True:
            with self._lock:
                futures = self.runs.futures()
            if not futures:
                return
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"{len(futures)} runs still in flight")
            wait(futures, min(beat, remaining) if remaining is not None else beat, FIRST_COMPLETED)
            self.record_finished()
            with self._lock:
                if self._beat(self.clock.now()):
                    self._stop_replaced()

    def _stop_replaced(self) -> None:
        """Stops this node's attempts that overlap replace asked it to stop, read from the rows it holds."""
        try:
            held = self.store.held(self.id) if self.runs.in_flight() else []
        except StoreError as error:
            log.warning(
                "could not read this node's runs for a replace to stop (next beat tries again): %s", error
            )
            return
        for job in held:
            self._stop_if_replaced(job)

    def _await_a_run(self) -> None:
        """Waits until a run finishes, or a lease beat's time has passed."""
        with self._lock:
            futures = self.runs.futures()
        if futures:
            self.runs.wait(futures, self.settings.lease_beat.total_seconds(), FIRST_COMPLETED)
            running = [future for future in futures if not future.done()]
            if len(running) < len(futures) and running:
                # Group commit: runs that end within a moment of each other share one durable write.
                self.runs.wait(running, GROUP_COMMIT_WINDOW, ALL_COMPLETED)

    def _linger(self) -> None:
        """Woken by a run that finished while others run: waits a moment for them (group commit).

        Runs that end together then share one pass and one durable write, and the slots they free are
        claimed together, instead of a pass (and a commit) per run while the other slots sit idle.
        """
        if not self.runs.has_finished():
            return
        with self._lock:
            running = self.runs.futures(unfinished=True)
        if running:
            wait(running, GROUP_COMMIT_WINDOW)

    def tick(self) -> PassReport:
        """What `cronwright tick` does: a pass that fires what is due and, as slots free up, what waits
        for one; then it waits for every run it started and records it."""
        with self.runs.pumped():  # this thread waits for nothing else: the replies come on it
            return self._tick()

    def _tick(self) -> PassReport:
        report = self.run_pass()  # its first beat announces the node, as boot's does
        while self.runs.in_flight():
            self._await_a_run()
            passes = [self.run_pass()]  # records what finished, and claims the freed slots
            if not self.runs.in_flight():
                # What was just recorded may have left an occurrence waiting for it (overlap
                # buffer_one, or replace's successor), due now: this tick starts it rather than
                # leaving it to the next.
                passes.append(self.run_pass())
            for more in passes:
                report.fired += more.fired
                report.skipped += more.skipped
                report.recovered += more.recovered
        return report

    # --- operator actions that need the node --------------------------------------------------

    def run_now(self, job_id: int, audit: Callable[[Job, Job], AuditEntry] | None = None) -> Job:
        """Claims and starts an occurrence of an active job now; refusals as DESIGN semantic 12.
        `audit` makes the entry of the claim from the job before and after it, written with it."""
        with self._lock:
            state = "unknown"
            for _ in range(CAS_TRIES):
                job = self.store.get(job_id)
                if job is None:
                    raise NotFound(f"no job with id {job_id}")
                if self.runs.runs(job.id):
                    raise JobRunning(f"'{job.name}' is running", state=job.state.value)
                if self.runs.in_flight() >= self.settings.max_concurrency:
                    raise AtMaxConcurrency(
                        f"{self.settings.max_concurrency} runs are in flight (max_concurrency); try again "
                        "when one has finished"
                    )
                now = self.clock.now()
                state = job.state.value
                decision = engine.run_now(job, now, self.rules)
                self._beat(now, force=True)
                entries = [audit(job, decision.job)] if audit is not None else []
                written = self.store.save([decision.job], keep=False, audit=entries)[0]
                if self._claimed(decision.fire, written):
                    assert decision.fire is not None
                    claimed = decision.job.evolve(version=decision.job.version + 1)
                    self._dispatch(claimed, decision.fire)
                    return claimed
            raise JobRunning(f"job {job_id} kept changing under run_now; try again", state=state)

    def serving_peer(self) -> str | None:
        """A serving node that beat lately, to hand a run_now to (semantic 28); None if there is none.

        An idle serving node beats only at its safety wake-up, so a beat counts for that long on top of
        the lease. A node that died within that window takes nothing: `wait_for_hand_off` then takes
        the run back, so a hand-off can be late, never lost.
        """
        now = self.clock.now()
        fresh = now - self.settings.lease_ttl - self.settings.safety_interval
        peers = sorted(
            (beat for beat in self.store.beats() if is_serving(beat.node) and beat.node != self.id),
            key=lambda beat: beat.beat_at,
            reverse=True,
        )
        return next((beat.node for beat in peers if beat.beat_at > fresh), None)

    def hand_off(self, job_id: int, audit: Callable[[Job, Job], AuditEntry] | None = None) -> Job:
        """Leaves a run_now of an active job in the store for a serving node (engine.hand_off), with
        the audit entry `audit` makes of it."""
        with self._lock:
            state = "unknown"
            for _ in range(CAS_TRIES):
                job = self.store.get(job_id)
                if job is None:
                    raise NotFound(f"no job with id {job_id}")
                state = job.state.value
                queued = engine.hand_off(job, self.clock.now())
                entries = [audit(job, queued)] if audit is not None else []
                if self._won(self.store.save([queued], keep=False, audit=entries)[0]):
                    return queued.evolve(version=queued.version + 1)
            raise JobRunning(f"job {job_id} kept changing under run_now; try again", state=state)

    def take(self, job_id: int) -> Job | None:
        """Claims and starts a handed-off run_now that no node has taken; None if it was taken."""
        with self._lock:
            self._beat(self.clock.now(), force=True)
            for _ in range(CAS_TRIES):
                job = self.store.get(job_id)
                decision = None if job is None else engine.take(job, self.clock.now(), self.rules)
                if decision is None:
                    return None
                if self._claimed(decision.fire, self.store.save([], claims=[decision.job])[0]):
                    assert decision.fire is not None
                    claimed = decision.job.evolve(version=decision.job.version + 1)
                    self._dispatch(claimed, decision.fire)
                    return claimed
            return None

    def wait_for_hand_off(self, job_id: int, fire_id: str, poll: float = 0.1) -> None:
        """Waits until the handed-off occurrence `fire_id` has ended, whoever ran it.

        A serving node that has not taken it within a lease (it died since its last beat, or its
        slots stay full) loses it to this process, which takes it and runs it itself.
        """
        taken_by = None
        patience = self.settings.lease_ttl.total_seconds()
        deadline = time.monotonic() + patience
        while True:
            job = self.store.get(job_id)
            flight = None if job is None else job.flight(fire_id)
            if flight is None:
                return  # over, or deleted
            if flight.node == self.id:
                self.wait_for_runs()
                return
            if flight.node != taken_by:
                taken_by, deadline = flight.node, time.monotonic() + patience
            if time.monotonic() >= deadline:
                if taken_by is None and self.take(job_id) is not None:
                    log.warning("no serving node took %s in %.0fs: this process runs it", fire_id, patience)
                    self.wait_for_runs()
                    return
                if taken_by is not None:
                    # Its node may have died mid-run: once its lease is out, the run is recorded
                    # `interrupted` here, as any pass would, rather than waited for forever.
                    with self._lock:
                        self._recover(self.clock.now(), PassReport())
                deadline = time.monotonic() + 1.0
            if self._stopping.wait(poll):
                return  # this process is stopping; whoever runs the occurrence records it

    # --- the loop -------------------------------------------------------------------------------

    def wake(self) -> None:
        """Something changed: the loop re-reads the store now instead of at its next due instant. Another
        process may have written notifications (a CLI's run), so the delivery loop looks too."""
        self._poked.set()
        self._changed.set()
        self._wake.set()
        if self.on_notes is not None:
            self.on_notes()

    def seconds_until_next_pass(self) -> float:
        now = self.clock.now()
        deadlines = [now + self.settings.safety_interval]
        if self.runs.in_flight() < self.settings.max_concurrency:
            # With every slot busy a due job waits for a slot, and the run that frees one wakes the node:
            # looking sooner would only find it still waiting, over and over.
            next_wake = self.store.next_wake()
            if next_wake is not None and self._left_to_peer:
                next_wake = max(next_wake, now + PEER_LEASE_FLOOR)  # rather than spin on a peer's job
            if next_wake is not None:
                deadlines.append(next_wake)
        if self.runs.in_flight():
            deadlines.append(now + self.settings.lease_beat)
        if self._unsettled:
            deadlines.append(now + PEER_LEASE_FLOOR)  # a claim may have landed unbeknown: reconcile soon
        left = self.store.lease_left(now, self.settings.lease_ttl, self.id)
        if left is not None:
            # A peer's runs are in flight: look again when its lease could run out, so a dead peer's
            # runs are found within a lease. Not sooner than a second: an overdue lease whose runs a
            # pass could not recover (a clock skew, say) must not spin the loop.
            deadlines.append(now + max(left, PEER_LEASE_FLOOR))
        # From the clock read again: the reads above took a moment, which the wait must not add to a
        # due instant (on a real clock the pass would wake that much late).
        return max(0.0, (min(deadlines) - self.clock.now()).total_seconds())

    def until_next_pass(self) -> float:
        """What the loop does before it sleeps: the seconds until the next pass, having taken ahead the
        lease beat that would fall due before that pass, when the pass comes within a beat.

        Why: a pass whose beat is due beats first, and a beat is a durable write (an fsync on SQLite).
        On a node that passes every second, the firing of every tenth pass would wait for two commits,
        the beat's and then its claim's. Taken now, the beat is a moment early, the lease only fresher,
        and the pass claims at once. A node that sleeps longer than a beat (an idle one) beats as its
        next pass starts, as before, so it writes no more often than it did (semantic 25). A beat that
        fails here is left to the pass, which beats as it starts since its beat is still due.
        """
        sleep = self.seconds_until_next_pass()
        if self.runs.in_flight():
            # The keeper beats on its own timer while runs are in flight (semantic 30), and the wait is
            # capped by the beat itself: taken ahead here, a beat (a durable write, then a reconcile
            # read) came before every pass of a busy node, one per finished run, not one per beat.
            return sleep
        if sleep >= self.settings.lease_beat.total_seconds() or self._lease.seconds_to_next_beat() > sleep:
            return sleep
        with self._lock:
            try:
                self._lease.beat_if_due(force=True)
            except StoreError as error:
                log.debug("a beat taken ahead of the next pass failed (that pass beats): %s", error)
                return sleep
            if self._lease.took_beat():
                try:
                    self._reconcile()  # what a pass does after a beat (semantic 29), done here too
                except StoreError as error:
                    log.debug("reconciling after a beat failed (the next pass does): %s", error)
                    self._unsettled = True
        return self.seconds_until_next_pass()

    def serve_forever(self) -> None:
        """Runs passes until `stop()`. Between passes it sleeps until the next due instant or a wake-up.

        A store that can announce changes (`watch`, as PostgreSQL's LISTEN/NOTIFY) wakes the node when
        another node or process changes a job; without it, such changes land at the next safety wake-up.
        """
        inner = self.store.inner
        stop_watching = inner.watch(self.wake) if isinstance(inner, Watches) else None
        try:
            self._serve()
        finally:
            if stop_watching is not None:
                stop_watching()

    def _serve(self) -> None:
        booted, failures = False, 0
        while not self._stopping.is_set():
            try:
                if booted:
                    woken = self._wake.wait(self.until_next_pass())
                    self._wake.clear()
                    if self._stopping.is_set():
                        break
                    if woken and not self._poked.is_set() and not self.runs.has_finished():
                        continue  # a run finished whose outcome the last pass already recorded
                    self._poked.clear()
                    self._linger()
                    self.run_pass()
                else:
                    self.boot()
                    booted = True
                failures = 0
            except Exception as error:
                # A pass that failed (the store was unreachable, say) is tried again, with backoff; the
                # node lives on. Nothing fired on what it read: a claim is a write the store must accept.
                failures += 1
                delay = min(RETRY_MAX, 2.0 ** min(failures - 1, 8))
                if failures == 1:
                    log.exception("a scheduling pass failed; trying again in %.0fs", delay)
                else:
                    log.warning("a scheduling pass failed again (%d in a row): %s", failures, error)
                self._stopping.wait(delay)
                self._poked.set()
                self._wake.set()

    def interrupt_runs(self, why: str) -> None:
        """Stops every run in flight now, each recorded `interrupted` as it ends, and claims nothing
        more: for a short-lived process that is being stopped (semantic 28)."""
        if self.runs.in_flight():
            log.warning("%s: stopping %d runs in flight, recorded interrupted", why, self.runs.in_flight())
        self._stopping.set()
        self._wake.set()
        self.runs.interrupt()

    def stop(self) -> None:
        """Stops claiming, lets runs in flight finish within the shutdown grace, and interrupts the rest."""
        self._stopping.set()
        self._wake.set()
        try:
            self.wait_for_runs(self.settings.shutdown_grace.total_seconds())
        except TimeoutError:
            log.warning("runs still in flight after the shutdown grace; they are interrupted")
        self.runs.interrupt()
        self.wait_for_runs(10.0)
        self.record_finished()
        self._lease.close()
        self.runs.shutdown()
        if self._unsettled:
            # Once its beat is gone, a claim it never started would be taken for an interrupted run.
            with self._lock:
                try:
                    self._reconcile()
                except StoreError as error:
                    log.warning("this node's claims could not be reconciled before it stopped: %s", error)
        self.store.forget(self.id)


def _holds(job: Job | None, occurrence: Occurrence, node: str) -> bool:
    """Whether `job`'s row still says `node` runs that attempt."""
    flight = None if job is None else job.flight(occurrence.fire_id)
    return flight is not None and flight.attempt == occurrence.attempt and flight.node == node
