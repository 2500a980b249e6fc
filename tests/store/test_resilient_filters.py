"""ResilientStore's batched reads, creator filter and live count see what its other reads see: the overlay
included."""

from __future__ import annotations

from datetime import datetime, timedelta

from cronwright.core.audit import AuditEntry
from cronwright.core.events import MemorySink
from cronwright.core.model import AtSchedule, Job, State
from cronwright.errors import StoreError
from cronwright.store import MemoryStore
from cronwright.store.base import Saved, WriteSet
from cronwright.store.resilient import ResilientStore, Write

T0 = datetime.fromisoformat("2026-03-02T09:00:00+00:00")


class Failing(MemoryStore):
    """A memory store whose writes fail while `broken` is set."""

    broken = False

    def save(self, writes: WriteSet) -> Saved[bool]:
        if self.broken:
            raise StoreError("the disk is full")
        return super().save(writes)

    def delete(self, job_id: int, audit: AuditEntry | None = None) -> Job | None:
        if self.broken:
            raise StoreError("the disk is full")
        return super().delete(job_id, audit)


def job(name: str, created_by: str) -> Job:
    return Job(
        id=0,
        name=name,
        target="reports",
        action="daily",
        args={},
        schedule=AtSchedule(T0),
        ends_at=T0 + timedelta(days=1),
        created_at=T0,
        updated_at=T0,
        created_by=created_by,
        next_run_at=T0,
    )


def test_a_job_kept_in_memory_counts_and_lists_as_the_reads_see_it() -> None:
    inner = Failing()
    store = ResilientStore(inner, MemorySink())
    ending = store.insert(job("ending", "agent"))
    store.insert(job("staying", "agent"))
    going = store.insert(job("going", "agent"))
    store.insert(job("theirs", "other"))
    assert store.count_live("agent") == 3

    inner.broken = True
    ended = ending.evolve(state=State.DONE, next_run_at=None)
    assert store.save(WriteSet([ended])).of(ended) is Write.KEPT
    store.delete(going.id)  # leaves a tombstone

    assert inner.count_live("agent") == 3  # the store itself has not heard of either
    assert store.count_live("agent") == 1
    assert [found.name for found in store.jobs(created_by="agent")] == ["ending", "staying"]
    assert store.jobs(State.DONE, created_by="agent") == [ended]
    assert store.count_live("other") == 1

    inner.broken = False
    store.flush()
    assert store.count_live("agent") == inner.count_live("agent") == 1


def test_get_many_sees_kept_writes_and_hides_failed_deletes() -> None:
    inner = Failing()
    store = ResilientStore(inner, MemorySink())
    kept, plain, going = (store.insert(job(name, "agent")) for name in ("kept", "plain", "going"))

    inner.broken = True
    changed = kept.evolve(state=State.DONE, next_run_at=None)
    assert store.save(WriteSet([changed])).of(changed) is Write.KEPT
    store.delete(going.id)  # leaves a tombstone

    ids = [kept.id, plain.id, going.id]
    assert inner.get_many(ids) == {kept.id: kept, plain.id: plain, going.id: going}
    assert store.get_many(ids) == {kept.id: changed, plain.id: plain}
    assert store.get_many(ids) == {i: found for i in ids if (found := store.get(i)) is not None}


def test_pages_of_jobs_follow_the_names_and_states_the_reads_see() -> None:
    inner = Failing()
    store = ResilientStore(inner, MemorySink())
    made = {name: store.insert(job(name, "agent")) for name in ("a", "b", "c", "d")}
    assert [found.name for found in store.jobs(after_name="a", limit=2)] == ["b", "c"]

    inner.broken = True
    renamed = made["a"].evolve(name="e")  # kept in memory: the stored row still says "a"
    ended = made["c"].evolve(state=State.DONE, next_run_at=None)
    written = store.save(WriteSet([renamed, ended]))
    assert written.of(renamed) is written.of(ended) is Write.KEPT
    store.delete(made["b"].id)  # leaves a tombstone

    assert [found.name for found in store.jobs(limit=2)] == ["c", "d"]
    assert [found.name for found in store.jobs(after_name="c", limit=5)] == ["d", "e"]
    assert [found.name for found in store.jobs(State.ACTIVE, limit=1)] == ["d"]
