"""The verbs that move a schedule through its life: pause, resume, run_now, delete, the operator's
approve and reject (semantic 37), and tick.

Each is a function of the service and one validated request, as the protocol dispatches it; each writes
its audit entry in the transaction of its change (semantic 36)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cronwright.core import engine
from cronwright.core.audit import AuditEntry
from cronwright.core.model import (
    Job,
    PausedBy,
    State,
)
from cronwright.core.sources import OPERATOR, Source
from cronwright.errors import (
    Invalid,
    JobNotPending,
    NotFound,
    StoreCorrupt,
)
from cronwright.node import drive, handoff
from cronwright.service.operations import Service

if TYPE_CHECKING:  # the request models, for their types: see operations.py
    from cronwright.declare.requests import Approve, Delete, Pause, Reject, Resume, RunNow, Tick


def pending_job(service: Service, request: Approve | Reject, source: Source, verb: str) -> Job:
    """The pending job an operator's approve or reject names."""
    if not source.operator:
        raise Invalid("action", f"'{verb}' is the operator's: a source cannot decide its own schedules")
    job = service.job(request, source)
    if job.state is not State.PENDING:
        raise JobNotPending(
            f"'{job.name}' is {job.state.value}, not pending: only a pending schedule can be {verb}d",
            state=job.state.value,
        )
    return job


def approve(service: Service, request: Approve, source: Source) -> dict[str, Any]:
    """Arms a pending job from this moment: its first firing is its schedule's first after now."""
    job = pending_job(service, request, source, "approve")
    note = _note(request.note)
    now = service.node.clock.now()
    approved = engine.arm(job.evolve(state=State.ACTIVE, updated_at=now), now)
    return service.save(approved, service.entry("approve", request, source, job, approved, note))


def reject(service: Service, request: Reject, source: Source) -> dict[str, Any]:
    """Deletes a pending job; the reply holds the row that went."""
    job = pending_job(service, request, source, "reject")
    note = _note(request.note)
    entry = service.entry("reject", request, source, job, None, note)
    gone, persistence = service.store.delete(job.id, entry)
    service.node.wake()
    return {"job": service.row(gone or job), "persistence": persistence.value}


def pause(service: Service, request: Pause, source: Source) -> dict[str, Any]:
    job = service.job(request, source)
    # Who paused it: the operator, or the job's own source (no other source can see it).
    by = PausedBy.OPERATOR if source.operator else PausedBy.SOURCE
    note = _note(request.note)
    now = service.node.clock.now()
    paused = engine.pause(job, by, now, note).evolve(updated_at=now)
    return service.save(paused, service.entry("pause", request, source, job, paused, note))


def resume(service: Service, request: Resume, source: Source) -> dict[str, Any]:
    job = service.job(request, source)
    now = service.node.clock.now()
    decision = engine.resume(job, now, service.node.rules)
    resumed = decision.job.evolve(updated_at=now)
    note = _note(request.note)
    entry = service.entry("resume", request, source, job, resumed, note)
    reply = service.save(resumed, entry, service.node.notes_of(decision))
    service.node.announce(decision)  # a misfire skip, once the resume is written
    return reply


def run_now(service: Service, request: RunNow, source: Source) -> dict[str, Any]:
    job = service.job(request, source)

    def entry(before: Job, after: Job) -> AuditEntry:
        return service.entry("run_now", request, source, before, after)

    # A process that will not outlive its request leaves the run to a serving node (semantic 28).
    peer = handoff.serving_peer(service.node) if service.node.short_lived else None
    if peer is not None:
        queued = handoff.hand_off(service.node, job.id, entry)
        service.node.wake()  # from serve's fronts' process, this signals the serving node: it takes it now
        reply = {"job": service.row(queued), "persistence": service.store.inner.persistence.value}
        return reply | {"handed_to": peer}
    claimed = service.node.run_now(job.id, entry)
    return {"job": service.row(claimed), "persistence": service.store.inner.persistence.value}


def delete(service: Service, request: Delete, source: Source) -> dict[str, Any]:
    tomb = service.store.tombstone(request.job_id)
    # A delete whose durable write failed left a tombstone; retrying it by id finishes the delete.
    try:
        job = tomb if tomb is not None and source.sees(tomb.created_by) else service.job(request, source)
    except StoreCorrupt as error:
        if not source.operator or request.job_id is None:
            raise  # whose the row is cannot be told, so only the operator may remove it, by id
        return _delete_unreadable(service, request.job_id, error, request)
    gone, persistence = service.store.delete(job.id, service.entry("delete", request, source, job, None))
    service.node.wake()
    return {"job": service.row(gone or job), "persistence": persistence.value}


def _delete_unreadable(service: Service, job_id: int, error: StoreCorrupt, request: Delete) -> dict[str, Any]:
    """Removes a row that cannot be read. The reply's `job` is the row as `unreadable` lists it
    (`id`, `error`), since the row itself cannot be shown; so is its audit entry's `changes`."""
    entry = AuditEntry(
        at=service.node.clock.now(),
        source=OPERATOR,
        action="delete",
        job_id=job_id,
        name="",
        owner="",
        changes={"error": (str(error), None)},
        request_id=request.request_id,
    )
    if not service.store.delete_unreadable(job_id, entry):
        raise NotFound(f"no job with id {job_id}; `list` shows the jobs there are")
    service.node.wake()
    return {"job": {"id": job_id, "error": str(error)}, "persistence": service.store.inner.persistence.value}


def _note(note: str | None) -> str | None:
    """The note of a pause, resume, approval or rejection: the model lets a blank one through (its
    shape is text), and the service refuses it, as it always has."""
    if note is not None and not note.strip():
        raise Invalid("note", "'note' must not be empty")
    return note


def tick(service: Service, request: Tick, source: Source) -> dict[str, Any]:
    if not source.operator:
        # A pass waits for every run it starts, whoever owns it: a remote source must not hold a worker.
        raise Invalid(
            "action", "'tick' is for the local operator (`cronwright tick`); the node runs its passes"
        )
    report = drive.tick(service.node)
    return {"fired": len(report.fired), "fire_ids": report.fired, "skipped": report.skipped}
