"""The outbox delivered through a real webhook receiver: at least once, never twice by two nodes, digests."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import httpx

from cronwright.clock import ManualClock
from cronwright.core.notifications import Notification, Status, Transition
from cronwright.notify.channels import Channel, WebhookChannel
from cronwright.notify.deliver import Deliverer
from cronwright.notify.rules import Rule, notifications_for
from cronwright.store.outbox import MemoryOutbox
from cronwright.targets.secrets import Secrets

from .conftest import BERLIN, alert
from .receivers import SECRET, Receiver, http_receiver

START = datetime.fromisoformat("2026-03-01T03:00:05+01:00")
RULES = [Rule(on=frozenset(Transition), notify=("ops",))]
# One client for the module: each new one builds an SSL context, which is slow on a busy machine.
CLIENT = httpx.Client()


def made(count: int) -> list[Notification]:
    return [notifications_for(RULES, alert(fire_id=f"f-{n}"), BERLIN)[0] for n in range(count)]


def channels(receiver: Receiver) -> dict[str, Channel]:
    secrets = Secrets(environ={"ALERT_SECRET": SECRET})
    return {"ops": WebhookChannel("ops", receiver.url, "ALERT_SECRET", 5.0, CLIENT, secrets)}


def test_a_notification_is_delivered_once_and_then_left_alone() -> None:
    outbox, clock = MemoryOutbox(), ManualClock(START)
    [item] = made(1)
    outbox.add([item, item])  # the same transition detected twice
    with http_receiver() as receiver:
        node = Deliverer(outbox, channels(receiver), "node-a", clock, BERLIN)
        assert node.deliver().delivered == 1
        clock.advance(timedelta(hours=1))
        assert node.deliver().delivered == 0
    assert receiver.ids() == [item.id]
    [row] = outbox.page(10)
    assert (row.status, row.delivered_at, row.attempts) == (Status.DELIVERED, START, 1)


def test_a_receiver_down_for_an_hour_gets_it_when_it_comes_back_exactly_once() -> None:
    outbox, clock = MemoryOutbox(), ManualClock(START)
    [item] = made(1)
    outbox.add([item])
    with http_receiver() as receiver:
        node = Deliverer(outbox, channels(receiver), "node-a", clock, BERLIN)
        receiver.down = True
        tries = 0
        while clock.now() < START + timedelta(hours=1):
            tries += node.deliver().failed
            clock.advance(timedelta(minutes=1))
        receiver.down = False
        clock.advance(timedelta(minutes=30))  # the longest backoff
        assert node.deliver().delivered == 1
        clock.advance(timedelta(hours=2))
        node.deliver()
    assert 7 <= tries <= 10  # backed off: 15 s, 30 s, ... not once a minute
    assert receiver.ids() == [item.id]
    assert all(got.verified for got in receiver.received)
    [row] = outbox.page(10)
    assert row.status is Status.DELIVERED and row.attempts == tries + 1


def test_a_redelivery_carries_the_same_id_when_an_answer_was_lost() -> None:
    """A node that died after sending leaves its claim to lapse; the next send has the same id."""
    outbox, clock = MemoryOutbox(), ManualClock(START)
    [item] = made(1)
    outbox.add([item])
    with http_receiver() as receiver:
        [held] = outbox.claim("node-dead", clock.now(), timedelta(minutes=5), 10)
        channels(receiver)["ops"].send(held.payload)  # it sent, then died before settling
        clock.advance(timedelta(minutes=4))
        assert Deliverer(outbox, channels(receiver), "node-b", clock, BERLIN).deliver().delivered == 0
        clock.advance(timedelta(minutes=2))
        assert Deliverer(outbox, channels(receiver), "node-b", clock, BERLIN).deliver().delivered == 1
    assert receiver.ids() == [item.id, item.id]
    assert [body["id"] for body in receiver.bodies()] == [item.id, item.id]


def test_two_nodes_delivering_at_once_send_each_notification_once() -> None:
    outbox, clock = MemoryOutbox(), ManualClock(START)
    items = made(10)
    outbox.add(items)
    with http_receiver() as receiver:
        nodes = [Deliverer(outbox, channels(receiver), f"node-{n}", clock, BERLIN) for n in range(4)]
        barrier = threading.Barrier(len(nodes))

        def run(node: Deliverer) -> None:
            barrier.wait()
            node.deliver()

        threads = [threading.Thread(target=run, args=(node,)) for node in nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(receiver.ids()) == sorted(item.id for item in items)


def test_a_flood_becomes_one_digest_and_the_next_minute_goes_one_by_one() -> None:
    outbox, clock = MemoryOutbox(), ManualClock(START)
    flood = made(25)
    outbox.add(flood)
    with http_receiver() as receiver:
        node = Deliverer(outbox, channels(receiver), "node-a", clock, BERLIN)
        report = node.deliver()
        assert (report.digests, report.delivered) == (1, 1)
        clock.advance(timedelta(minutes=2))
        [later] = notifications_for(RULES, alert(fire_id="f-late", at="2026-03-01T03:02:05+01:00"), BERLIN)
        outbox.add([later])
        assert node.deliver().delivered == 1
    digest, single = receiver.bodies()
    assert digest["transition"] == "digest" and digest["at"] == "2026-03-01T03:00:05+01:00"
    assert sorted(item["id"] for item in digest["items"]) == sorted(item.id for item in flood)
    assert receiver.ids()[0] == digest["id"]
    assert single["id"] == later.id
    statuses = {row.id: row.status for row in outbox.page(100)}
    assert {statuses[item.id] for item in flood} == {Status.DIGESTED}
    assert statuses[digest["id"]] is Status.DELIVERED


def test_a_digest_that_failed_is_sent_again_whole_with_its_id() -> None:
    outbox, clock = MemoryOutbox(), ManualClock(START)
    outbox.add(made(12))
    with http_receiver() as receiver:
        node = Deliverer(outbox, channels(receiver), "node-a", clock, BERLIN)
        receiver.down = True
        assert node.deliver().failed == 1
        receiver.down = False
        outbox.add(made(14)[12:])  # two more arrive meanwhile: they do not change the digest
        clock.advance(timedelta(seconds=15))
        node.deliver()
    bodies = receiver.bodies()
    assert bodies[0]["transition"] == "digest" and len(bodies[0]["items"]) == 12
    assert [body["transition"] for body in bodies[1:]] == ["failed", "failed"]


def test_a_notification_for_an_unknown_channel_waits_for_it() -> None:
    outbox, clock = MemoryOutbox(), ManualClock(START)
    [item] = made(1)
    outbox.add([item])
    assert Deliverer(outbox, {}, "node-a", clock, BERLIN).deliver().failed == 1
    [row] = outbox.page(10)
    assert row.status is Status.PENDING and row.last_error == "no channel named 'ops' in [notify]"


def test_notifications_page_newest_first() -> None:
    outbox = MemoryOutbox()
    items = [
        notifications_for(RULES, alert(fire_id=f"f-{n}", at=f"2026-03-01T03:0{n}:00+01:00"), BERLIN)[0]
        for n in range(5)
    ]
    outbox.add(items)
    first = outbox.page(2)
    assert [row.id for row in first] == [items[4].id, items[3].id]
    assert [row.id for row in outbox.page(2, before=first[-1].id)] == [items[2].id, items[1].id]
