"""A memory store whose saves land and then raise, as a reply lost after COMMIT: semantic 29 in-process.

The real faults (a TCP proxy in front of PostgreSQL, a SQLite commit that raises after writing) are in
tests/faults/test_lost_commit_reply.py and tests/multinode/test_partition.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from cronwright.core.audit import AuditEntry
from cronwright.core.model import Job
from cronwright.errors import StoreError
from cronwright.store.base import Saved, WriteSet
from cronwright.store.memory import MemoryStore


class LostReplies(MemoryStore):
    """A memory store whose next `lose` saves (and inserts) land, then raise; reads back fail while
    `unreachable`."""

    lose = 0
    dark_after_loss = False  # out of reach from the moment a reply is lost
    unreachable = False
    finds_fail = False  # reads by name fail too while unreachable (after a lost insert)

    def save(self, writes: WriteSet) -> Saved[bool]:
        written = super().save(writes)
        self._lost()
        return written

    def insert(self, job: Job, audit: AuditEntry | None = None) -> Job:
        stored = super().insert(job, audit)
        self.finds_fail = bool(self.lose) and self.dark_after_loss  # a read back by name cannot tell
        self._lost()
        return stored

    def _lost(self) -> None:
        if self.lose:
            self.lose -= 1
            self.unreachable = self.dark_after_loss
            raise StoreError("the connection dropped after COMMIT was sent")

    def get_many(self, job_ids: Sequence[int]) -> dict[int, Job]:
        if self.unreachable:
            raise StoreError("the store is out of reach")
        return super().get_many(job_ids)

    def find(self, name: str) -> Job | None:
        if self.unreachable and self.finds_fail:
            raise StoreError("the store is out of reach")
        return super().find(name)
