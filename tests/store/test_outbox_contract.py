"""The outbox (notify/outbox.py) on every backend, through the Store the node writes with: a notification is
written in the save of its transition, or not at all; claims keep two nodes from sending one twice."""

from __future__ import annotations

from datetime import timedelta

from test_store_contract import BERLIN, T0, Case, backend, job, race, run, store

from cronwright.core.notifications import Alert, JobRef, Notification, Status, Transition
from cronwright.errors import StoreError
from cronwright.notify.plan import after_failure, after_success, digest_of
from cronwright.notify.rules import Rule, notifications_for
from cronwright.store import Store, Write
from cronwright.store.base import WriteSet

__all__ = ["backend", "store"]  # the fixtures, used by name

RULES = [Rule(on=frozenset(Transition), notify=("ops", "mail"))]
HOLD = timedelta(minutes=5)


def notes(job_id: int | None, key: str = "failed:1:f-1", source: str = "agent") -> list[Notification]:
    ref = None if job_id is None else JobRef(job_id, "nightly", "backup", "nightly", source)
    alert = Alert(Transition.FAILED, T0, key, "exit status 1", ref, "f-1", T0)
    return notifications_for(RULES, alert, BERLIN)


def test_a_notification_lands_with_its_jobs_write_and_a_second_detection_adds_nothing(store: Store) -> None:
    stored = store.insert(job())
    made = notes(stored.id)

    failed = stored.evolve(consecutive_failures=1)
    assert (
        store.save(WriteSet([failed], runs=[run(stored.id, "f-1")], notes=made)).of(failed) is Write.DURABLE
    )
    store.save(WriteSet(notes=notes(stored.id)))  # another node detected the same transition

    rows = store.page(10)
    assert sorted(row.id for row in rows) == sorted(item.id for item in made)
    assert {(row.channel, row.status, row.attempts) for row in rows} == {
        ("ops", Status.PENDING, 0),
        ("mail", Status.PENDING, 0),
    }
    [ops] = [row for row in rows if row.channel == "ops"]
    assert ops.payload == made[0].payload and ops.created_at == T0 and ops.job_id == stored.id


def test_a_notification_about_a_job_whose_write_lost_its_race_is_not_written(store: Store) -> None:
    stored = store.insert(job())
    store.save(WriteSet([stored.evolve(name="renamed")]))  # another writer moved the row on

    failed = stored.evolve(consecutive_failures=1)
    assert store.save(WriteSet([failed], notes=notes(stored.id))).of(failed) is Write.LOST
    assert store.page(10) == []


def test_a_failed_save_keeps_its_notifications_in_memory_and_writes_them_with_the_next(
    backend: Case,
) -> None:
    lossy_store, lossy = backend.open_lossy()
    stored = lossy_store.insert(job())
    lossy.fail = 1
    failed = stored.evolve(consecutive_failures=1)
    assert lossy_store.save(WriteSet([failed], notes=notes(stored.id))).of(failed) is Write.KEPT
    assert lossy_store.page(10) == []

    lossy_store.flush()

    assert len(lossy_store.page(10)) == 2


def test_a_claim_holds_due_notifications_for_one_node_until_it_settles_or_its_claim_lapses(
    store: Store,
) -> None:
    store.add(notes(None))
    assert store.claim("node-b", T0 - timedelta(seconds=1), HOLD, 10) == []  # not yet due

    taken = store.claim("node-a", T0, HOLD, 10)
    assert len(taken) == 2
    assert store.claim("node-b", T0 + timedelta(minutes=4), HOLD, 10) == []  # held by node-a

    ops = next(item for item in taken if item.channel == "ops")
    store.settle("node-a", [after_success(ops, T0)])
    again = store.claim("node-b", T0 + HOLD, HOLD, 10)  # node-a's claim on `mail` lapsed
    assert [item.channel for item in again] == ["mail"]
    store.settle("node-a", [after_success(again[0], T0 + HOLD)])  # too late: node-b holds it now

    [mail] = [row for row in store.page(10) if row.channel == "mail"]
    assert mail.status is Status.PENDING
    assert store.sent_since(T0) == {"ops": 1}


def test_a_failed_send_is_due_again_after_its_backoff(store: Store) -> None:
    store.add(notes(None)[:1])
    [item] = store.claim("node-a", T0, HOLD, 10)
    store.settle("node-a", [after_failure(item, T0, "HTTP 503")])

    assert store.claim("node-a", T0 + timedelta(seconds=14), HOLD, 10) == []
    [again] = store.claim("node-a", T0 + timedelta(seconds=15), HOLD, 10)
    assert (again.attempts, again.last_error) == (1, "HTTP 503")


def test_many_nodes_claiming_at_once_never_hold_one_notification_twice(backend: Case) -> None:
    first = backend.open()
    for n in range(20):
        first.add(notes(None, key=f"failed:1:f-{n}"))
    handles = [backend.open() if backend.shared else first for _ in range(4)]

    results = race(4, lambda index: handles[index].claim(f"node-{index}", T0, HOLD, 15))

    assert not [result for result in results if isinstance(result, StoreError)], results
    claimed = [item.id for result in results if isinstance(result, list) for item in result]
    assert len(claimed) == len(set(claimed)) == 40


def test_a_digest_folds_its_members_and_holds_itself_for_the_folding_node(store: Store) -> None:
    for n in range(12):
        store.add(notes(None, key=f"failed:1:f-{n}")[:1])
    members = store.claim("node-a", T0, HOLD, 100)
    digest = digest_of(members, T0, BERLIN)

    store.fold("node-a", digest, members)

    rows = {row.id: row for row in store.page(100)}
    assert {rows[item.id].status for item in members} == {Status.DIGESTED}
    assert {rows[item.id].digest_id for item in members} == {digest.id}
    assert rows[digest.id].status is Status.PENDING
    assert store.claim("node-b", T0 + timedelta(minutes=1), HOLD, 100) == []  # node-a holds the digest
    [held] = store.claim("node-b", T0 + HOLD, HOLD, 100)
    assert held.id == digest.id and len(held.payload["items"]) == 12


def test_pages_are_newest_first_and_a_source_reads_only_its_own(store: Store) -> None:
    for n in range(5):
        made = notes(n + 1, key=f"failed:{n}:f", source="agent" if n % 2 else "other")[:1]
        store.add([item.evolve(created_at=T0 + timedelta(minutes=n)) for item in made])
    store.add(notes(None, key="node_down:x")[:1])

    first = store.page(2)
    assert [row.created_at for row in first] == [T0 + timedelta(minutes=4), T0 + timedelta(minutes=3)]
    second = store.page(10, before=first[-1].id)
    assert [row.created_at for row in second][:3] == [T0 + timedelta(minutes=n) for n in (2, 1, 0)]
    assert len(second) == 4  # and the node's notification, made at T0 too
    assert [row.job_id for row in store.page(10, source="agent")] == [4, 2]


def test_settled_notifications_are_pruned_after_the_retention_and_pending_ones_stay(store: Store) -> None:
    store.add(notes(None))
    [ops, mail] = sorted(store.claim("node-a", T0, HOLD, 10), key=lambda item: item.channel != "ops")
    store.settle("node-a", [after_success(ops, T0)])

    assert store.prune(T0 + timedelta(days=29)) == 0
    assert store.prune(T0 + timedelta(days=31)) == 1
    assert [row.channel for row in store.page(10)] == ["mail"]
    assert mail.channel == "mail"
