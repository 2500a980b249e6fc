"""Reconciling a node's rows with what it runs (semantic 29): never by guessing.

A row can say this node runs an attempt that it does not: a claim whose write failed and could not be
read back landed all the same, or the write that recorded an attempt's end did not land (the store was
out of reach, and a peer's change then moved the row on). The ledger (node/ledger.py) tells the two
apart: only a claim this node knows it never started is given back; any other attempt ran here, and is
recorded from what is known. The same read finds the attempts overlap replace asked this node to stop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from cronwright.clock import Clock
from cronwright.core import engine
from cronwright.core.model import Finished, InFlight, Job, Occurrence, Outcome, Result
from cronwright.node.dispatch import Dispatcher, attempt_of
from cronwright.node.ledger import Ledger
from cronwright.store.base import Flushed, Store, Write, WriteSet

log = logging.getLogger("cronwright.node")


class Reconciler:
    """`record(done, now, with_runs)` is the node's way of recording outcomes (as a pass does)."""

    def __init__(
        self,
        node: str,
        store: Store,
        runs: Dispatcher,
        ledger: Ledger,
        clock: Clock,
        record: Callable[[list[Finished], datetime, bool], None],
    ) -> None:
        self._node = node
        self._store = store
        self._runs = runs
        self._ledger = ledger
        self._clock = clock
        self._record = record

    def reconcile(self) -> bool:
        """Settles the rows that say this node runs an attempt it does not run now (semantic 29).

        Never by guessing. A claim whose write failed, and could not be read back, never runs; if it
        landed all the same, its row says `running` on this node while nothing runs it. The dispatch
        keeps its own record of such claims (node/ledger.py), so only an attempt this node knows it never
        started is given back (engine.release): the pass goes on to decide that job afresh, under a
        new fire_id. Any other such row is of an attempt this node did start and that ended, whose
        finishing write did not land: it is recorded from what is known, its outcome if the node kept
        it, else `interrupted`, and never run again. Done while unsettled, and at each beat, since a
        commit may land a moment after a read back found it missing.

        The same read finds the attempts that overlap replace asked this node to stop, whichever node
        decided it: so a holder stops one within a beat, or at once when a peer's change wakes it.
        """
        held = self._store.held(self._node)
        for job in held:
            self.stop_if_replaced(job)
        stranded: list[tuple[Job, list[InFlight]]] = []
        ended: list[Finished] = []
        for job in held:
            idle = self._not_running(job)
            back = [flight for flight in idle if self._never_started(job, flight)]
            if back:
                stranded.append((job, back))
            ended += [self._ended(job, flight) for flight in idle if flight not in back]
        if ended:
            self._record_ended(ended)
        # Written like a claim (kept nowhere if it fails): a release that fails is found again.
        moved = [self._moved_on(job, flights) for job, flights in stranded]
        released = [
            engine.release_all(job, [f.fire_id for f in flights], moved_on)
            for (job, flights), moved_on in zip(stranded, moved, strict=True)
        ]
        saved = self._store.save(WriteSet(claims=released)) if released else None
        durable = [saved is not None and saved.of(release) is Write.DURABLE for release in released]
        for (job, flights), moved_on, given_back in zip(stranded, moved, durable, strict=True):
            if given_back:
                for flight in flights:
                    self._ledger.given_back((job.id, flight.fire_id, flight.attempt))
                    log.warning(
                        "%s attempt %d of '%s' was claimed by a write whose reply was lost, and this node"
                        " never started it: %s",
                        flight.fire_id,
                        flight.attempt,
                        job.name,
                        "the schedule had moved on meanwhile, so it is counted missed"
                        if moved_on
                        else "it is given back to the schedule (a later firing takes a new fire_id)",
                    )
        self._ledger.forget_old_claims(self._clock.monotonic())
        return all(durable)

    def _not_running(self, job: Job) -> list[InFlight]:
        """The attempts of `job` that its row says run here, and that this process does not run now."""
        return [
            flight
            for flight in job.flights
            if flight.node == self._node and not self._runs.started((job.id, flight.fire_id, flight.attempt))
        ]

    def _never_started(self, job: Job, flight: InFlight) -> bool:
        """Whether the dispatch's own record says this node claimed `flight` and never started it."""
        return self._ledger.never_started((job.id, flight.fire_id, flight.attempt))

    def _ended(self, job: Job, flight: InFlight) -> Finished:
        """An attempt this node started, not running now, whose row still says it runs here: its outcome
        as this node kept it, or `interrupted` if it has none (it is never run again)."""
        kept = self._ledger.outcome((job.id, flight.fire_id, flight.attempt))
        if kept is not None:
            return kept
        log.warning(
            "%s attempt %d of '%s' started on this node, and its outcome is lost: it is recorded"
            " interrupted, never run again",
            flight.fire_id,
            flight.attempt,
            job.name,
        )
        why = f"node {self._node} ran it, and lost its outcome before it could be recorded"
        return engine.occurrence_of(job, flight), Result(Outcome.INTERRUPTED, why)

    def _record_ended(self, ended: list[Finished]) -> None:
        """Records attempts that ended here and whose rows still hold them, on the rows as they are.

        An outcome this node kept has its run row written already (or waiting in memory with the
        store), so only the job is decided again; an `interrupted` one gets its row now."""
        now = self._clock.now()
        known = [item for item in ended if self._ledger.outcome(attempt_of(item[0])) is not None]
        lost = [item for item in ended if self._ledger.outcome(attempt_of(item[0])) is None]
        if known:
            self._record(known, now, False)  # their run rows are written, or wait with the store
        if lost:
            self._record(lost, now, True)

    def rewrite_dropped(self, flushed: Flushed, now: datetime) -> None:
        """After a flush: kept jobs written are settled; a kept job whose row moved on (a peer's overlap
        skip while this node was cut off) is decided again, on that row, from the outcomes it held."""
        self._ledger.written(flushed.written)
        redo = self._ledger.outcomes_of(flushed.dropped)
        if not redo:
            return
        rows = self._store.get_many(list({occurrence.job_id for occurrence, _ in redo}))
        still = [item for item in redo if _holds(rows.get(item[0].job_id), item[0], self._node)]
        for occurrence, _ in redo:
            if not _holds(rows.get(occurrence.job_id), occurrence, self._node):
                self._ledger.concluded(attempt_of(occurrence))  # its own write landed unheard, or a peer's
        if still:
            self._record(still, now, False)

    def _moved_on(self, job: Job, flights: list[InFlight]) -> bool:
        """Whether another writer changed `job` since this node's latest claim of `flights` landed: a
        peer's overlap skips, say, which the give-back must not count again (engine.release)."""
        claimed = max(self._ledger.claimed_version((job.id, f.fire_id, f.attempt)) for f in flights)
        return job.version > claimed

    def stop_if_replaced(self, job: Job) -> None:
        """Stops the attempt this node runs for `job` if overlap replace asked it to (semantic 34)."""
        flight = job.in_flight
        if flight is not None and flight.cancel and flight.node == self._node:
            self._runs.cancel((job.id, flight.fire_id, flight.attempt))


def _holds(job: Job | None, occurrence: Occurrence, node: str) -> bool:
    """Whether `job`'s row still says `node` runs that attempt."""
    flight = None if job is None else job.flight(occurrence.fire_id)
    return flight is not None and flight.attempt == occurrence.attempt and flight.node == node
