"""A node's alerting: its rules and zone turn the transitions its decisions carry into the notifications it
writes with them (pure), and the store's own transitions into notifications (`StoreTransitions`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from cronwright.clock import Clock
from cronwright.core import detect
from cronwright.core.notifications import Alert, Notification
from cronwright.notify.rules import Rule, notifications_for

UTC_ZONE = ZoneInfo("UTC")


@dataclass(frozen=True, slots=True)
class Alerting:
    """The `[[alert]]` rules, and the zone instants are rendered in. No rule: no notification at all."""

    rules: Sequence[Rule] = ()
    zone: ZoneInfo = UTC_ZONE

    def notes(self, alerts: Iterable[Alert]) -> list[Notification]:
        """One notification per alert and matching channel (semantic 38)."""
        if not self.rules:
            return []
        return [note for alert in alerts for note in notifications_for(self.rules, alert, self.zone)]


class StoreTransitions:
    """`persistence_degraded` and `persistence_recovered` of one node (store/resilient.py's StoreAlerts)."""

    def __init__(self, alerting: Alerting, node: str, clock: Clock) -> None:
        self.alerting = alerting  # a reload replaces it (service/reloading.py)
        self._node = node
        self._clock = clock
        self._since: datetime | None = None

    def degraded(self) -> list[Notification]:
        self._since = self._clock.now()
        return self.alerting.notes([detect.persistence(True, self._node, self._since, self._since)])

    def recovered(self) -> list[Notification]:
        since = self._since or datetime.fromtimestamp(0, UTC)
        return self.alerting.notes([detect.persistence(False, self._node, since, self._clock.now())])
