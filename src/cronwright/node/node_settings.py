"""How a node is tuned: its grace, slots, leases and wake-ups, and the zone and calendars it reads in."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from zoneinfo import ZoneInfo

from cronwright.core.calendars import NO_CALENDARS, Calendars
from cronwright.core.leases import LEASE_BEAT, LEASE_TTL


@dataclass(frozen=True, slots=True)
class NodeSettings:
    misfire_grace: timedelta = timedelta(seconds=60)
    max_concurrency: int = 16
    shutdown_grace: timedelta = timedelta(seconds=30)
    # An idle node still wakes this often, to see changes made by processes that could not wake it
    # and to notice another node's death. Once a minute keeps `status` honest and costs nothing.
    safety_interval: timedelta = timedelta(seconds=60)
    # A node with runs in flight beats at least every `lease_beat`; one silent for `lease_ttl` is dead.
    lease_beat: timedelta = LEASE_BEAT
    lease_ttl: timedelta = LEASE_TTL
    # Audit entries older than this are dropped, by a pass at most once per AUDIT_PRUNE_EVERY.
    audit_retention: timedelta = timedelta(days=90)
    # The node zone (an `every` schedule's dates are read in it) and the calendars schedules may exclude.
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    calendars: Calendars = NO_CALENDARS
