"""The delivery loop's timing: it sleeps until the next due notification, at most a minute, never spins."""

from __future__ import annotations

from datetime import datetime, timedelta

from cronwright.clock import ManualClock
from cronwright.core.notifications import Transition
from cronwright.notify.deliver import Deliverer, Report
from cronwright.notify.loop import DeliveryLoop
from cronwright.notify.rules import Rule, notifications_for
from cronwright.store.outbox import MemoryOutbox

from .conftest import BERLIN, alert

START = datetime.fromisoformat("2026-03-01T03:00:05+01:00")


def loop(outbox: MemoryOutbox, clock: ManualClock) -> DeliveryLoop:
    return DeliveryLoop(Deliverer(outbox, {}, "node-a", clock, BERLIN), outbox, clock)


def test_an_empty_outbox_sleeps_a_minute() -> None:
    clock = ManualClock(START)
    assert loop(MemoryOutbox(), clock).seconds_until_next(Report()) == 60.0


def test_it_sleeps_until_the_next_retry_and_never_less_than_a_second() -> None:
    outbox, clock = MemoryOutbox(), ManualClock(START)
    [item] = notifications_for([Rule(on=frozenset(Transition), notify=("ops",))], alert(), BERLIN)
    outbox.add([item.evolve(next_attempt_at=START + timedelta(seconds=15))])
    delivery = loop(outbox, clock)

    assert delivery.seconds_until_next(Report()) == 15.0
    clock.advance(timedelta(seconds=20))  # due already
    assert delivery.seconds_until_next(Report()) == 1.0
    assert delivery.seconds_until_next(Report(waiting=1)) == 10.0  # a flooded channel's room comes later


def test_a_held_notification_is_due_when_its_claim_ends() -> None:
    outbox, clock = MemoryOutbox(), ManualClock(START)
    outbox.add(notifications_for([Rule(on=frozenset(Transition), notify=("ops",))], alert(), BERLIN))
    outbox.claim("node-b", START, timedelta(seconds=40), 10)

    assert loop(outbox, clock).seconds_until_next(Report()) == 40.0
