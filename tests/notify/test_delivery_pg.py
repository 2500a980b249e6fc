"""Two nodes delivering one PostgreSQL outbox at once, each through its own store handle (its own
connections), to a real webhook receiver: every notification arrives, and none twice (semantic 38)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import httpx

import pg
from cronwright.clock import ManualClock
from cronwright.core.notifications import Status, Transition
from cronwright.notify.channels import Channel, WebhookChannel
from cronwright.notify.deliver import Deliverer
from cronwright.notify.rules import Rule, notifications_for
from cronwright.store.postgres import PostgresStore
from cronwright.targets.secrets import Secrets

from .conftest import BERLIN, alert
from .receivers import SECRET, Receiver, http_receiver

START = datetime.fromisoformat("2026-03-01T03:00:05+01:00")
RULES = [Rule(on=frozenset(Transition), notify=("ops",))]


def channels(receiver: Receiver, client: httpx.Client) -> dict[str, Channel]:
    secrets = Secrets(environ={"ALERT_SECRET": SECRET})
    return {"ops": WebhookChannel("ops", receiver.url, "ALERT_SECRET", 5.0, client, secrets)}


def test_two_nodes_on_postgresql_deliver_each_notification_once() -> None:
    with pg.scratch_url() as url, http_receiver() as receiver, httpx.Client() as client:
        stores = [PostgresStore(url), PostgresStore(url)]
        try:
            # Thirty transitions 7 s apart: under 10 a minute, so no digest, and each goes on its own.
            for n in range(30):
                made = alert(fire_id=f"f-{n}", at=(START + timedelta(seconds=7 * n)).isoformat())
                stores[0].add(notifications_for(RULES, made, BERLIN))
            clock = ManualClock(START)
            nodes = [
                Deliverer(store, channels(receiver, client), f"node-{index}", clock, BERLIN)
                for index, store in enumerate(stores)
            ]
            for _ in range(25):  # both nodes pass at once, ten seconds apart
                barrier = threading.Barrier(2)

                def run(node: Deliverer, barrier: threading.Barrier) -> None:
                    barrier.wait()
                    node.deliver()

                threads = [threading.Thread(target=run, args=(node, barrier)) for node in nodes]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                clock.advance(timedelta(seconds=10))
            rows = stores[1].page(100)
        finally:
            for store in stores:
                store.close()

    ids = receiver.ids()
    assert len(ids) == len(set(ids)) == 30
    assert all(got.verified for got in receiver.received)
    assert {row.status for row in rows} == {Status.DELIVERED} and {row.attempts for row in rows} == {1}
