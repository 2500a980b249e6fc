"""Transitions as the pure core detects them (semantic 38): the Alert of each, with the key that names it.

A key names the transition itself, never the node that saw it, so that two nodes (or a replay after a lost
reply) that detect one transition make the same notification ids, and the outbox keeps one. No I/O and no
clock: the instant comes with the call.
"""

from __future__ import annotations

from datetime import datetime

from cronwright.core.model import InFlight, Job
from cronwright.core.notifications import Alert, JobRef, Transition


def job_ref(job: Job) -> JobRef:
    return JobRef(job.id, job.name, job.target, job.action, job.created_by)


def _stamp(instant: datetime) -> str:
    return str(int(instant.timestamp()))


def occurrence_ended(
    before: Job, after: Job, failed: bool, now: datetime, flight: InFlight | None = None
) -> tuple[Alert, ...]:
    """What the occurrence `flight` that just ended changed: `before` is the job as its last attempt left
    it (that flight in flight, its last_run set), `after` the job once the occurrence is settled.
    `flight` defaults to the job's only one in flight.

    `failed` when the job was not already failing (a second failure in a row is no transition);
    `recovered` on the first ok after a failure; `breaker_paused` when the breaker paused it.
    """
    flight = flight or before.in_flight
    if flight is None:
        return ()
    last = before.last_run
    message = last.message if last is not None else ""
    alerts: list[Alert] = []

    def alert(transition: Transition, text: str) -> Alert:
        return Alert(
            transition,
            now,
            f"{transition.value}:{before.id}:{flight.fire_id}",
            text,
            job_ref(before),
            flight.fire_id,
            flight.scheduled_for,
        )

    outcome = last.outcome.value if last is not None else "error"
    if failed and before.consecutive_failures == 0:
        attempts = f" after {flight.attempt} attempts" if flight.attempt > 1 else ""
        alerts.append(alert(Transition.FAILED, f"{outcome}{attempts}: {message}".rstrip(": ")))
    if not failed and before.consecutive_failures > 0:
        count = before.consecutive_failures
        alerts.append(alert(Transition.RECOVERED, f"ok after {count} failed occurrence{'s' * (count > 1)}"))
    if after.paused_by is not None and after.paused_by.value == "breaker" and before.paused_by is None:
        alerts.append(
            alert(
                Transition.BREAKER_PAUSED,
                f"paused after {after.consecutive_failures} failed occurrences in a row (breaker_threshold "
                f"{after.breaker_threshold}); resume it once fixed",
            )
        )
    return tuple(alerts)


def missed(job: Job, due: datetime, count: int, now: datetime) -> Alert:
    """`count` occurrences from `due` on were skipped by the misfire policy."""
    plural = "s" if count > 1 else ""
    return Alert(
        Transition.MISSED,
        now,
        f"missed:{job.id}:{_stamp(due)}",
        # Instants are the body's own fields (rendered in the node zone), not the message's.
        f"{count} occurrence{plural} did not start within misfire_grace and {'were' if plural else 'was'} "
        f"skipped by the misfire policy ({job.misfire.value}); the first was due at scheduled_for",
        job_ref(job),
        scheduled_for=due,
    )


def late(job: Job, due: datetime, now: datetime) -> Alert:
    """The occurrence due at `due` waited for a free slot past its grace (every slot was busy)."""
    return Alert(
        Transition.LATE,
        now,
        f"late:{job.id}:{_stamp(due)}",
        "due and not started within misfire_grace: every slot (max_concurrency) was busy",
        job_ref(job),
        scheduled_for=due,
    )


def expired(job: Job, now: datetime) -> Alert:
    return Alert(
        Transition.EXPIRED,
        now,
        f"expired:{job.id}:{_stamp(job.ends_at)}",
        "its lifetime ended (ends_at); update it with a lifetime to renew it",
        job_ref(job),
    )


def node_down(node: str, now: datetime) -> Alert:
    """A peer stopped renewing its lease while it held runs (detected by the node recovering them)."""
    return Alert(
        Transition.NODE_DOWN,
        now,
        f"node_down:{node}",
        f"node {node} stopped renewing its lease; its runs in flight were recorded interrupted",
    )


def persistence(degraded: bool, node: str, since: datetime, now: datetime) -> Alert:
    """The store failed a save on `node` (jobs wait in memory), or took the writes again."""
    transition = Transition.PERSISTENCE_DEGRADED if degraded else Transition.PERSISTENCE_RECOVERED
    text = (
        f"a save failed on node {node}: jobs wait in memory for the store"
        if degraded
        else f"the store took node {node}'s writes again"
    )
    return Alert(transition, now, f"{transition.value}:{node}:{_stamp(since)}", text)
