"""The timeline's lanes from protocol replies only (fronts/ui/timeline_feed.py), checked against the engine.

The clock starts on Wednesday 2027-03-24 at 12:00 in Berlin; the week ahead holds Berlin's spring-forward
(2027-03-28T02:00+01:00 becomes 03:00+02:00) and an excluded Saturday, 2027-03-27.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core import engine
from cronwright.core.calendars import Calendar, Calendars
from cronwright.core.sources import Source, operator
from cronwright.fronts.ui.timeline import Lane, Window
from cronwright.fronts.ui.timeline_feed import Ask, lanes
from cronwright.store.sqlite import SqliteStore

NOW = "2027-03-24T12:00:00+01:00"
DAYS = Calendars({"days": Calendar("days", frozenset({date(2027, 3, 27)}))})


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Harness]:
    made = make_harness(SqliteStore(tmp_path / "db"), ManualClock(at(NOW)), calendars=DAYS)
    yield made
    made.runner.close()


def asker(node: Harness, source: Source) -> Ask:
    async def ask(action: str, **fields: Any) -> dict[str, Any]:
        return node.protocol.dispatch({"action": action, **fields}, source)

    return ask


def feed(node: Harness, source: Source, days: int = 7) -> list[Lane]:
    start = at(NOW)
    window = Window(start, start + timedelta(days=days))
    rows = node.protocol.dispatch({"action": "list"}, source)["jobs"]
    return asyncio.run(lanes(asker(node, source), rows, window, node.node.settings.zone))


def test_a_week_of_a_jittered_daily_schedule_matches_the_engine(node: Harness) -> None:
    node.create("berlin", {"cron": "0 9 * * *", "tz": "Europe/Berlin", "jitter": "10m", "exclude": ["days"]})
    (lane,) = feed(node, operator())
    job = node.service.store.find("berlin")
    assert job is not None
    expected = [p for p in engine.ahead(job, 10, node.node.rules) if p.nominal < at(NOW) + timedelta(days=7)]
    # The protocol shows instants to the second; the walk past get's first five does the same.
    assert [(f.at, f.nominal, f.excluded) for f in lane.firings] == [
        (p.at.replace(microsecond=0), p.nominal, p.excluded) for p in expected
    ]
    nominals = [f.nominal.astimezone(lane_zone(lane)).isoformat() for f in lane.firings]
    assert nominals == [
        "2027-03-25T09:00:00+01:00",
        "2027-03-26T09:00:00+01:00",
        "2027-03-27T09:00:00+01:00",
        "2027-03-28T09:00:00+02:00",
        "2027-03-29T09:00:00+02:00",
        "2027-03-30T09:00:00+02:00",
        "2027-03-31T09:00:00+02:00",
    ]
    assert [f.excluded is not None for f in lane.firings] == [False, False, True, False, False, False, False]
    assert any(f.at != f.nominal for f in lane.firings)  # the jitter is there, beyond get's first five too
    (day,) = lane.excluded_days
    assert day.start == datetime(2027, 3, 26, 23, tzinfo=UTC)
    assert day.reason == "2027-03-27 is listed in calendar 'days'"


def lane_zone(lane: Lane) -> ZoneInfo:
    return ZoneInfo(lane.zone)


def test_an_every_schedule_walks_its_grid_and_stops_at_its_end(node: Harness) -> None:
    node.create("often", {"every": "6h"}, lifetime="2d")
    (lane,) = feed(node, operator())
    job = node.service.store.find("often")
    assert job is not None
    assert [f.nominal for f in lane.firings] == [p.nominal for p in engine.ahead(job, 50)]
    assert len(lane.firings) == 7  # 2 days of 6 hours after 12:00; none at the end, 12:00 two days on
    assert lane.zone == "Europe/Berlin"  # the node zone, in which an every schedule's dates are read


def test_a_source_gets_lanes_of_its_own_schedules_only(node: Harness) -> None:
    mine = Source("alice", targets=("reports.*",))
    theirs = Source("bob", targets=("reports.*",))
    for source, name in ((mine, "a-job"), (theirs, "b-job")):
        reply = node.protocol.dispatch(
            {"action": "create_job", "job": {"name": name, "target": "reports", "action": "daily",
                                             "schedule": {"cron": "0 9 * * *"}}},
            source,
        )  # fmt: skip
        assert reply["ok"], reply
    assert [lane.name for lane in feed(node, mine)] == ["a-job"]
    # A row of another source's schedule, slipped in, gives no lane: its `get` is refused.
    bob_rows = node.protocol.dispatch({"action": "list"}, theirs)["jobs"]
    start = at(NOW)
    got = asyncio.run(
        lanes(asker(node, mine), bob_rows, Window(start, start + timedelta(days=1)), node.node.settings.zone)
    )
    assert got == []


def test_paused_and_far_schedules_have_no_lane(node: Harness) -> None:
    node.create("paused", {"cron": "0 9 * * *"})
    node.ok("pause", name="paused")
    node.create("yearly", {"cron": "0 0 1 1 *"})
    assert feed(node, operator(), days=1) == []


def test_a_dense_schedule_is_cut_at_the_cap_and_says_so(node: Harness) -> None:
    node.create("minutely", {"cron": "* * * * *"})
    (lane,) = feed(node, operator(), days=1)
    assert lane.truncated and len(lane.firings) == 400
