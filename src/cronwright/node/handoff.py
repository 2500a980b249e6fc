"""A run_now handed by a short-lived process to a serving node (semantic 28): no run belongs to a
process that may go away.

A CLI or stdio MCP server leaves its run_now in the store (`hand_off`) when a serving node beat lately
(`serving_peer`); that node's next pass takes it (`take`, as it takes a pending retry). The requester then
waits for the occurrence to end (`wait_for_hand_off`), and takes it back to run itself if no serving node
took it within a lease: a hand-off can be late, never lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from cronwright.core import engine
from cronwright.core.audit import AuditEntry
from cronwright.core.model import Job
from cronwright.errors import JobRunning, NotFound
from cronwright.node.node_ids import is_serving
from cronwright.node.scheduler import CAS_TRIES, Node
from cronwright.store.base import WriteSet

log = logging.getLogger("cronwright.node")


def serving_peer(node: Node) -> str | None:
    """A serving node that beat lately, to hand a run_now to; None if there is none.

    An idle serving node beats only at its safety wake-up, so a beat counts for that long on top of the
    lease. A node that died within that window takes nothing: `wait_for_hand_off` then takes the run
    back.
    """
    now = node.clock.now()
    fresh = now - node.settings.lease_ttl - node.settings.safety_interval
    peers = sorted(
        (beat for beat in node.store.beats() if is_serving(beat.node) and beat.node != node.id),
        key=lambda beat: beat.beat_at,
        reverse=True,
    )
    return next((beat.node for beat in peers if beat.beat_at > fresh), None)


def hand_off(node: Node, job_id: int, audit: Callable[[Job, Job], AuditEntry] | None = None) -> Job:
    """Leaves a run_now of an active job in the store for a serving node (engine.hand_off), with the
    audit entry `audit` makes of it."""
    with node.lock:
        state = "unknown"
        for _ in range(CAS_TRIES):
            job = node.store.get(job_id)
            if job is None:
                raise NotFound(f"no job with id {job_id}")
            state = job.state.value
            queued = engine.hand_off(job, node.clock.now())
            entries = [audit(job, queued)] if audit is not None else []
            if node.won(node.store.save(WriteSet([queued], audit=entries), keep=False).of(queued)):
                return queued.evolve(version=queued.version + 1)
        raise JobRunning(f"job {job_id} kept changing under run_now; try again", state=state)


def take(node: Node, job_id: int) -> Job | None:
    """Claims and starts a handed-off run_now that no node has taken; None if it was taken."""
    with node.lock:
        node.beat_now()
        for _ in range(CAS_TRIES):
            job = node.store.get(job_id)
            decision = None if job is None else engine.take(job, node.clock.now(), node.rules)
            if decision is None:
                return None
            claimed_as = node.store.save(WriteSet(claims=[decision.job])).of(decision.job)
            if node.claim_won(decision.job, decision.fire, claimed_as):
                assert decision.fire is not None
                claimed = decision.job.evolve(version=decision.job.version + 1)
                node.start(claimed, decision.fire)
                return claimed
        return None


def wait_for_hand_off(node: Node, job_id: int, fire_id: str, poll: float = 0.1) -> None:
    """Waits until the handed-off occurrence `fire_id` has ended, whoever ran it.

    A serving node that has not taken it within a lease (it died since its last beat, or its slots stay
    full) loses it to this process, which takes it and runs it itself.
    """
    taken_by = None
    patience = node.settings.lease_ttl.total_seconds()
    deadline = time.monotonic() + patience
    while True:
        job = node.store.get(job_id)
        flight = None if job is None else job.flight(fire_id)
        if flight is None:
            return  # over, or deleted
        if flight.node == node.id:
            node.wait_for_runs()
            return
        if flight.node != taken_by:
            taken_by, deadline = flight.node, time.monotonic() + patience
        if time.monotonic() >= deadline:
            if taken_by is None and take(node, job_id) is not None:
                log.warning("no serving node took %s in %.0fs: this process runs it", fire_id, patience)
                node.wait_for_runs()
                return
            if taken_by is not None:
                # Its node may have died mid-run: once its lease is out, the run is recorded
                # `interrupted` here, as any pass would, rather than waited for forever.
                node.recover_peers()
            deadline = time.monotonic() + 1.0
        if node.stopping.wait(poll):
            return  # this process is stopping; whoever runs the occurrence records it
