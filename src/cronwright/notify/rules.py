"""Which channels a transition goes to: the `[[alert]]` rules, matched by target, source and name patterns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from zoneinfo import ZoneInfo

from cronwright.core.notifications import Alert, Notification, Transition, body, notification_id


@dataclass(frozen=True, slots=True)
class Rule:
    """One `[[alert]]`: the transitions it takes, optional glob patterns, and the channels it sends to.

    `target` matches `target.action` (so `backup.*` takes every action of `backup`), `source` the job's
    creator and `name` the job's name. A pattern is case-sensitive. An alert about no job (node_down,
    persistence_degraded) matches a rule only when the rule names no pattern, since it has nothing to match.
    """

    on: frozenset[Transition]
    notify: tuple[str, ...]
    target: str | None = None
    source: str | None = None
    name: str | None = None

    def matches(self, alert: Alert) -> bool:
        if alert.transition not in self.on:
            return False
        patterns = (self.target, self.source, self.name)
        job = alert.job
        if job is None:
            return all(pattern is None for pattern in patterns)
        values = (f"{job.target}.{job.action}", job.source, job.name)
        return all(
            pattern is None or fnmatchcase(value, pattern)
            for pattern, value in zip(patterns, values, strict=True)
        )


def channels_for(rules: Iterable[Rule], alert: Alert) -> list[str]:
    """The channels `alert` goes to, each once, in the order the rules first name them."""
    found: dict[str, None] = {}
    for rule in rules:
        if rule.matches(alert):
            found.update(dict.fromkeys(rule.notify))
    return list(found)


def notifications_for(rules: Sequence[Rule], alert: Alert, zone: ZoneInfo) -> list[Notification]:
    """One pending notification per matching channel, due at once (semantic 38)."""
    made = []
    for channel in channels_for(rules, alert):
        id = notification_id(alert.key, channel)
        made.append(
            Notification(
                id=id,
                channel=channel,
                transition=alert.transition.value,
                payload=body(alert, id, zone),
                created_at=alert.at,
                next_attempt_at=alert.at,
                job_id=alert.job.id if alert.job is not None else None,
            )
        )
    return made
