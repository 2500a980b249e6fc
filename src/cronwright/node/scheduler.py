"""The imperative shell: the clock, wake-ups, scheduling passes, claims, dispatch and recovery.

The store is the truth. The node reads the jobs that are due, lets the engine decide, writes each
decision as a compare-and-swap, and runs only the occurrences whose claim it won and made durable.
The passes are here, a shell of reads, writes, dispatch and events over the planner (core/planner.py:
the pure decisions of a pass). Beside them in node/: the dispatcher (dispatch.py: the runs in flight,
whose outcomes come back through a queue and are recorded in batches by the next pass, so one
transaction records many), the lease keeper (lease.py: beats on a monotonic clock and a timer of their
own), the ledger (ledger.py: what this node knows the store may not, for reconciling), the hand-off of
a short-lived process's run_now (handoff.py), and what drives the passes (drive.py: serve and tick).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from cronwright.clock import Clock
from cronwright.core import detect, engine, planner
from cronwright.core.audit import AuditEntry
from cronwright.core.events import EventSink
from cronwright.core.model import Finished, Job, Occurrence, Persistence, Run
from cronwright.core.notifications import Alert, Notification
from cronwright.errors import AtMaxConcurrency, JobRunning, NotFound, StoreError
from cronwright.node.dispatch import Dispatcher, attempt_of
from cronwright.node.lease import LeaseKeeper, StepGuard
from cronwright.node.ledger import Ledger
from cronwright.node.node_ids import new_node_id
from cronwright.node.node_settings import NodeSettings
from cronwright.node.reconcile import Reconciler
from cronwright.node.runner import Runner
from cronwright.notify.alerting import Alerting, StoreTransitions
from cronwright.store.base import Backend, Saved, Store, Write, WriteSet
from cronwright.store.resilient import ResilientStore

log = logging.getLogger("cronwright.node")

# How many due jobs one read of the store takes beyond the free slots, once a pass is settling jobs.
DUE_CHUNK = planner.DUE_CHUNK
# How many times a compare-and-swap that lost to another writer is read and decided again.
CAS_TRIES = 5


# How often a node's passes drop the audit entries past their retention: a cheap indexed delete.
AUDIT_PRUNE_EVERY = timedelta(hours=1)
# A pass folds the store's count rows (PostgreSQL appends one per change of a job's state) at most this
# often: never more than a pass already runs, so an idle node does not wake for it (semantic 25). Reads
# that meet many unfolded rows fold them too (store/postgres.py), so this only bounds the table's growth.
FOLD_COUNTS_EVERY = timedelta(minutes=1)


# The attempts of one job that ended, and the one decision that records them all.
Decided = planner.Decided


@dataclass(slots=True)
class PassReport:
    fired: list[str] = field(default_factory=list)
    skipped: int = 0
    recovered: list[str] = field(default_factory=list)


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
        self.unsettled = False
        # What this node knows of its attempts that the store may not (semantic 29): the claims it
        # never started, the only ones it may give back, and the outcomes no durable write holds yet.
        self.ledger = Ledger(forget_claims_after=4 * self.settings.lease_ttl.total_seconds())
        self.lock = threading.RLock()
        self.woken = threading.Event()
        # Set with `_wake` by everything but a finished run: a wake-up that only a finished run caused,
        # and whose outcome a pass has already recorded, needs no pass of its own.
        self.poked = threading.Event()
        # Set by every wake-up from outside the loop (another node's NOTIFY, a front's change): the next
        # pass reads the rows this node holds if it runs any, for an overlap replace asking it to stop one.
        self.changed = threading.Event()
        self.stopping = threading.Event()
        # The dispatcher runs what passes claimed; a run that ends wakes the loop to record it.
        self.runs = Dispatcher(runner, self.settings.max_concurrency, self.woken.set, self.stopping)
        self.reconciler = Reconciler(self.id, self.store, self.runs, self.ledger, clock, self._record_all)
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
        self._counts_folded_at: datetime | None = None
        # The last pass left a due job to the peer that runs its flights (overlap allow): it stays due
        # until that peer starts it, so the next pass is not sooner than PEER_LEASE_FLOOR.
        self.left_to_peer = False

    # --- passes ---------------------------------------------------------------------------------

    def boot(self) -> PassReport:
        """Announces this node, recovers runs of dead processes, and runs a first pass."""
        self._beat(self.clock.now(), force=True)
        return self.run_pass()

    def run_pass(self) -> PassReport:
        """One scheduling pass at the clock's now: record what finished, recover, fire what is due."""
        with self.lock:
            now = self.clock.now()
            finished = self.runs.drain()
            try:
                self.reconciler.rewrite_dropped(self.store.flush(), now)
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
                changed = self.changed.is_set() and self.runs.in_flight() > 0
                self.changed.clear()
                if self.unsettled or beaten or changed:
                    self.reconcile()
                self._recover(now, report)
            except Exception:
                self.runs.requeue(finished)
                raise
            if self.stopping.is_set():
                self._record_all(finished, now)
            else:
                with self.runs.one_look():  # the runs it starts take one look at their targets' files
                    self._tend_due(now, report, finished)
            self.last_pass_at = now
            self._prune_audit(now)
            self._fold_counts(now)
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

    def _fold_counts(self, now: datetime) -> None:
        if self._counts_folded_at is not None and now - self._counts_folded_at < FOLD_COUNTS_EVERY:
            return
        if self.store.persistence is Persistence.DEGRADED:
            return  # the store fails: a fold would only wait for it; the passes have writes to replay first
        # Tried once a period whatever its fate: in an outage it must not wait on the store every pass.
        self._counts_folded_at = now
        try:
            self.store.fold_counts()
        except StoreError as error:
            log.warning("could not fold the store's counts (a pass tries again in a minute): %s", error)

    def _beat(self, now: datetime, force: bool = False) -> bool:
        """Renews this node's lease when a beat is due by the monotonic clock (or `force`); returns
        whether the lease was beaten since the last pass, here or by the lease keeper's thread."""
        self._lease.beat_if_due(force)
        return self._lease.took_beat()

    @property
    def lease(self) -> LeaseKeeper:
        return self._lease

    def beat_now(self) -> None:
        """Renews this node's lease now (a short-lived process about to claim, say)."""
        self._beat(self.clock.now(), force=True)

    def recover_peers(self) -> None:
        """Records `interrupted` the runs of peers whose lease ran out, as a pass would."""
        with self.lock:
            self._recover(self.clock.now(), PassReport())

    def _track_runs(self) -> None:
        """The lease keeper beats on its own timer while runs are in flight, and sleeps while none are."""
        busy = self.runs.in_flight() > 0
        if busy:
            self._lease.start()
        self._lease.busy(busy)

    def reconcile(self) -> None:
        """Settles the rows that say this node runs an attempt it does not run now (semantic 29; see
        node/reconcile.py); passes come soon while a give-back could not be written."""
        self.unsettled = not self.reconciler.reconcile()

    def won(self, outcome: Write) -> bool:
        """Whether a claim's write made it this node's to run; one of unknown outcome is reconciled."""
        if outcome is Write.UNKNOWN:
            self.unsettled = True
        return outcome is Write.DURABLE

    def claim_won(self, claim: Job, fire: Occurrence | None, outcome: Write) -> bool:
        """As `won`, for the claim `claim` (the row as decided, written at its next version) of the
        attempt `fire`: one not won is noted as never started here, the one record that lets a
        reconcile give it back if its write landed unheard."""
        won = self.won(outcome)
        if not won and fire is not None:
            self.ledger.not_won(attempt_of(fire), self.clock.monotonic(), claim.version + 1)
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
            writes = WriteSet([decision.job], runs=decision.runs, notes=notes)
            if self.won(self.store.save(writes, keep=False).of(decision.job)):
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
        self.left_to_peer = False
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
            self.left_to_peer |= plan.left_to_peer
            self._wait_for_slots(plan)
            settled, claims = plan.settled, plan.claims
            kept = [d for _, d in finishing] + settled
            runs = finish_runs + [run for d in settled for run in d.runs]
            notes = self._notes([*kept, *claims])
            writes = WriteSet([d.job for d in kept], claims=[d.job for d in claims], runs=runs, notes=notes)
            written: Saved[Write] = self.store.save(writes) if kept or runs or claims else Saved({})
            self._noted(notes)
            lost = [
                item
                for ended, decision in finishing
                if written.of(decision.job) is Write.LOST
                for item in ended
            ]
            for decision in kept:
                if written.of(decision.job) is not Write.LOST:
                    self._emit(decision)
                    self.reconciler.stop_if_replaced(decision.job)
            for ended, decision in finishing:
                if (outcome := written.of(decision.job)) is not Write.LOST:
                    self._recorded(ended, decision, outcome)
            if lost:
                # Another writer changed these jobs first: decide again; their runs are recorded.
                self._record_all(lost, now, with_runs=False)
            self.runs.freed(unrecorded)
            self._track_runs()
            finishing, finish_runs, unrecorded = [], [], []
            report.skipped += plan.skipped
            for decision in claims:
                if self.claim_won(decision.job, decision.fire, written.of(decision.job)):
                    self._emit(decision)
                    report.skipped += planner.skipped(decision)
                    assert decision.fire is not None
                    self.start(decision.job.evolve(version=decision.job.version + 1), decision.fire)
                    report.fired.append(decision.fire.fire_id)
            if not planner.reads_on(len(due), limit, len(batch), plan, free, bool(kept or claims)):
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

    def _emit(self, decision: engine.Decision) -> None:
        for event in decision.events:
            self._events.emit(event)

    def announce(self, decision: engine.Decision) -> None:
        """Emits the events of a decision the service made and saved (a resume's misfire skip)."""
        self._emit(decision)

    # --- attempts -------------------------------------------------------------------------------

    def start(self, job: Job, occurrence: Occurrence) -> None:
        self.ledger.started(attempt_of(occurrence))  # started now, whatever an earlier claim did
        self.runs.start(job, occurrence)
        self._track_runs()

    def record_finished(self) -> int:
        """Records every attempt that has finished, in one transaction where it can. Returns how many."""
        with self.lock:
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
            self.ledger.kept((occurrence, result))
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
        writes = WriteSet([d.job for _, d in decided], runs=runs if with_runs else [], notes=notes)
        written = self.store.save(writes)
        self._noted(notes)
        lost: list[Finished] = []
        for ended, decision in decided:
            if (outcome := written.of(decision.job)) is Write.LOST:
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
                self.ledger.kept((occurrence, result))
        if outcome is Write.DURABLE:
            # Decided on the row as this node saw it, its kept outcomes included: all settled now.
            self.ledger.written((decision.job.id,))
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
            with self.lock:
                futures = self.runs.futures()
            if not futures:
                return
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"{len(futures)} runs still in flight")
            wait(futures, min(beat, remaining) if remaining is not None else beat, FIRST_COMPLETED)
            self.record_finished()
            with self.lock:
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
            self.reconciler.stop_if_replaced(job)

    # --- operator actions that need the node --------------------------------------------------

    def run_now(self, job_id: int, audit: Callable[[Job, Job], AuditEntry] | None = None) -> Job:
        """Claims and starts an occurrence of an active job now; refusals as DESIGN semantic 12.
        `audit` makes the entry of the claim from the job before and after it, written with it."""
        with self.lock:
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
                written = self.store.save(WriteSet([decision.job], audit=entries), keep=False)
                if self.claim_won(decision.job, decision.fire, written.of(decision.job)):
                    assert decision.fire is not None
                    claimed = decision.job.evolve(version=decision.job.version + 1)
                    self.start(claimed, decision.fire)
                    return claimed
            raise JobRunning(f"job {job_id} kept changing under run_now; try again", state=state)

    # --- waking and stopping (node/loop.py drives the passes) -------------------------------------

    def wake(self) -> None:
        """Something changed: the loop re-reads the store now instead of at its next due instant. Another
        process may have written notifications (a CLI's run), so the delivery loop looks too."""
        self.poked.set()
        self.changed.set()
        self._rouse()
        if self.on_notes is not None:
            self.on_notes()

    def _rouse(self) -> None:
        """Ends the loop's wait, wherever it waits: on `woken`, or pumping its runs' replies."""
        self.woken.set()
        self.runs.wake_waiter()

    def interrupt_runs(self, why: str) -> None:
        """Stops every run in flight now, each recorded `interrupted` as it ends, and claims nothing
        more: for a short-lived process that is being stopped (semantic 28)."""
        if self.runs.in_flight():
            log.warning("%s: stopping %d runs in flight, recorded interrupted", why, self.runs.in_flight())
        self.stopping.set()
        self._rouse()
        self.runs.interrupt()

    def stop(self) -> None:
        """Stops claiming, lets runs in flight finish within the shutdown grace, and interrupts the rest."""
        self.stopping.set()
        self._rouse()
        try:
            self.wait_for_runs(self.settings.shutdown_grace.total_seconds())
        except TimeoutError:
            log.warning("runs still in flight after the shutdown grace; they are interrupted")
        self.runs.interrupt()
        self.wait_for_runs(10.0)
        self.record_finished()
        self._lease.close()
        self.runs.shutdown()
        if self.unsettled:
            # Once its beat is gone, a claim it never started would be taken for an interrupted run.
            with self.lock:
                try:
                    self.reconcile()
                except StoreError as error:
                    log.warning("this node's claims could not be reconciled before it stopped: %s", error)
        self.store.forget(self.id)
