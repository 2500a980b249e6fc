"""The reads every front shares: get, list, history, audit, status, preview, notifications and targets.

Each is a function of the service and one validated request, as the protocol dispatches it; a source
reads its own schedules and entries only (semantics 36 and 40), and a request costs what it returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cronwright.core import engine
from cronwright.core.audit import entry_row
from cronwright.core.model import (
    State,
)
from cronwright.core.sources import Source
from cronwright.notify.rows import delivery_row
from cronwright.service.job_rows import firing_row, run_row
from cronwright.service.operations import NEXT_FIRINGS, Service
from cronwright.store.base import Troubled
from cronwright.timing.iso import parse_instant, render
from cronwright.timing.preview import preview as preview_firings
from cronwright.timing.zones import zone

if TYPE_CHECKING:  # the request models, for their types: see operations.py
    from cronwright.declare.requests import (
        Audit,
        Get,
        History,
        ListJobs,
        Notifications,
        Preview,
        Status,
        Targets,
    )


def get(service: Service, request: Get, source: Source) -> dict[str, Any]:
    job = service.job(request, source)
    return {
        "job": service.row(job),
        "runs": [run_row(r, service.zone) for r in service.store.runs(job.id, 10)],
        "next_firings": [
            firing_row(planned, service.zone)
            for planned in engine.ahead(job, NEXT_FIRINGS, service.node.rules)
        ],
    }


def list_jobs(service: Service, request: ListJobs, source: Source) -> dict[str, Any]:
    state = State(request.state) if request.state else None
    # Paged on request: `limit` rows after the name `after_name`, and where more follow, the name to
    # ask after next. Without a limit, every row (the contract's reply).
    limit = request.limit
    made_by = request.source
    if made_by is not None and not source.sees(made_by):
        return {"jobs": []}  # another source's: none this one may see
    jobs = service.store.jobs(
        state,
        request.target,
        _own(source) or made_by,
        after_name=request.after_name,
        limit=None if limit is None else limit + 1,
    )
    reply: dict[str, Any] = {"jobs": [service.row(job) for job in jobs[:limit]]}
    if limit is not None and len(jobs) > limit:
        reply["next_after_name"] = jobs[limit - 1].name
    unreadable = _unreadable(service.store.unreadable, source)
    if unreadable:
        reply["unreadable"] = unreadable
    return reply


def history(service: Service, request: History, source: Source) -> dict[str, Any]:
    """A page of runs, newest first: `limit` of them older than the run `before`, and where more
    follow, `next_before` (the id to ask before next)."""
    limit = request.limit or 20
    before = request.before
    wanted = limit + 1  # one more than the page shows whether another page follows
    if request.job_id is not None or request.name is not None:
        runs = service.store.runs(service.job(request, source).id, wanted, before)
    elif source.operator:
        runs = service.store.runs(None, wanted, before)
    else:
        # A source's own jobs only, filtered in the store: their runs are read, not the jobs.
        runs = service.store.runs(None, wanted, before, created_by=source.name)
    reply: dict[str, Any] = {"runs": [run_row(run, service.zone) for run in runs[:limit]]}
    last = runs[limit - 1].id if len(runs) > limit else None
    if last is not None:  # (a run not yet written, kept in memory while the store fails, has none)
        reply["next_before"] = last
    return reply


def audit(service: Service, request: Audit, source: Source) -> dict[str, Any]:
    """A page of audit entries, newest first. A source reads the entries it made and those about its
    own schedules; the operator reads all. A `name` follows the live job of that name through its
    renames; a name no live job has is matched as the entries wrote it (a deleted job's)."""
    limit = request.limit or 20
    job_id, name = request.job_id, request.name
    if name is not None and job_id is None:
        live = service.store.find(name)
        if live is not None and source.sees(live.created_by):
            job_id, name = live.id, None
    entries = service.store.audit(
        reader=_own(source),
        source=request.source,
        job_id=job_id,
        name=name,
        before=request.before,
        limit=limit + 1,
    )
    reply: dict[str, Any] = {"entries": [entry_row(entry, service.zone) for entry in entries[:limit]]}
    if len(entries) > limit:
        reply["next_before"] = entries[limit - 1].id
    return reply


def status(service: Service, request: Status, source: Source) -> dict[str, Any]:
    now = service.node.clock.now()
    counts = service.store.counts(_own(source))
    return {
        "node": {
            "id": service.node.id,
            "now": render(now, service.zone),
            "zone": service.zone.key,
            "store": service.store.description,
            "persistence": service.store.persistence.value,
            # Whether the store can be reached, and what troubles it (PostgreSQL), or "ok".
            "store_state": inner.state if isinstance(inner := service.store.inner, Troubled) else "ok",
            "peers": [
                {"node": beat.node, "last_beat": render(beat.beat_at, service.zone)}
                for beat in service.store.beats()
            ],
            "unreadable": _unreadable(service.store.unreadable, source),
            **({"last_reload": service.last_reload} if service.last_reload is not None else {}),
        },
        "counts": counts,
        # Jobs with an occurrence in flight (its retries included), whichever process runs them.
        "running": counts[State.RUNNING.value],
    }


def preview(service: Service, request: Preview, source: Source) -> dict[str, Any]:
    tz, after_text = request.tz, request.after
    # An `after` without an offset is wall time in the zone the expression is read in (and the
    # firings are shown in): one reading, whichever front asks.
    reading = zone(tz, "tz") if tz else service.zone
    after = parse_instant(after_text, reading, "after") if after_text else service.node.clock.now()
    count = request.count or 5
    names = request.exclude
    if not names:
        return preview_firings(request.expression, tz, after, count, service.zone)
    excluded = service._calendar_names(names, "exclude")
    calendars = service.node.rules.calendars
    return preview_firings(
        request.expression,
        tz,
        after,
        count,
        service.zone,
        lambda instant, read_in: calendars.exclusion(excluded, instant, read_in),
    )


def notifications(service: Service, request: Notifications, source: Source) -> dict[str, Any]:
    """A page of the outbox, newest first: `limit` notifications older than `before`, and where more
    follow, `next_before`. A source sees only those about its own schedules."""
    limit = request.limit or 20
    rows = service.store.page(limit + 1, request.before, _own(source))
    reply: dict[str, Any] = {"deliveries": [delivery_row(row, service.zone) for row in rows[:limit]]}
    if len(rows) > limit:
        reply["next_before"] = rows[limit - 1].id
    return reply


def targets(service: Service, request: Targets, source: Source) -> dict[str, Any]:
    described = service.allowlist.describe()
    if not source.operator:
        described = [
            {**t, "actions": [a for a in t["actions"] if source.allows(t["target"], a["action"])]}
            for t in described
        ]
        described = [t for t in described if t["actions"]]
    return {"targets": described}


def _own(source: Source) -> str | None:
    """The creator a source's reads filter on: its own name, or none for the operator, who sees all."""
    return None if source.operator else source.name


def _unreadable(rows: Mapping[int, str], source: Source) -> list[dict[str, Any]]:
    """Rows that reads leave out because they cannot be read. Only the operator sees them: whose a row
    is cannot be told from a row that cannot be read."""
    if not source.operator:
        return []
    return [{"id": job_id, "error": why} for job_id, why in sorted(rows.items())]
