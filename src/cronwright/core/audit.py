"""The audit log's entries (DESIGN semantic 36): who changed which schedule, when, and from what to what.

Pure: an entry is a value built from the rows before and after a mutation; the store writes it in the
same transaction as the mutation, so an entry exists exactly when its mutation does. This module also
says how an entry is kept (plain JSON for the stores) and shown (a reply's row).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.timing.iso import render

# What every mutation of a row changes anyway, or what the entry says itself: left out of `changes`.
_UNCHANGING = ("id", "updated_at")


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One mutation of one schedule.

    `changes` maps each field that changed to its value before and after, as the job row shows it
    (a create has null befores, a delete null afters). `owner` is the job's `created_by`, so that a
    source can read what was done to its own schedules (an operator's approval, say). `key` is unique
    per entry: a write replayed after its outcome was unknown (semantic 29) never records it twice.
    """

    at: datetime
    source: str
    action: str
    job_id: int
    name: str
    owner: str
    changes: Mapping[str, tuple[Any, Any]]
    request_id: str | None = None
    origin: Mapping[str, Any] = field(default_factory=dict)
    note: str | None = None
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    id: int | None = None  # the store's sequence number, None until written

    def with_change(self, name: str, before: Any, after: Any) -> AuditEntry:
        """The entry with one more field in `changes` (what a row diff does not show, such as the
        occurrences a backfill queued)."""
        return replace(self, changes={**self.changes, name: (before, after)})

    def of_job(self, job_id: int) -> AuditEntry:
        """The entry for the job once the store gave it its id (an insert's)."""
        return replace(self, job_id=job_id)


def changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> dict[str, tuple[Any, Any]]:
    """The fields that differ between two job rows, each as (before, after); a missing row is all nulls."""
    if before is None and after is not None:
        # A new job (a create's entry): every field it has, against nothing. Nothing equals None but
        # None, so this is the loop below without its comparisons.
        return {
            name: (None, now) for name, now in after.items() if now is not None and name not in _UNCHANGING
        }
    old, new = before or {}, after or {}
    found: dict[str, tuple[Any, Any]] = {}
    for name in [*old, *(key for key in new if key not in old)]:
        if name in _UNCHANGING:
            continue
        was, now = old.get(name), new.get(name)
        if was != now:
            found[name] = (was, now)
    return found


def entry_data(entry: AuditEntry) -> dict[str, Any]:
    """An entry as the stores keep it (JSON), less the columns they index it by."""
    return {
        "at": entry.at.astimezone(UTC).isoformat(),
        "request_id": entry.request_id,
        "origin": dict(entry.origin),
        "changes": {name: list(pair) for name, pair in entry.changes.items()},
        "note": entry.note,
    }


def read_entry(
    data: Mapping[str, Any],
    *,
    seq: int,
    key: str,
    source: str,
    action: str,
    job_id: int,
    name: str,
    owner: str,
) -> AuditEntry:
    return AuditEntry(
        at=datetime.fromisoformat(data["at"]).astimezone(UTC),
        source=source,
        action=action,
        job_id=job_id,
        name=name,
        owner=owner,
        changes={field_name: (pair[0], pair[1]) for field_name, pair in data["changes"].items()},
        request_id=data.get("request_id"),
        origin=data.get("origin") or {},
        note=data.get("note"),
        key=key,
        id=seq,
    )


def entry_row(entry: AuditEntry, zone: ZoneInfo) -> dict[str, Any]:
    """An entry as the protocol shows it."""
    return {
        "id": entry.id,
        "at": render(entry.at, zone),
        "source": entry.source,
        "request_id": entry.request_id,
        "origin": dict(entry.origin),
        "action": entry.action,
        "job_id": entry.job_id,
        "name": entry.name,
        "changes": {name: list(pair) for name, pair in entry.changes.items()},
        "note": entry.note,
    }


def visible(entry: AuditEntry, reader: str | None) -> bool:
    """Whether a reader sees an entry: the operator (None) all; a source those it made, and those about
    its own schedules."""
    return reader is None or reader in (entry.source, entry.owner)
