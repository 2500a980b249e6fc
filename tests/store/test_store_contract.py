"""The one store test suite: every guarantee in `cronwright.store.base`, run against every backend,
through the very object the node and the service write with (a `Store`: ResilientStore over the backend).

A backend joins by adding a case to `backend` below. PostgreSQL runs on the server that
$CRONWRIGHT_TEST_POSTGRES names, in a scratch schema per test (and skips, saying so, without it).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import pg
from cronwright.core.audit import AuditEntry
from cronwright.core.events import MemorySink
from cronwright.core.model import (
    AtSchedule,
    CronSchedule,
    EverySchedule,
    InFlight,
    Job,
    LastRun,
    Misfire,
    Outcome,
    Overlap,
    PausedBy,
    Persistence,
    Run,
    Schedule,
    State,
)
from cronwright.errors import DoubleRun, NameTaken, NotFound, StoreError
from cronwright.store import Backend, MemoryStore, ResilientStore, SqliteStore, Store, Write
from cronwright.store.base import Saved, WriteSet
from cronwright.timing.cron_set import CronSet

DURABLE, LOST = Write.DURABLE, Write.LOST
BERLIN = ZoneInfo("Europe/Berlin")
T0 = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
NIGHTLY = CronSchedule(CronSet.parse("0 3 * * *"), "Europe/Berlin")


@dataclass
class Case:
    """A backend under test. `open` gives a new handle on it, wrapped as a node wraps it; the handles of a
    `shared` backend see one storage."""

    name: str
    persistence: Persistence
    shared: bool
    opener: Callable[[int], Backend]
    opened: list[Store] = field(default_factory=list)

    def open(self, run_history: int = 100) -> Store:
        store = ResilientStore(self.opener(run_history), MemorySink())
        self.opened.append(store)
        return store

    def open_lossy(self) -> tuple[Store, LostReplies]:
        """A handle whose backend loses the replies to its writes on cue (see LostReplies)."""
        lossy = LostReplies(self.opener(100))
        # The ignore below is kept: LostReplies wraps a backend by delegation, declaring no Backend.
        store = ResilientStore(lossy, MemorySink())  # type: ignore[arg-type]
        self.opened.append(store)
        return store, lossy


class LostReplies:
    """A backend whose next `lose` writes land, then raise, as when the reply to COMMIT is lost; from then
    on, reads back fail while `dark` is set, so that they cannot tell either."""

    def __init__(self, inner: Backend) -> None:
        self._inner = inner
        self.lose = 0
        self.fail = 0  # the next `fail` saves fail before they land
        self.dark_after = False
        self.dark = False

    def _lost(self) -> None:
        if self.lose:
            self.lose -= 1
            self.dark = self.dark_after
            raise StoreError("the connection dropped after COMMIT was sent")

    def insert(self, job: Job, audit: AuditEntry | None = None) -> Job:
        stored = self._inner.insert(job, audit)
        self._lost()
        return stored

    def save(self, writes: WriteSet) -> Saved[bool]:
        if self.fail:
            self.fail -= 1
            raise StoreError("the disk is full")
        written = self._inner.save(writes)
        self._lost()
        return written

    def find(self, name: str) -> Job | None:
        if self.dark:
            raise StoreError("the store is out of reach")
        return self._inner.find(name)

    def get_many(self, job_ids: Sequence[int]) -> dict[int, Job]:
        if self.dark:
            raise StoreError("the store is out of reach")
        return self._inner.get_many(job_ids)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Case]:
    with contextlib.ExitStack() as cleanup:
        if request.param == "memory":
            made = Case("memory", Persistence.MEMORY_ONLY, False, MemoryStore)
        elif request.param == "sqlite":
            path = tmp_path / "contract.db"
            made = Case("sqlite", Persistence.PERSISTED, True, lambda history: SqliteStore(path, history))
        else:
            from cronwright.store.postgres import LeaseClock, PostgresStore

            url = cleanup.enter_context(pg.scratch_url())  # dropped after the stores below are closed
            # These tests move time by the `now` they pass, as a manual clock does, so leases are judged
            # on that clock here. Nodes judge them on the database's (test_postgres.py proves that mode).
            made = Case(
                "postgres",
                Persistence.PERSISTED,
                True,
                lambda history: PostgresStore(url, history, lease_clock=LeaseClock.CALLER),
            )
        yield made
        for store in made.opened:
            store.close()


@pytest.fixture
def store(backend: Case) -> Store:
    return backend.open()


def job(name: str = "nightly", **changes: object) -> Job:
    """A fresh (not yet stored) cron job, due at T0 + 1h, with `changes` applied."""
    made = Job(
        id=0,
        name=name,
        target="backup",
        action="nightly",
        args={"dest": "/mnt/backups"},
        schedule=NIGHTLY,
        ends_at=T0 + timedelta(days=90),
        created_at=T0,
        updated_at=T0,
        next_run_at=T0 + timedelta(hours=1),
    )
    return made.evolve(**changes)


def run(job_id: int, fire_id: str, attempt: int = 1, finished: datetime = T0, name: str = "nightly") -> Run:
    return Run(
        job_id=job_id,
        job_name=name,
        fire_id=fire_id,
        attempt=attempt,
        scheduled_for=finished - timedelta(seconds=5),
        started_at=finished - timedelta(seconds=4),
        finished_at=finished,
        outcome=Outcome.OK,
        message="done",
        took_ms=4000,
        node="node-a",
        output="42 files",
    )


def running(stored: Job, node: str | None, retry_at: datetime | None = None) -> Job:
    """`stored` claimed by `node` (or, with node None, waiting for a retry at `retry_at`)."""
    flight = InFlight("fire-1", T0, 1, T0, node, retry_at=retry_at)
    return stored.evolve(state=State.RUNNING, in_flight=flight)


def outcomes(store: Store, writes: WriteSet, *, keep: bool = True) -> list[Write]:
    """What became of each write of `writes` (its jobs, then its claims), asked of each job in turn."""
    saved = store.save(writes, keep=keep)
    return [saved.of(job) for job in writes.writes]


def race(count: int, action: Callable[[int], object]) -> list[object]:
    """Runs `action(i)` on `count` threads released at once; returns each result or the exception raised."""
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def worker(index: int) -> None:
        barrier.wait()
        try:
            results[index] = action(index)
        except Exception as err:
            results[index] = err

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# -- insert, get, find --------------------------------------------------------------------------


def test_persistence_says_whether_the_backend_is_durable(backend: Case, store: Store) -> None:
    assert store.persistence is backend.persistence
    assert store.description


def test_insert_assigns_fresh_ids_and_version_one(store: Store) -> None:
    first = store.insert(job("a", version=7))
    second = store.insert(job("b", id=99))

    assert first.version == 1 and second.version == 1
    assert first.id != second.id and first.id > 0 and second.id > 0
    assert store.get(first.id) == first
    assert store.get(second.id) == second


def test_get_and_find_answer_none_for_what_is_not_there(store: Store) -> None:
    assert store.get(12345) is None
    assert store.find("nobody") is None


def test_get_many_reads_the_live_jobs_among_the_ids_in_one_go(store: Store) -> None:
    first, second, gone = (store.insert(job(name)) for name in ("a", "b", "c"))
    store.delete(gone.id)

    assert store.get_many([second.id, gone.id, 12345, first.id, second.id]) == {
        first.id: first,
        second.id: second,
    }
    assert store.get_many([]) == {}


def test_get_many_reads_more_ids_than_one_statement_takes(store: Store) -> None:
    stored = [store.insert(job(f"job-{index}")) for index in range(1200)]

    found = store.get_many([made.id for made in stored])

    assert found == {made.id: made for made in stored}


def test_find_reads_a_live_job_by_name(store: Store) -> None:
    stored = store.insert(job("reports"))

    assert store.find("reports") == stored


def test_insert_of_a_live_name_raises_name_taken_and_writes_nothing(store: Store) -> None:
    first = store.insert(job("nightly"))

    with pytest.raises(NameTaken, match="nightly"):
        store.insert(job("nightly", target="other"))

    assert store.jobs() == [first]


def test_racing_inserts_of_one_name_store_exactly_one(store: Store) -> None:
    results = race(8, lambda index: store.insert(job("contested", args={"by": index})))

    winners = [result for result in results if isinstance(result, Job)]
    assert len(winners) == 1
    assert all(isinstance(result, NameTaken) for result in results if result is not winners[0])
    assert store.jobs() == winners


def test_name_taken_holds_across_two_handles_of_one_store(backend: Case) -> None:
    if not backend.shared:
        pytest.skip(f"{backend.name} handles do not share a storage")
    one, two = backend.open(), backend.open()
    one.insert(job("shared"))

    with pytest.raises(NameTaken):
        two.insert(job("shared"))
    results = race(8, lambda index: (one if index % 2 else two).insert(job("raced")))

    assert sum(isinstance(result, Job) for result in results) == 1
    assert [found.name for found in two.jobs()] == ["raced", "shared"]


# -- exclusive sections ----------------------------------------------------------------------------


def test_an_exclusive_section_holds_off_another_handles_until_it_ends(backend: Case) -> None:
    # Memory handles share nothing, so there the two sections run on one handle, from two threads.
    one = backend.open()
    two = backend.open() if backend.shared else one
    entered = threading.Event()

    def rival() -> None:
        with two.exclusive():
            entered.set()
            two.insert(job("second"))

    with one.exclusive():
        thread = threading.Thread(target=rival)
        thread.start()
        # The store's own calls work inside the section, from the thread that holds it.
        one.insert(job("first"))
        assert [found.name for found in one.jobs()] == ["first"]
        assert not entered.wait(0.3), "a second exclusive section ran beside the first"
    assert entered.wait(10)
    thread.join(10)

    assert [found.name for found in two.jobs()] == ["first", "second"]


def test_a_call_that_fails_inside_an_exclusive_section_leaves_nothing_of_itself(store: Store) -> None:
    stored = store.insert(job("nightly"))
    store.save(WriteSet([stored], runs=[run(stored.id, "fire-1")]))
    current = store.get(stored.id)
    assert current is not None

    with store.exclusive():
        kept = store.insert(job("kept"))
        with pytest.raises(StoreError):
            # The job write would succeed; the run was recorded already, differently, so the whole
            # save is refused.
            store.inner.save(
                WriteSet(
                    [current.evolve(occurrences=9)],
                    runs=[run(stored.id, "fire-1", finished=T0 + timedelta(seconds=1))],
                )
            )

    assert store.get(kept.id) == kept  # the section's other work stands
    after = store.get(stored.id)
    assert after is not None and (after.occurrences, after.version) == (0, current.version)


def test_an_exclusive_section_is_free_again_after_an_error_inside_it(backend: Case) -> None:
    store = backend.open()
    with pytest.raises(NameTaken), store.exclusive():
        store.insert(job("taken"))
        store.insert(job("taken"))

    with store.exclusive():
        store.insert(job("after"))
    reader = backend.open() if backend.shared else store
    assert "after" in [found.name for found in reader.jobs()]


# -- delete --------------------------------------------------------------------------------------


def test_delete_returns_the_row_that_went_and_hides_it(store: Store) -> None:
    stored = store.insert(job("doomed"))

    assert store.delete(stored.id) == (stored, store.persistence)
    assert store.get(stored.id) is None
    assert store.find("doomed") is None
    assert store.jobs() == []
    assert store.delete(stored.id)[0] is None
    assert store.delete(12345)[0] is None


def test_delete_frees_the_name_but_never_the_id(store: Store) -> None:
    first = store.insert(job("reused"))
    store.delete(first.id)

    second = store.insert(job("reused"))

    assert second.id > first.id
    assert store.find("reused") == second


def test_delete_keeps_the_history_of_the_job(store: Store) -> None:
    stored = store.insert(job())
    store.save(WriteSet(runs=[run(stored.id, "fire-1")]))

    store.delete(stored.id)

    assert [kept.fire_id for kept in store.runs(stored.id)] == ["fire-1"]


# -- save: compare-and-swap ----------------------------------------------------------------------


def test_save_writes_the_read_version_and_stores_it_plus_one(store: Store) -> None:
    stored = store.insert(job())
    changed = stored.evolve(occurrences=1, next_run_at=T0 + timedelta(days=1))

    assert outcomes(store, WriteSet([changed])) == [DURABLE]
    assert store.get(stored.id) == changed.evolve(version=2)


def test_save_of_a_stale_version_writes_nothing(store: Store) -> None:
    stored = store.insert(job())
    store.save(WriteSet([stored.evolve(occurrences=1)]))

    assert outcomes(store, WriteSet([stored.evolve(occurrences=99, name="renamed")])) == [LOST]
    current = store.get(stored.id)
    assert current is not None
    assert (current.occurrences, current.name, current.version) == (1, "nightly", 2)
    assert store.find("renamed") is None


def test_racing_saves_of_one_read_let_exactly_one_win(store: Store) -> None:
    stored = store.insert(job())

    results = race(8, lambda index: outcomes(store, WriteSet([stored.evolve(occurrences=index)])))

    assert sorted(results, key=str) == [[DURABLE]] + [[LOST]] * 7
    current = store.get(stored.id)
    assert current is not None and current.version == 2


def test_save_of_a_deleted_or_unknown_job_writes_nothing(store: Store) -> None:
    stored = store.insert(job(dedupe_key="nightly-backup"))
    store.delete(stored.id)

    assert outcomes(store, WriteSet([stored.evolve(occurrences=1), stored.evolve(id=12345)])) == [LOST, LOST]
    assert store.get(stored.id) is None
    assert store.get(12345) is None
    assert store.with_dedupe_key("nightly-backup") == [(stored, True)]


def test_save_answers_per_job(store: Store) -> None:
    fresh = store.insert(job("fresh"))
    stale = store.insert(job("stale"))
    store.save(WriteSet([stale]))

    assert outcomes(store, WriteSet([fresh.evolve(occurrences=3), stale.evolve(occurrences=3)])) == [
        DURABLE,
        LOST,
    ]


def test_a_job_twice_in_one_save_is_written_once_by_the_version_read(store: Store) -> None:
    # In order, as one save after another: the second write of the version read meets the first's.
    stored = store.insert(job())
    other = store.insert(job("other"))

    written = outcomes(
        store,
        WriteSet([stored.evolve(occurrences=1), other.evolve(occurrences=5), stored.evolve(occurrences=2)]),
    )

    assert written == [DURABLE, DURABLE, LOST]
    current = store.get(stored.id)
    assert current is not None and (current.occurrences, current.version) == (1, 2)


def test_save_appends_runs_even_when_the_job_write_fails(store: Store) -> None:
    stored = store.insert(job())
    store.delete(stored.id)

    written = outcomes(store, WriteSet([stored.evolve(state=State.DONE)], runs=[run(stored.id, "fire-late")]))

    assert written == [LOST]
    assert [kept.fire_id for kept in store.runs(stored.id)] == ["fire-late"]


# -- runs ----------------------------------------------------------------------------------------


def test_runs_come_back_whole_and_newest_first(store: Store) -> None:
    one = store.insert(job("one"))
    two = store.insert(job("two"))
    recorded = [
        run(one.id, "f1", finished=T0),
        run(two.id, "f2", finished=T0 + timedelta(minutes=1), name="two"),
        run(one.id, "f3", finished=T0 + timedelta(minutes=2)),
    ]
    store.save(WriteSet(runs=recorded[:2]))
    store.save(WriteSet(runs=recorded[2:]))

    assert without_ids(store.runs()) == recorded[::-1]
    assert without_ids(store.runs(one.id)) == [recorded[2], recorded[0]]
    assert without_ids(store.runs(limit=1)) == [recorded[2]]
    assert store.runs(12345) == []


def without_ids(runs: list[Run]) -> list[Run]:
    """Runs as they were given to `save`: the store adds the id."""
    return [replace(kept, id=None) for kept in runs]


def test_runs_have_ids_and_page_on_before_in_the_historys_order(store: Store) -> None:
    one = store.insert(job("one"))
    two = store.insert(job("two"))
    # Finished out of the order they are written in, and two at the same instant (the id breaks the tie).
    store.save(WriteSet(runs=[run(one.id, "a", finished=T0 + timedelta(minutes=2))]))
    store.save(WriteSet(runs=[run(two.id, "b", finished=T0, name="two"), run(one.id, "c", finished=T0)]))
    store.save(WriteSet(runs=[run(one.id, "d", finished=T0 + timedelta(minutes=1))]))

    every = store.runs()
    assert [kept.fire_id for kept in every] == ["a", "d", "c", "b"]
    ids = [kept.id for kept in every if isinstance(kept.id, int)]
    assert len(ids) == len(every) and len(set(ids)) == 4
    assert ids[2] > ids[3]  # c was written after b
    assert [kept.fire_id for kept in store.runs(limit=2, before=ids[0])] == ["d", "c"]
    assert [kept.fire_id for kept in store.runs(before=ids[2])] == ["b"]
    assert [kept.fire_id for kept in store.runs(one.id, before=ids[0])] == ["d", "c"]
    assert store.runs(two.id, before=ids[3]) == []
    with pytest.raises(NotFound, match="no run with id 999999"):
        store.runs(before=999_999)


def test_retries_of_one_occurrence_are_separate_runs(store: Store) -> None:
    stored = store.insert(job())
    store.save(
        WriteSet(runs=[run(stored.id, "f1", 1, T0), run(stored.id, "f1", 2, T0 + timedelta(seconds=30))])
    )

    assert [(kept.fire_id, kept.attempt) for kept in store.runs(stored.id)] == [("f1", 2), ("f1", 1)]


def test_history_is_pruned_to_the_newest_runs_of_each_job(backend: Case) -> None:
    store = backend.open(run_history=3)
    busy = store.insert(job("busy"))
    quiet = store.insert(job("quiet"))
    store.save(WriteSet(runs=[run(quiet.id, "q1", name="quiet")]))

    for minute in range(5):
        store.save(WriteSet(runs=[run(busy.id, f"b{minute}", finished=T0 + timedelta(minutes=minute))]))

    assert [kept.fire_id for kept in store.runs(busy.id)] == ["b4", "b3", "b2"]
    assert [kept.fire_id for kept in store.runs(quiet.id)] == ["q1"]


def test_one_save_prunes_the_history_of_each_of_its_jobs(backend: Case) -> None:
    store = backend.open(run_history=2)
    busy = store.insert(job("busy"))
    other = store.insert(job("other"))
    quiet = store.insert(job("quiet"))
    store.save(WriteSet(runs=[run(quiet.id, "q1", name="quiet")]))

    store.save(
        WriteSet(
            runs=[run(busy.id, f"b{n}", finished=T0 + timedelta(minutes=n)) for n in range(4)]
            + [run(other.id, f"o{n}", finished=T0 + timedelta(minutes=n), name="other") for n in range(3)]
        )
    )

    assert [kept.fire_id for kept in store.runs(busy.id)] == ["b3", "b2"]
    assert [kept.fire_id for kept in store.runs(other.id)] == ["o2", "o1"]
    assert [kept.fire_id for kept in store.runs(quiet.id)] == ["q1"]


def test_the_same_run_recorded_again_is_written_once_and_the_save_goes_on(store: Store) -> None:
    # A save replayed after its outcome was unknown (its COMMIT landed, its reply was lost) must not fail.
    stored = store.insert(job())
    store.save(WriteSet(runs=[run(stored.id, "f1")]))

    assert outcomes(
        store, WriteSet([stored.evolve(occurrences=1)], runs=[run(stored.id, "f1"), run(stored.id, "f2")])
    ) == [DURABLE]
    assert [kept.fire_id for kept in store.runs(stored.id)] == ["f2", "f1"]


def test_the_same_run_twice_in_one_save_is_written_once(store: Store) -> None:
    stored = store.insert(job())

    store.save(WriteSet(runs=[run(stored.id, "f1"), run(stored.id, "f1")]))

    assert [kept.fire_id for kept in store.runs(stored.id)] == ["f1"]


def test_a_different_record_of_a_recorded_attempt_is_a_double_run_naming_it(store: Store) -> None:
    stored = store.insert(job())
    store.save(WriteSet(runs=[run(stored.id, "f1")]))

    with pytest.raises(DoubleRun) as refused:  # the backend refuses the whole save
        store.inner.save(WriteSet(runs=[run(stored.id, "f1", finished=T0 + timedelta(seconds=1))]))

    assert refused.value.keys == [(stored.id, "f1", 1)]
    assert [kept.finished_at for kept in store.runs(stored.id)] == [T0]


def test_two_records_of_one_attempt_in_a_save_leave_the_second_out_and_the_rest_written(store: Store) -> None:
    stored = store.insert(job())
    twice = [run(stored.id, "f1"), run(stored.id, "f1", finished=T0 + timedelta(seconds=1))]

    with pytest.raises(DoubleRun):  # the backend refuses it whole...
        store.inner.save(WriteSet([stored.evolve(occurrences=1)], runs=twice))
    assert store.get(stored.id) == stored
    assert store.runs(stored.id) == []

    # ...so the node's store writes the rest, without the doubled attempt's records.
    assert outcomes(store, WriteSet([stored.evolve(occurrences=1)], runs=[*twice, run(stored.id, "f2")])) == [
        DURABLE
    ]
    assert [kept.fire_id for kept in store.runs(stored.id)] == ["f2"]


def test_a_record_of_an_attempt_recorded_already_is_left_out_and_the_rest_written(store: Store) -> None:
    stored = store.insert(job())
    store.save(WriteSet(runs=[run(stored.id, "f1")]))

    again = [run(stored.id, "f2"), run(stored.id, "f1", finished=T0 + timedelta(seconds=1))]
    assert outcomes(store, WriteSet([stored.evolve(occurrences=1)], runs=again)) == [DURABLE]

    assert [(kept.fire_id, kept.finished_at) for kept in store.runs(stored.id)] == [("f2", T0), ("f1", T0)]
    assert store.persistence is not Persistence.DEGRADED


# -- writes whose outcome is unknown (semantic 29) -------------------------------------------------


def test_a_save_whose_reply_was_lost_is_read_back_and_answered_as_written(backend: Case) -> None:
    store, lossy = backend.open_lossy()
    finished, claimed = store.insert(job("finished")), store.insert(job("claimed"))
    lossy.lose = 1

    written = outcomes(
        store, WriteSet([finished.evolve(occurrences=1)], runs=[run(finished.id, "f1")], claims=[claimed])
    )

    assert written == [DURABLE, DURABLE]
    assert store.persistence is backend.persistence  # nothing waits in memory
    assert [kept.fire_id for kept in store.runs(finished.id)] == ["f1"]
    assert outcomes(store, WriteSet(runs=[run(finished.id, "f2")])) == []  # and nothing is sent again
    assert [kept.fire_id for kept in store.runs(finished.id)] == ["f2", "f1"]


def test_a_claim_no_read_back_can_tell_is_unknown_and_kept_nowhere(backend: Case) -> None:
    store, lossy = backend.open_lossy()
    stored = store.insert(job())
    lossy.lose, lossy.dark_after = 1, True

    assert outcomes(store, WriteSet(claims=[running(stored, "node-a")])) == [Write.UNKNOWN]

    assert store.persistence is backend.persistence
    lossy.dark = False
    assert [held.id for held in store.held("node-a")] == [stored.id]  # it had landed: the node reconciles


def test_a_failed_save_read_back_as_not_landed_is_kept_and_its_claim_lost(backend: Case) -> None:
    store, lossy = backend.open_lossy()
    finished, claimed = store.insert(job("finished")), store.insert(job("claimed"))
    lossy.fail = 1  # fails before it lands: the rows still have the versions they were read at

    written = outcomes(store, WriteSet([finished.evolve(occurrences=1)], claims=[running(claimed, "node-a")]))

    assert written == [Write.KEPT, LOST]
    assert store.held("node-a") == []
    store.flush()
    assert store.persistence is backend.persistence
    assert store.get(finished.id) == finished.evolve(occurrences=1, version=2)


def test_a_save_no_read_back_can_tell_is_kept_and_its_runs_replayed_once(backend: Case) -> None:
    store, lossy = backend.open_lossy()
    stored = store.insert(job())
    lossy.lose, lossy.dark_after = 1, True

    assert outcomes(store, WriteSet([stored.evolve(occurrences=1)], runs=[run(stored.id, "f1")])) == [
        Write.KEPT
    ]
    assert store.persistence is Persistence.DEGRADED
    assert store.get(stored.id) == stored.evolve(occurrences=1)  # reads see the job kept in memory

    lossy.dark = False
    store.flush()  # the write had landed: the row moved on, so the kept job goes; the run is sent again

    assert store.persistence is backend.persistence
    assert store.get(stored.id) == stored.evolve(occurrences=1, version=2)
    assert [kept.fire_id for kept in store.runs(stored.id)] == ["f1"]


def test_an_insert_whose_reply_was_lost_is_read_back_and_answered_as_inserted(backend: Case) -> None:
    store, lossy = backend.open_lossy()
    lossy.lose = 1

    stored = store.insert(job())

    assert (stored.id, stored.version) != (0, 0) and store.get(stored.id) == stored
    lossy.lose, lossy.dark_after = 1, True
    with pytest.raises(StoreError):
        store.insert(job("unseen"))  # no read back can tell: the error stands


# -- due and next_wake ---------------------------------------------------------------------------


def test_due_reads_jobs_at_or_before_now_earliest_first(store: Store) -> None:
    later = store.insert(job("later", next_run_at=T0 + timedelta(minutes=2)))
    exact = store.insert(job("exact", next_run_at=T0))
    early = store.insert(job("early", next_run_at=T0 - timedelta(minutes=5)))
    tied = store.insert(job("tied", next_run_at=T0))
    store.insert(job("future", next_run_at=T0 + timedelta(minutes=3)))

    assert store.due(T0, 10) == [early, exact, tied]
    assert store.due(T0, 2) == [early, exact]
    assert store.due(T0 + timedelta(minutes=2), 10) == [early, exact, tied, later]
    assert store.due(T0 - timedelta(hours=1), 10) == []


def test_due_reads_each_state_by_its_wake_instant(store: Store) -> None:
    ends = T0 + timedelta(days=1)
    paused = store.insert(job("paused", state=State.PAUSED, paused_by=PausedBy.OPERATOR, ends_at=ends))
    store.insert(job("done", state=State.DONE, next_run_at=None))
    retrying = store.insert(job("retrying"))
    retrying = running(retrying, None, retry_at=T0 + timedelta(minutes=1))
    store.save(WriteSet([retrying]))
    held = store.insert(job("held", next_run_at=None))
    store.save(WriteSet([running(held, "node-a")]))
    expiring = store.insert(job("expiring", next_run_at=None, ends_at=T0 + timedelta(minutes=2)))

    assert [found.name for found in store.due(T0 + timedelta(minutes=1), 10)] == ["retrying"]
    assert [found.name for found in store.due(ends, 10)] == ["retrying", "expiring", "paused"]
    assert paused.wake_at() == ends and expiring.wake_at() == T0 + timedelta(minutes=2)


def test_due_and_next_wake_leave_out_deleted_jobs(store: Store) -> None:
    gone = store.insert(job("gone", next_run_at=T0 - timedelta(hours=1)))
    kept = store.insert(job("kept", next_run_at=T0))
    store.delete(gone.id)

    assert store.due(T0, 10) == [kept]
    assert store.next_wake() == T0


def test_next_wake_is_the_earliest_wake_instant(store: Store) -> None:
    assert store.next_wake() is None
    store.insert(job("done", state=State.DONE, next_run_at=None))
    assert store.next_wake() is None

    first = store.insert(job("first", next_run_at=T0 + timedelta(minutes=5)))
    store.insert(job("second", next_run_at=T0 + timedelta(minutes=9)))
    assert store.next_wake() == T0 + timedelta(minutes=5)

    store.save(WriteSet([first.evolve(next_run_at=T0 + timedelta(minutes=1))]))
    assert store.next_wake() == T0 + timedelta(minutes=1)


# -- listing -------------------------------------------------------------------------------------


def test_jobs_are_listed_by_name_and_filtered(store: Store) -> None:
    charlie = store.insert(job("charlie", state=State.PAUSED, paused_by=PausedBy.OPERATOR))
    alpha = store.insert(job("alpha", target="reports", action="daily"))
    bravo = store.insert(job("bravo"))
    gone = store.insert(job("aaa-gone"))
    store.delete(gone.id)

    assert store.jobs() == [alpha, bravo, charlie]
    assert store.jobs(state=State.ACTIVE) == [alpha, bravo]
    assert store.jobs(target="backup") == [bravo, charlie]
    assert store.jobs(state=State.PAUSED, target="backup") == [charlie]
    assert store.jobs(state=State.DONE) == []


def test_jobs_come_in_pages_after_a_name(store: Store) -> None:
    made = {
        name: store.insert(job(name)) for name in ("delta", "alpha", "Zulu", "charlie", "bravo", "éclair")
    }
    store.save(WriteSet([made["charlie"].evolve(state=State.PAUSED, paused_by=PausedBy.OPERATOR)]))

    def by_name(found: list[Job]) -> list[str]:
        return [each.name for each in found]

    # Code point order: capitals before lower case, accented letters after z.
    assert by_name(store.jobs(limit=2)) == ["Zulu", "alpha"]
    assert by_name(store.jobs(after_name="alpha", limit=2)) == ["bravo", "charlie"]
    assert by_name(store.jobs(after_name="charlie")) == ["delta", "éclair"]
    assert by_name(store.jobs(after_name="b", limit=10)) == ["bravo", "charlie", "delta", "éclair"]
    assert store.jobs(after_name="éclair") == []
    assert by_name(store.jobs(State.ACTIVE, after_name="bravo", limit=1)) == ["delta"]  # charlie is paused


def test_jobs_are_filtered_by_their_creator_in_the_store(store: Store) -> None:
    mine_b = store.insert(job("b-mine", created_by="agent"))
    mine_a = store.insert(job("a-mine", created_by="agent", target="reports", action="daily"))
    paused = store.insert(job("c-mine", created_by="agent", state=State.PAUSED, paused_by=PausedBy.OPERATOR))
    theirs = store.insert(job("a-theirs", created_by="other"))
    gone = store.insert(job("aaa-gone", created_by="agent"))
    store.delete(gone.id)

    assert store.jobs(created_by="agent") == [mine_a, mine_b, paused]
    assert store.jobs(created_by="other") == [theirs]
    assert store.jobs(created_by="nobody") == []
    assert store.jobs(created_by="agent", target="backup") == [mine_b, paused]
    assert store.jobs(State.ACTIVE, created_by="agent") == [mine_a, mine_b]
    assert store.jobs(State.PAUSED, "backup", "agent") == [paused]
    assert store.jobs(State.PAUSED, created_by="other") == []
    assert store.jobs() == [mine_a, theirs, mine_b, paused]


def test_the_creator_filter_sees_saves_and_reopens(backend: Case) -> None:
    one = backend.open()
    stored = one.insert(job("mine", created_by="agent"))
    assert outcomes(one, WriteSet([stored.evolve(occurrences=4)])) == [DURABLE]

    reader = backend.open() if backend.shared else one
    assert reader.jobs(created_by="agent") == [stored.evolve(occurrences=4, version=2)]
    assert reader.count_live("agent") == 1


def test_count_live_counts_a_creators_active_paused_and_running_jobs(store: Store) -> None:
    assert store.count_live("agent") == 0
    store.insert(job("active", created_by="agent"))
    store.insert(job("paused", created_by="agent", state=State.PAUSED, paused_by=PausedBy.OPERATOR))
    running = store.insert(job("running", created_by="agent"))
    for ended in (State.EXPIRED, State.DONE, State.FAILED):
        store.insert(job(ended.value, created_by="agent", state=ended, next_run_at=None))
    store.insert(job("theirs", created_by="other"))
    gone = store.insert(job("gone", created_by="agent"))
    store.delete(gone.id)
    claim = running.evolve(state=State.RUNNING, in_flight=InFlight("f-1", T0, 1, T0, "node-a"))
    assert outcomes(store, WriteSet([claim])) == [DURABLE]

    assert store.count_live("agent") == 3
    assert store.count_live("other") == 1
    assert store.count_live("nobody") == 0
    assert store.count_live("agent") == len(
        [found for found in store.jobs(created_by="agent") if found.state.live]
    )

    finishing = store.get(running.id)
    assert finishing is not None
    assert outcomes(
        store, WriteSet([finishing.evolve(state=State.DONE, in_flight=None, next_run_at=None)])
    ) == [DURABLE]
    assert store.count_live("agent") == 2


def decoded_counts(store: Store, source: str) -> tuple[dict[str, int], int]:
    """What `status` and the quota computed before semantic 42, by decoding every job of the source: the
    count in each state, and how many have a backfill queue. The aggregates must say the same."""
    counts = {state.value: 0 for state in State}
    jobs = store.jobs(created_by=source)
    for found in jobs:
        counts[found.state.value] += 1
    return counts, sum(1 for found in jobs if found.backfill)


def test_a_sources_counts_and_backfills_waiting_follow_each_change_as_decoding_would(store: Store) -> None:
    day = timedelta(days=1)
    active = store.insert(job("active", created_by="agent"))
    queued = store.insert(job("queued", created_by="agent", backfill=(T0 - 2 * day, T0 - day)))
    store.insert(job("paused", created_by="agent", state=State.PAUSED, paused_by=PausedBy.OPERATOR))
    store.insert(job("ended", created_by="agent", state=State.EXPIRED, next_run_at=None, backfill=(T0,)))
    store.insert(job("theirs", created_by="other", backfill=(T0 - day,)))
    gone = store.insert(job("gone", created_by="agent", backfill=(T0 - day,)))
    store.delete(gone.id)

    assert store.counts("agent") == {**{s.value: 0 for s in State}, "active": 2, "paused": 1, "expired": 1}
    assert store.backfills_waiting("agent") == 2  # the deleted job's queue no longer counts
    assert store.backfills_waiting("other") == 1
    assert store.backfills_waiting("nobody") == 0
    assert store.counts("nobody") == {state.value: 0 for state in State}
    assert (store.counts("agent"), store.backfills_waiting("agent")) == decoded_counts(store, "agent")

    # The queue starts (it empties), a job is queued, one ends: the counts follow every save.
    assert (
        outcomes(store, WriteSet([queued.evolve(backfill=()), active.evolve(backfill=(T0 - day,))]))
        == [DURABLE] * 2
    )
    assert store.backfills_waiting("agent") == 2
    started = store.get(active.id)
    assert started is not None
    assert outcomes(store, WriteSet([started.evolve(state=State.DONE, next_run_at=None)])) == [DURABLE]
    assert (store.counts("agent"), store.backfills_waiting("agent")) == decoded_counts(store, "agent")
    assert store.counts("agent")["done"] == 1
    assert sum(store.counts().values()) == sum(sum(store.counts(who).values()) for who in ("agent", "other"))


def test_first_by_id_reads_the_oldest_jobs_not_deleted(store: Store) -> None:
    made = [store.insert(job(name)) for name in ("c", "a", "d", "b")]
    store.delete(made[1].id)

    assert store.first_by_id(2) == [made[0], made[2]]
    assert store.first_by_id(10) == [made[0], made[2], made[3]]
    assert store.first_by_id(0) == []


def test_first_versions_by_id_say_which_of_the_first_jobs_changed(store: Store) -> None:
    made = [store.insert(job(name)) for name in ("c", "a", "d", "b")]
    store.delete(made[1].id)
    assert store.save(WriteSet([made[2]])).of(made[2]) == DURABLE

    versions = store.first_versions_by_id(10)
    assert versions is not None
    assert versions == [(found.id, found.version) for found in store.first_by_id(10)]
    assert versions[1] == (made[2].id, made[2].version + 1)
    assert store.first_versions_by_id(1) == versions[:1]
    assert store.first_versions_by_id(0) == []


def test_a_sources_runs_are_its_jobs_not_deleted_newest_first_a_page_at_a_time(store: Store) -> None:
    mine = store.insert(job("mine", created_by="agent"))
    also = store.insert(job("also", created_by="agent"))
    theirs = store.insert(job("theirs", created_by="other"))
    gone = store.insert(job("gone", created_by="agent"))
    second = timedelta(seconds=1)
    runs = [
        run(owner.id, f"f-{index}", finished=T0 + index * second)
        for index, owner in enumerate([mine, theirs, also, gone, mine, theirs, also])
    ]
    store.save(WriteSet(runs=runs))
    store.delete(gone.id)

    newest = store.runs(created_by="agent")
    assert [(found.job_id, found.fire_id) for found in newest] == [
        (also.id, "f-6"),
        (mine.id, "f-4"),
        (also.id, "f-2"),
        (mine.id, "f-0"),
    ]
    page = store.runs(limit=2, before=newest[1].id, created_by="agent")
    assert [found.fire_id for found in page] == ["f-2", "f-0"]
    assert store.runs(created_by="nobody") == []
    assert [found.fire_id for found in store.runs(mine.id, created_by="agent")] == ["f-4", "f-0"]


def test_with_dedupe_key_finds_every_row_deleted_ones_flagged(store: Store) -> None:
    old = store.insert(job("old", dedupe_key="nightly-backup"))
    store.delete(old.id)
    new = store.insert(job("new", dedupe_key="nightly-backup"))
    store.insert(job("other", dedupe_key="other-key"))
    store.insert(job("plain"))

    assert store.with_dedupe_key("nightly-backup") == [(old, True), (new, False)]
    assert store.with_dedupe_key("missing") == []


def test_counts_cover_every_state_and_skip_deleted_jobs(store: Store) -> None:
    assert store.counts() == {state.value: 0 for state in State}
    store.insert(job("a"))
    store.insert(job("b"))
    store.insert(job("c", state=State.EXPIRED, next_run_at=None))
    gone = store.insert(job("d"))
    store.delete(gone.id)

    assert store.counts() == {**{state.value: 0 for state in State}, "active": 2, "expired": 1}


# -- beats and orphans ---------------------------------------------------------------------------


def test_beats_renew_a_node_and_keep_its_start(store: Store) -> None:
    store.beat("node-a", T0)
    store.beat("node-b", T0 + timedelta(seconds=5))
    store.beat("node-a", T0 + timedelta(seconds=10))

    beats = store.beats()
    assert [(beat.node, beat.beat_at, beat.started_at) for beat in beats] == [
        ("node-a", T0 + timedelta(seconds=10), T0),
        ("node-b", T0 + timedelta(seconds=5), T0 + timedelta(seconds=5)),
    ]

    store.forget("node-a")
    store.forget("never-beat")
    assert [beat.node for beat in store.beats()] == ["node-b"]


def test_a_node_that_beat_within_the_ttl_is_never_orphaned(store: Store) -> None:
    held = store.insert(job("held"))
    store.save(WriteSet([running(held, "node-a")]))
    store.beat("node-a", T0)

    assert store.orphans(T0 + timedelta(seconds=44), ttl=timedelta(seconds=45)) == []
    assert store.orphans(T0 + timedelta(minutes=2), ttl=timedelta(minutes=5)) == []
    store.beat("node-a", T0 + timedelta(minutes=10))
    assert store.orphans(T0 + timedelta(minutes=10, seconds=30)) == []


def test_a_node_that_stopped_beating_leaves_its_runs_orphaned(store: Store) -> None:
    dead = store.insert(job("dead"))
    alive = store.insert(job("alive"))
    never = store.insert(job("never"))
    store.save(
        WriteSet([running(dead, "node-dead"), running(alive, "node-alive"), running(never, "node-never")])
    )
    store.beat("node-dead", T0)
    store.beat("node-alive", T0 + timedelta(minutes=1))

    orphans = store.orphans(T0 + timedelta(minutes=1), ttl=timedelta(seconds=45))

    assert sorted(orphan.name for orphan in orphans) == ["dead", "never"]
    assert {orphan.in_flight.node for orphan in orphans if orphan.in_flight} == {"node-dead", "node-never"}


def test_lease_left_is_the_oldest_peer_beat_plus_the_ttl(store: Store) -> None:
    ttl = timedelta(seconds=45)
    first, second, mine = (store.insert(job(name)) for name in ("first", "second", "mine"))
    assert store.lease_left(T0, ttl, "node-me") is None  # nobody holds a run

    store.save(WriteSet([running(mine, "node-me")]))
    store.beat("node-me", T0)
    assert store.lease_left(T0, ttl, "node-me") is None  # only the asking node does

    store.save(WriteSet([running(first, "node-a"), running(second, "node-b")]))
    store.beat("node-a", T0 + timedelta(seconds=20))
    store.beat("node-b", T0 + timedelta(seconds=5))
    assert store.lease_left(T0 + timedelta(seconds=30), ttl, "node-me") == timedelta(seconds=20)
    # Asked by node-b: node-a's lease, and node-me's, which has not beaten since T0.
    assert store.lease_left(T0 + timedelta(seconds=30), ttl, "node-b") == timedelta(seconds=15)

    store.beat("node-b", T0 + timedelta(seconds=40))  # a beat moves the holder's lease on
    assert store.lease_left(T0 + timedelta(seconds=70), ttl, "node-me") == timedelta(seconds=-5)


def test_lease_left_is_none_for_a_waiting_retry_and_zero_for_a_holder_that_never_beat(store: Store) -> None:
    ttl = timedelta(seconds=45)
    waiting, held = store.insert(job("waiting")), store.insert(job("held"))
    store.save(WriteSet([running(waiting, None, retry_at=T0 + timedelta(minutes=1))]))
    assert store.lease_left(T0, ttl, "node-me") is None

    store.save(WriteSet([running(held, "node-silent")]))
    left = store.lease_left(T0, ttl, "node-me")
    assert left is not None and left <= timedelta(0)


def test_held_reads_the_running_jobs_a_node_holds_and_no_other(store: Store) -> None:
    mine = store.insert(job("mine"))
    theirs = store.insert(job("theirs"))
    waiting = store.insert(job("waiting"))
    gone = store.insert(job("gone"))
    store.insert(job("idle"))
    store.save(
        WriteSet(
            [
                running(mine, "node-a"),
                running(theirs, "node-b"),
                running(waiting, None, retry_at=T0),
                running(gone, "node-a"),
            ]
        )
    )
    store.delete(gone.id)

    assert [held.name for held in store.held("node-a")] == ["mine"]
    assert [held.name for held in store.held("node-b")] == ["theirs"]
    assert store.held("node-c") == []


def test_only_running_jobs_held_by_a_node_can_be_orphans(store: Store) -> None:
    waiting = store.insert(job("waiting"))
    store.save(WriteSet([running(waiting, None, retry_at=T0 + timedelta(minutes=1))]))
    store.insert(job("idle"))
    gone = store.insert(job("gone"))
    store.save(WriteSet([running(gone, "node-dead")]))
    store.delete(gone.id)

    assert store.orphans(T0 + timedelta(hours=1)) == []


def flying_beside(stored: Job, first_node: str | None, second_node: str) -> Job:
    """`stored` with two occurrences in flight (overlap allow): the first on `first_node` (None: it
    waits for a retry), the second started beside it on `second_node`."""
    first = InFlight("fire-1", T0, 1, T0, first_node, retry_at=None if first_node else T0)
    second = InFlight("fire-2", T0 + timedelta(minutes=1), 1, T0 + timedelta(minutes=1), second_node)
    return stored.evolve(
        state=State.RUNNING, overlap=Overlap.ALLOW, in_flight=first, alongside=(second,), overlapped=1
    )


def test_a_row_with_two_occurrences_in_flight_round_trips(store: Store) -> None:
    stored = store.insert(job("both"))
    both = flying_beside(stored, "node-a", "node-a")
    assert outcomes(store, WriteSet([both])) == [DURABLE]
    read = store.get(stored.id)
    assert read == both.evolve(version=2)
    assert read is not None and [f.fire_id for f in read.flights] == ["fire-1", "fire-2"]
    one_left = read.without_flight("fire-1")
    store.save(WriteSet([one_left]))
    assert store.get(stored.id) == one_left.evolve(version=3)
    assert one_left.flights == (both.alongside[0],) and not one_left.alongside


def test_a_dead_node_s_two_flights_are_one_orphan_found_by_the_one_it_runs(store: Store) -> None:
    both = store.insert(job("both"))
    retrying = store.insert(job("retrying"))
    # "retrying": its first occurrence waits for a retry (no node), its second runs on the dead node.
    store.save(
        WriteSet([flying_beside(both, "node-dead", "node-dead"), flying_beside(retrying, None, "node-dead")])
    )
    store.beat("node-dead", T0)

    orphans = store.orphans(T0 + timedelta(minutes=5), ttl=timedelta(seconds=45))
    assert sorted(orphan.name for orphan in orphans) == ["both", "retrying"]
    assert all(len(orphan.flights) == 2 for orphan in orphans)
    assert sorted(held.name for held in store.held("node-dead")) == ["both", "retrying"]
    assert store.lease_left(T0, timedelta(seconds=45), "node-me") == timedelta(seconds=45)

    store.beat("node-dead", T0 + timedelta(minutes=5))  # alive after all: none of its flights is orphaned
    assert store.orphans(T0 + timedelta(minutes=5), ttl=timedelta(seconds=45)) == []


# -- fidelity ------------------------------------------------------------------------------------


SCHEDULES: dict[str, Schedule] = {
    "cron": NIGHTLY,
    "every": EverySchedule(timedelta(minutes=5, milliseconds=250)),
    "at": AtSchedule(datetime(2026, 3, 3, 10, 30, 0, 123456, tzinfo=BERLIN)),
}


@pytest.mark.parametrize("kind", SCHEDULES)
def test_a_job_with_every_field_set_round_trips(store: Store, kind: str) -> None:
    # Every field differs from its default; the combination is about fidelity, not a real life cycle.
    # Berlin wall times away from any DST change: zone-aware values compare by instant there.
    instant = datetime(2026, 3, 2, 10, 30, 0, 654321, tzinfo=BERLIN)
    full = Job(
        id=0,
        name="füll-job",
        target="backup",
        action="nightly",
        args={"dest": "/mnt/backups", "count": 3, "ratio": 0.5, "flags": [True, None], "deep": {"ü": "x"}},
        schedule=SCHEDULES[kind],
        ends_at=instant + timedelta(days=30),
        created_at=instant - timedelta(days=1),
        updated_at=instant,
        created_by="agent",
        state=State.RUNNING,
        paused_by=PausedBy.BREAKER,
        next_run_at=instant + timedelta(hours=1),
        last_run=LastRun("fire-0", instant - timedelta(hours=1), 2, Outcome.TIMEOUT, "took too long", 61_000),
        consecutive_failures=2,
        skipped_overlap=4,
        skipped_misfire=5,
        misfire=Misfire.COALESCE,
        max_attempts=3,
        retry_backoff_ms=2500,
        breaker_threshold=7,
        dedupe_key="full-key",
        once=True,
        origin={"source": "agent", "session": 17, "score": 0.25, "trusted": False, "ticket": None},
        in_flight=InFlight("fire-1", instant, 2, instant + timedelta(seconds=1), "node-a", True, instant),
        occurrences=11,
        version=5,
    )

    stored = store.insert(full)
    assert stored == full.evolve(id=stored.id, version=1)
    assert store.get(stored.id) == stored

    changed = stored.evolve(in_flight=None, state=State.PAUSED, args={"dest": "/elsewhere"})
    store.save(WriteSet([changed]))
    assert store.get(stored.id) == changed.evolve(version=2)
    assert store.with_dedupe_key("full-key") == [(changed.evolve(version=2), False)]


def test_delete_unreadable_marks_a_row_deleted_without_reading_it(store: Store) -> None:
    stored = store.insert(job("broken"))
    assert store.delete_unreadable(stored.id) is True
    assert store.get(stored.id) is None and store.find("broken") is None
    assert store.delete_unreadable(stored.id) is False
    assert store.delete_unreadable(12345) is False


# --- the audit log (semantic 36) ---------------------------------------------------------------------------


def entry(action: str, job_id: int = 0, source: str = "agent", **fields: Any) -> AuditEntry:
    settings: dict[str, Any] = {"at": T0, "name": "nightly", "owner": source}
    settings["changes"] = {"state": ("a", "b")}
    settings.update(fields)
    return AuditEntry(source=source, action=action, job_id=job_id, **settings)


def actions(store: Store, **filters: Any) -> list[str]:
    return [found.action for found in store.audit(**filters)]


def test_an_entry_is_written_with_its_insert_and_read_back_whole(store: Store) -> None:
    made = entry("create", request_id="req-1", origin={"via": "mcp"}, changes={"name": (None, "nightly")})

    stored = store.insert(job(), made)

    [found] = store.audit()
    assert found == replace(made, job_id=stored.id, id=found.id)
    assert found.id is not None and found.at == T0


def test_a_refused_insert_writes_no_entry(store: Store) -> None:
    store.insert(job(), entry("create"))
    with pytest.raises(NameTaken):
        store.insert(job(), entry("create"))
    assert actions(store) == ["create"]


def test_an_entry_of_a_save_is_written_only_if_its_job_was(store: Store) -> None:
    stored = store.insert(job())

    assert outcomes(store, WriteSet([stored.evolve(occurrences=1)], audit=[entry("update", stored.id)])) == [
        DURABLE
    ]
    # The same version again: another writer got there first, so this mutation did not happen.
    assert outcomes(store, WriteSet([stored.evolve(occurrences=2)], audit=[entry("pause", stored.id)])) == [
        LOST
    ]

    assert actions(store) == ["update"]


def test_an_entry_of_a_delete_is_written_only_if_a_row_went(store: Store) -> None:
    stored = store.insert(job())

    store.delete(stored.id, entry("delete", stored.id))
    store.delete(stored.id, entry("delete", stored.id))

    assert actions(store) == ["delete"]


def test_a_claims_entry_goes_with_the_claim(store: Store) -> None:
    stored = store.insert(job())

    written = outcomes(
        store, WriteSet([running(stored, "node-a")], audit=[entry("run_now", stored.id)]), keep=False
    )

    assert written == [DURABLE] and actions(store) == ["run_now"]


def test_entries_read_newest_first_by_reader_source_job_and_page(store: Store) -> None:
    mine, theirs = store.insert(job("mine")), store.insert(job("theirs"))
    store.save(WriteSet([mine], audit=[entry("update", mine.id, name="mine")]))
    store.save(WriteSet([theirs], audit=[entry("update", theirs.id, source="other", name="theirs")]))
    # The operator on the agent's job: the agent reads it, as it is about its own schedule.
    store.save(
        WriteSet([mine.evolve(version=2)], audit=[entry("approve", mine.id, source="cli", owner="agent")])
    )

    newest = store.audit()
    assert [e.action for e in newest] == ["approve", "update", "update"]
    assert [e.name for e in store.audit(reader="agent")] == ["nightly", "mine"]
    assert actions(store, reader="other") == ["update"]
    assert actions(store, source="cli") == ["approve"]
    assert actions(store, job_id=theirs.id) == ["update"]
    assert actions(store, name="theirs") == ["update"]
    page = store.audit(limit=1, before=newest[0].id)
    assert page == [newest[1]]


def test_a_failed_save_keeps_its_entry_and_writes_it_once_it_lands(backend: Case) -> None:
    store, lossy = backend.open_lossy()
    stored = store.insert(job())
    lossy.fail = 1

    assert outcomes(store, WriteSet([stored.evolve(occurrences=1)], audit=[entry("update", stored.id)])) == [
        Write.KEPT
    ]
    assert actions(store) == []
    store.flush()
    store.flush()

    assert actions(store) == ["update"]


def test_an_entry_whose_write_landed_unheard_is_never_written_twice(backend: Case) -> None:
    store, lossy = backend.open_lossy()
    stored = store.insert(job())
    lossy.lose, lossy.dark_after = 1, True

    assert outcomes(store, WriteSet([stored.evolve(occurrences=1)], audit=[entry("update", stored.id)])) == [
        Write.KEPT
    ]
    lossy.dark = False
    store.flush()

    assert actions(store) == ["update"]


def test_prune_drops_the_entries_past_retention(store: Store) -> None:
    stored = store.insert(job())
    store.save(WriteSet([stored], audit=[entry("update", stored.id, at=T0 - timedelta(days=91))]))
    store.save(WriteSet([stored.evolve(version=2)], audit=[entry("pause", stored.id)]))

    assert store.prune_audit(T0 - timedelta(days=90)) == 1
    assert actions(store) == ["pause"]
