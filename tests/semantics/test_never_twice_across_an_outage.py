"""Never twice across an outage (issue 39, semantics 21 and 29): an attempt that ran and ended while its
node could not write is recorded from what the node knows, never "given back" to run again.

In-process, on a manual clock: the node's writes fail while its reads still work (a cut that takes the
write of an outcome, as a proxy cut does in tests/multinode/test_partition.py, which is the black-box
form), and meanwhile a peer's write moves the job's row on (its overlap skip of the occurrence in
flight). When the writes come back the node's kept record loses its compare-and-swap: it must decide the
outcome again on the row as it is, not take the row for a claim it never started.
"""

from __future__ import annotations

import pytest

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.model import Job, Outcome
from cronwright.errors import StoreError
from cronwright.store.base import Saved, WriteSet
from cronwright.store.memory import MemoryStore


class WritesCut(MemoryStore):
    """A memory store whose writes fail while `cut`; reads go on (the connection that reads still holds)."""

    cut = False

    def save(self, writes: WriteSet) -> Saved[bool]:
        if self.cut:
            raise StoreError("the connection to the store was cut")
        return super().save(writes)

    def peer_writes(self, job: Job) -> None:
        """A write by another node, which still reaches the store."""
        assert super().save(WriteSet([job])).of(job)


@pytest.fixture
def harness() -> Harness:
    return make_harness(WritesCut(), ManualClock(at("2026-03-02T09:00:00+01:00")), node_id="node-x")


def test_an_attempt_that_ended_while_cut_off_is_recorded_once_and_its_fire_id_never_runs_again(
    harness: Harness,
) -> None:
    store = harness.raw_store
    assert isinstance(store, WritesCut)
    harness.create("tick", {"every": "1m"})
    harness.clock.set(at("2026-03-02T09:01:00+01:00"))
    assert harness.node.run_pass().fired == ["1-1"]
    for future in harness.node.runs.futures():
        future.result(5)  # 1-1 ran and ended; its outcome is not recorded yet

    store.cut = True
    harness.clock.set(at("2026-03-02T09:01:02+01:00"))
    harness.node.run_pass()  # the record of 1-1 fails: kept in memory
    assert harness.call("status")["node"]["persistence"] == "degraded"
    # A peer, which still reaches the store, sees the row say node-x runs 1-1 and skips the 09:02
    # occurrence for overlap: the row moves on under the node's kept record.
    row = store.get(1)
    assert row is not None and row.in_flight is not None and row.in_flight.fire_id == "1-1"
    store.peer_writes(
        row.evolve(skipped_overlap=1, next_run_at=at("2026-03-02T09:03:00+01:00"), version=row.version)
    )

    store.cut = False
    harness.clock.set(at("2026-03-02T09:02:10+01:00"))
    harness.node.run_pass()
    harness.node.wait_for_runs(5)
    harness.node.record_finished()
    harness.clock.set(at("2026-03-02T09:03:00+01:00"))
    fired = harness.node.run_pass().fired
    harness.node.wait_for_runs(5)
    harness.node.record_finished()

    assert fired == ["1-2"]  # the next occurrence, under the next fire_id
    calls = [(call.fire_id, call.attempt, call.scheduled_for) for call in harness.runner.calls]
    assert calls == [
        ("1-1", 1, at("2026-03-02T09:01:00+01:00")),
        ("1-2", 1, at("2026-03-02T09:03:00+01:00")),
    ], "a fire_id ran twice, or for two instants"
    runs = sorted((run.fire_id, run.attempt, run.outcome) for run in store.runs(1))
    assert runs == [("1-1", 1, Outcome.OK), ("1-2", 1, Outcome.OK)]
    shown = harness.job("tick")
    assert (shown["state"], shown["in_flight"]) == ("active", 0)
    # Each occurrence counted once: 09:01 and 09:03 ran, 09:02 was skipped for overlap (by the peer).
    assert shown["skipped"] == {"overlap": 1, "misfire": 0, "calendar": 0}
    assert shown["last_run"]["fire_id"] == "1-2"
    assert harness.call("status")["node"]["persistence"] == "memory_only"
