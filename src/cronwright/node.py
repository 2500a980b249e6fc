"""The imperative shell: the clock, wake-ups, scheduling passes, claims, dispatch and recovery.

The store is the truth. The node reads the jobs that are due, lets the engine decide, writes each
decision as a compare-and-swap, and runs only the occurrences whose claim it won and made durable.
Attempts run on a thread pool (the runner isolates the target code); their results come back through
a queue and are recorded in batches by whoever runs the next pass, so one transaction records many.
"""

from __future__ import annotations

import logging
import os
import queue
import secrets
import socket
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from cronwright import engine
from cronwright.clock import Clock
from cronwright.errors import AtMaxConcurrency, JobRunning, NotFound
from cronwright.events import EventSink
from cronwright.model import Job, Occurrence, Outcome, Result, Run
from cronwright.runner import Runner
from cronwright.store.base import LEASE_BEAT, LEASE_TTL, Store
from cronwright.store.resilient import ResilientStore, Write

log = logging.getLogger("cronwright.node")

# How many due jobs one read of the store takes; a pass reads again until nothing due is left.
DUE_BATCH = 2000
# How many times a compare-and-swap that lost to another writer is read and decided again.
CAS_TRIES = 5


@dataclass(frozen=True, slots=True)
class NodeSettings:
    misfire_grace: timedelta = timedelta(seconds=60)
    max_concurrency: int = 16
    shutdown_grace: timedelta = timedelta(seconds=30)
    # An idle node still wakes this often, to see changes made by processes that could not wake it
    # and to notice another node's death. Once a minute keeps `status` honest and costs nothing.
    safety_interval: timedelta = timedelta(seconds=60)


@dataclass(slots=True)
class PassReport:
    fired: list[str] = field(default_factory=list)
    skipped: int = 0
    recovered: list[str] = field(default_factory=list)


def new_node_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Node:
    def __init__(
        self,
        store: Store,
        runner: Runner,
        clock: Clock,
        events: EventSink,
        settings: NodeSettings | None = None,
        node_id: str | None = None,
    ) -> None:
        self.id = node_id or new_node_id()
        self.settings = settings or NodeSettings()
        self.store = ResilientStore(store, events)
        self.clock = clock
        self.rules = engine.Rules(self.id, self.settings.misfire_grace)
        self._runner = runner
        self._events = events
        self._pool = ThreadPoolExecutor(self.settings.max_concurrency, thread_name_prefix="cronwright-run")
        self._running: dict[int, tuple[Occurrence, Future[None]]] = {}
        # A result of None means the occurrence waited past its grace for a slot and never started.
        self._finished: queue.SimpleQueue[tuple[Occurrence, Result | None]] = queue.SimpleQueue()
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._last_beat: datetime | None = None

    # --- passes ---------------------------------------------------------------------------------

    def boot(self) -> PassReport:
        """Announces this node, recovers runs of dead processes, and runs a first pass."""
        self._beat(self.clock.now(), force=True)
        return self.run_pass()

    def run_pass(self) -> PassReport:
        """One scheduling pass at the clock's now: record what finished, recover, fire what is due."""
        with self._lock:
            now = self.clock.now()
            self._beat(now)
            self.record_finished()
            self.store.flush()
            report = PassReport()
            self._recover(now, report)
            if not self._stopping.is_set():
                self._tend_due(now, report)
            return report

    def _beat(self, now: datetime, force: bool = False) -> None:
        if force or self._running or self._last_beat is None or now - self._last_beat >= LEASE_BEAT:
            self.store.beat(self.id, now)
            self._last_beat = now

    def _recover(self, now: datetime, report: PassReport) -> None:
        for job in self.store.orphans(now, LEASE_TTL):
            flight = job.in_flight
            assert flight is not None
            if flight.node == self.id:
                continue
            why = f"node {flight.node} stopped renewing its lease, so its run was interrupted"
            decision = engine.interrupt(job, now, self.rules, why)
            if self._write([decision])[0] is not Write.LOST:
                report.recovered.append(flight.fire_id)

    def _tend_due(self, now: datetime, report: PassReport) -> None:
        seen: set[int] = set()
        while True:
            batch = [job for job in self.store.due(now, DUE_BATCH) if job.id not in seen]
            if not batch:
                return
            seen.update(job.id for job in batch)
            batch_by_id = {job.id: job for job in batch}
            decisions = [engine.tend(job, now, self.rules) for job in batch]
            # A job with nothing to do here (it woke for a lifetime check that is not yet due) is left alone.
            settled = [d for d in decisions if d.fire is None and (d.job != batch_by_id[d.job.id] or d.runs)]
            # Every firing due in this pass is claimed in this pass; beyond max_concurrency it waits
            # for a worker slot, and one whose grace runs out while it waits is released as missed.
            claims = [d for d in decisions if d.fire is not None]
            self._write(settled)
            report.skipped += sum(e.fields.get("count", 0) for d in settled for e in d.events)
            won = self.store.save([d.job for d in claims], keep=False) if claims else []
            for decision, outcome in zip(claims, won, strict=True):
                if outcome is Write.DURABLE:
                    self._emit(decision)
                    report.skipped += sum(e.fields.get("count", 0) for e in decision.events)
                    assert decision.fire is not None
                    self._dispatch(decision.job.evolve(version=decision.job.version + 1), decision.fire)
                    report.fired.append(decision.fire.fire_id)

    def _write(self, decisions: list[engine.Decision]) -> list[Write]:
        """Saves decisions (kept in memory if the store fails) and emits the events of those that landed."""
        runs = [run for d in decisions for run in d.runs]
        written = self.store.save([d.job for d in decisions], runs) if decisions else []
        for decision, outcome in zip(decisions, written, strict=True):
            if outcome is not Write.LOST:
                self._emit(decision)
        return written

    def _emit(self, decision: engine.Decision) -> None:
        for event in decision.events:
            self._events.emit(event)

    # --- attempts -------------------------------------------------------------------------------

    def _dispatch(self, job: Job, occurrence: Occurrence) -> None:
        future = self._pool.submit(self._attempt, job, occurrence)
        self._running[job.id] = (occurrence, future)

    def _attempt(self, job: Job, occurrence: Occurrence) -> None:
        """Runs on a worker thread once a slot is free; `fired_at` becomes the instant it really starts."""
        now = self.clock.now()
        result: Result | None = None
        if self._stopping.is_set():
            result = Result(Outcome.INTERRUPTED, "the node shut down before this run could start")
        elif not engine.too_late(job, occurrence, now, self.rules):
            occurrence = replace(occurrence, fired_at=now)
            try:
                result = self._runner.run(job, occurrence)
            except Exception as error:
                log.exception("the runner failed on %s", occurrence.fire_id)
                result = Result(Outcome.CRASHED, f"the runner failed: {error!r}"[:500])
        self._finished.put((occurrence, result))
        self._wake.set()

    def record_finished(self) -> int:
        """Records every attempt that has finished, in one transaction where it can. Returns how many."""
        with self._lock:
            done: list[tuple[Occurrence, Result | None]] = []
            while True:
                try:
                    done.append(self._finished.get_nowait())
                except queue.Empty:
                    break
            if not done:
                return 0
            now = self.clock.now()
            pending, with_runs = done, True
            for _ in range(CAS_TRIES):
                pending = self._record(pending, now, with_runs)
                if not pending:
                    break
                # Another writer changed these jobs first (an overlap skip on another node, say):
                # read them again and decide again; their runs are already in the history.
                with_runs = False
            for occurrence, _ in done:
                self._running.pop(occurrence.job_id, None)
            return len(done)

    def _record(
        self, done: list[tuple[Occurrence, Result | None]], now: datetime, with_runs: bool
    ) -> list[tuple[Occurrence, Result | None]]:
        """Records attempts; returns those whose job write lost a race and must be decided again."""
        decided: list[tuple[Occurrence, Result | None, engine.Decision]] = []
        runs: list[Run] = []
        for occurrence, result in done:
            job = self.store.get(occurrence.job_id)
            if result is None:
                decision = engine.miss(job, occurrence, now, self.rules)
                if decision is not None:
                    decided.append((occurrence, result, decision))
                continue
            decision = engine.finish(job, occurrence, result, now, self.rules)
            if decision is None:
                # The job was deleted meanwhile: the run reaches the history, the job stays gone.
                runs.append(engine.run_of(occurrence, result, now, self.id))
            else:
                decided.append((occurrence, result, decision))
                runs.extend(decision.runs)
        written = self.store.save([d.job for _, _, d in decided], runs if with_runs else [])
        lost: list[tuple[Occurrence, Result | None]] = []
        for (occurrence, result, decision), outcome in zip(decided, written, strict=True):
            if outcome is Write.LOST:
                lost.append((occurrence, result))
            else:
                self._emit(decision)
        return lost

    def in_flight(self) -> int:
        return len(self._running)

    def wait_for_runs(self, timeout: float | None = None) -> None:
        """Blocks until every attempt this node started has finished and been recorded."""
        while True:
            with self._lock:
                futures = [future for _, future in self._running.values()]
            if not futures:
                return
            for future in futures:
                future.result(timeout)
            self.record_finished()

    # --- operator actions that need the node --------------------------------------------------

    def run_now(self, job_id: int) -> Job:
        """Claims and starts an occurrence of an active job now; refusals as DESIGN semantic 12."""
        with self._lock:
            state = "unknown"
            for _ in range(CAS_TRIES):
                job = self.store.get(job_id)
                if job is None:
                    raise NotFound(f"no job with id {job_id}")
                if job.id in self._running:
                    raise JobRunning(f"'{job.name}' is running", state=job.state.value)
                if len(self._running) >= self.settings.max_concurrency:
                    raise AtMaxConcurrency(
                        f"{self.settings.max_concurrency} runs are in flight (max_concurrency); try again "
                        "when one has finished"
                    )
                now = self.clock.now()
                state = job.state.value
                decision = engine.run_now(job, now, self.rules)
                self._beat(now, force=True)
                if self.store.save([decision.job], keep=False)[0] is Write.DURABLE:
                    assert decision.fire is not None
                    claimed = decision.job.evolve(version=decision.job.version + 1)
                    self._dispatch(claimed, decision.fire)
                    return claimed
            raise JobRunning(f"job {job_id} kept changing under run_now; try again", state=state)

    # --- the loop -------------------------------------------------------------------------------

    def wake(self) -> None:
        """Something changed: the loop re-reads the store now instead of at its next due instant."""
        self._wake.set()

    def seconds_until_next_pass(self) -> float:
        now = self.clock.now()
        deadlines = [now + self.settings.safety_interval]
        next_wake = self.store.next_wake()
        if next_wake is not None:
            deadlines.append(next_wake)
        if self._running:
            deadlines.append(now + LEASE_BEAT)
        return max(0.0, (min(deadlines) - now).total_seconds())

    def serve_forever(self) -> None:
        """Runs passes until `stop()`. Between passes it sleeps until the next due instant or a wake-up."""
        self.boot()
        while not self._stopping.is_set():
            self._wake.wait(self.seconds_until_next_pass())
            self._wake.clear()
            if self._stopping.is_set():
                break
            try:
                self.run_pass()
            except Exception:
                # A pass that failed (the store was unreachable, say) is tried again; the node lives on.
                log.exception("a scheduling pass failed; trying again shortly")
                self._stopping.wait(1.0)

    def stop(self) -> None:
        """Stops claiming, lets runs in flight finish within the shutdown grace, and interrupts the rest."""
        self._stopping.set()
        self._wake.set()
        try:
            self.wait_for_runs(self.settings.shutdown_grace.total_seconds())
        except TimeoutError:
            log.warning("runs still in flight after the shutdown grace; they are interrupted")
        self._runner.close()
        self.wait_for_runs(10.0)
        self.record_finished()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.store.forget(self.id)
