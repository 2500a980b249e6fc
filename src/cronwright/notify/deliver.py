"""Delivery: one pass claims the due notifications, plans them (plan.py), sends them and settles each."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from zoneinfo import ZoneInfo

from cronwright.clock import Clock
from cronwright.core.notifications import Notification, Status
from cronwright.notify.channels import Channel, DeliveryFailed
from cronwright.notify.plan import FLOOD_WINDOW, after_failure, after_success, plan
from cronwright.store.outbox import Outbox

log = logging.getLogger("cronwright.notify")

# A claim outlives the sends of one pass (a channel's timeout is at most a minute): a claim that lapses
# mid-pass would let another node send the same notification again.
CLAIM_HOLD = timedelta(minutes=5)
BATCH = 200


@dataclass(frozen=True, slots=True)
class Report:
    delivered: int = 0
    failed: int = 0
    digests: int = 0
    waiting: int = 0


class Deliverer:
    """Delivers an outbox's due notifications through the configured channels, on behalf of `node`."""

    def __init__(
        self,
        outbox: Outbox,
        channels: Mapping[str, Channel],
        node: str,
        clock: Clock,
        zone: ZoneInfo,
    ) -> None:
        self._outbox = outbox
        self._channels = channels
        self._node = node
        self._clock = clock
        self._zone = zone

    def use_channels(self, channels: Mapping[str, Channel]) -> None:
        """A reload's channels (service/reloading.py), from the next notification sent on."""
        self._channels = channels

    def deliver(self) -> Report:
        """One pass. Never raises for a channel's failure: that notification is retried later."""
        now = self._clock.now()
        due = self._outbox.claim(self._node, now, CLAIM_HOLD, BATCH)
        if not due:
            return Report()
        decided = plan(due, self._outbox.sent_since(now - FLOOD_WINDOW), now, self._zone)
        sending = list(decided.send)
        for digest, members in decided.fold:
            self._outbox.fold(self._node, digest, members)
            sending.append(digest)
        planned = {item.id for item in decided.send} | {m.id for _, ms in decided.fold for m in ms}
        waiting = [item for item in due if item.id not in planned]
        self._outbox.settle(self._node, waiting)  # no room on its channel this minute: it waits, unchanged
        delivered = failed = 0
        for item in sending:
            settled = self._send(item)
            self._outbox.settle(self._node, [settled])
            delivered += settled.status is Status.DELIVERED
            failed += settled.status is not Status.DELIVERED
        return Report(delivered, failed, len(decided.fold), len(waiting))

    def _send(self, item: Notification) -> Notification:
        channel = self._channels.get(item.channel)
        try:
            if channel is None:
                raise DeliveryFailed(f"no channel named '{item.channel}' in [notify]")
            channel.send(item.payload)
        except DeliveryFailed as error:
            settled = after_failure(item, self._clock.now(), error.message)
            log.warning(
                "notification %s to %s failed (attempt %d): %s",
                item.id,
                item.channel,
                settled.attempts,
                error.message,
            )
            return settled
        except Exception as error:  # a channel's bug must not stop the pass, nor lose the notification
            log.exception("channel %s failed on notification %s", item.channel, item.id)
            return after_failure(item, self._clock.now(), f"{type(error).__name__}: {error}")
        return after_success(item, self._clock.now())
