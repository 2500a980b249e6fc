"""The pure part of delivery: what to send now, when to try again, and when a flood becomes a digest.

No I/O and no clock: every function takes `now`. `deliver` does the sending.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from cronwright.core.notifications import DIGEST, Notification, Status
from cronwright.timing.iso import render

# Semantic 38: a channel over this many notifications a minute sends one digest instead.
FLOOD_LIMIT = 10
FLOOD_WINDOW = timedelta(minutes=1)
# Retries double from FIRST_RETRY up to MAX_RETRY apart, and stop once a notification is GIVE_UP old: a
# receiver down for an hour still gets it, one down for days does not get a stale page.
FIRST_RETRY = timedelta(seconds=15)
MAX_RETRY = timedelta(minutes=30)
GIVE_UP = timedelta(days=1)


def retry_delay(attempts: int) -> timedelta:
    """How long to wait after the `attempts`-th failed attempt (1-based): 15 s, 30 s, 1 min, ... 30 min."""
    doubling: int = 2 ** max(0, min(attempts - 1, 20))
    return min(MAX_RETRY, FIRST_RETRY * doubling)


def after_failure(notification: Notification, now: datetime, error: str) -> Notification:
    """The notification after one more failed attempt: due again later, or abandoned after a day."""
    attempts = notification.attempts + 1
    again = now + retry_delay(attempts)
    if again - notification.created_at > GIVE_UP:
        return notification.evolve(attempts=attempts, status=Status.ABANDONED, last_error=error)
    return notification.evolve(attempts=attempts, next_attempt_at=again, last_error=error)


def after_success(notification: Notification, now: datetime) -> Notification:
    return notification.evolve(
        attempts=notification.attempts + 1, status=Status.DELIVERED, delivered_at=now, last_error=None
    )


@dataclass(frozen=True, slots=True)
class Plan:
    """What one delivery pass does: send `send` as they are, and fold each group of `fold` into its digest.

    A digest is itself a notification (sent and retried like any other, with a stable id); the members it
    folds are marked `digested` in the same write that stores it.
    """

    send: tuple[Notification, ...] = ()
    fold: tuple[tuple[Notification, tuple[Notification, ...]], ...] = ()


def plan(
    due: Sequence[Notification], sent_last_minute: Mapping[str, int], now: datetime, zone: ZoneInfo
) -> Plan:
    """Decides one pass over the `due` notifications, given each channel's sends in the last minute.

    Per channel, the notifications go one by one while the channel stays within FLOOD_LIMIT sends a minute.
    Past that, the new ones (not digests, which are sent as they are) become one digest, so a flood costs
    the receiver one message. With no send left this minute, they wait: the digest forms later.
    """
    send: list[Notification] = []
    fold: list[tuple[Notification, tuple[Notification, ...]]] = []
    for channel, group in _by_channel(due).items():
        room = FLOOD_LIMIT - sent_last_minute.get(channel, 0)
        digests = [item for item in group if item.transition == DIGEST]
        singles = [item for item in group if item.transition != DIGEST]
        ready = digests[: max(room, 0)]
        room -= len(ready)
        send.extend(ready)
        if not singles or room <= 0:
            continue
        if len(singles) <= room:
            send.extend(singles)
        else:
            fold.append((digest_of(singles, now, zone), tuple(singles)))
    return Plan(tuple(send), tuple(fold))


def digest_of(members: Sequence[Notification], now: datetime, zone: ZoneInfo) -> Notification:
    """One digest of `members` (one channel's): `{"id", "transition": "digest", "at", "items": [...]}`."""
    ids = sorted(member.id for member in members)
    id = "d_" + hashlib.sha256("\x00".join(ids).encode()).hexdigest()[:32]
    ordered = sorted(members, key=lambda member: (member.created_at, member.id))
    payload = {
        "id": id,
        "transition": DIGEST,
        "at": render(now, zone),
        "items": [dict(member.payload) for member in ordered],
    }
    return Notification(
        id=id,
        channel=members[0].channel,
        transition=DIGEST,
        payload=payload,
        created_at=now,
        next_attempt_at=now,
    )


def _by_channel(items: Iterable[Notification]) -> dict[str, list[Notification]]:
    grouped: dict[str, list[Notification]] = {}
    for item in sorted(items, key=lambda item: (item.next_attempt_at, item.created_at, item.id)):
        grouped.setdefault(item.channel, []).append(item)
    return grouped
