"""Per-source limits: max_schedules, min_period and max_lifetime, each refused by name (issue 6)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from cronwright.clock import ManualClock
from serving import Live, bearer


def test_a_source_over_max_schedules_gets_quota_exceeded(live: Live) -> None:
    assert live.create("agent", "one").status_code == 200
    assert live.create("agent", "two").status_code == 200

    reply = live.create("agent", "three")

    assert reply.status_code == 403
    assert reply.json() == {
        "ok": False,
        "error": "quota_exceeded",
        "message": "source 'agent' already has 2 live schedules, its limit (max_schedules = 2); "
        "delete one first",
        "max_schedules": 2,
    }


def test_a_deleted_schedule_frees_its_slot(live: Live) -> None:
    live.create("agent", "one")
    live.create("agent", "two")
    assert live.call("agent", {"action": "delete", "name": "one"}).status_code == 200

    assert live.create("agent", "three").status_code == 200


def test_another_sources_schedules_do_not_count(live: Live) -> None:
    for name in ("theirs-1", "theirs-2", "theirs-3"):
        assert live.create("other", name).status_code == 200

    assert live.create("agent", "mine").status_code == 200


def test_concurrent_creates_never_pass_max_schedules(live: Live) -> None:
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda i: live.create("agent", f"racer-{i}"), range(8)))

    assert sorted(r.status_code for r in replies) == [200, 200, 403, 403, 403, 403, 403, 403]
    assert len(live.app.service.store.jobs()) == 2


def test_a_period_under_the_sources_min_period_gets_period_too_short(live: Live) -> None:
    reply = live.create("agent", "eager", schedule={"every": "1m"})

    assert reply.status_code == 403
    assert reply.json() == {
        "ok": False,
        "error": "period_too_short",
        "message": "a period of 1m is shorter than source 'agent's min_period of 5m; use at least 5m",
        "min_period": "5m",
    }


def test_a_period_at_the_sources_min_period_is_fine(live: Live) -> None:
    assert live.create("agent", "patient", schedule={"every": "5m"}).status_code == 200


def test_an_update_under_the_min_period_is_refused_too(live: Live) -> None:
    live.create("agent", "patient", schedule={"every": "5m"})

    reply = live.call(
        "agent", {"action": "update", "name": "patient", "changes": {"schedule": {"every": "30s"}}}
    )

    assert reply.status_code == 403
    assert reply.json()["error"] == "period_too_short"


def test_a_lifetime_over_the_sources_max_lifetime_gets_lifetime_too_long(live: Live) -> None:
    reply = live.create("agent", "forever", lifetime="60d")

    assert reply.status_code == 403
    body = reply.json()
    assert body["error"] == "lifetime_too_long"
    assert body["max_lifetime"] == "30d"
    assert body["message"] == (
        "lifetime '60d' ends at 2026-05-01T10:00:00+02:00, beyond the ceiling of 30d from now "
        "(2026-04-01T10:00:00+02:00): ask for at most 30d (source 'agent's max_lifetime)"
    )


def test_without_a_lifetime_a_source_gets_its_own_max_lifetime(live: Live) -> None:
    job = live.create("agent", "default-life").json()["job"]

    assert job["ends_at"] == "2026-04-01T10:00:00+02:00"


def test_the_node_ceiling_applies_to_a_source_without_limits(live: Live) -> None:
    reply = live.create("other", "long", lifetime="91d")

    assert reply.status_code == 403
    assert reply.json()["max_lifetime"] == "90d"
    assert reply.json()["message"].endswith("(the node's max_lifetime)")


def test_renewing_an_expired_schedule_counts_against_the_quota(live: Live) -> None:
    clock = live.app.node.clock
    assert isinstance(clock, ManualClock)
    live.create("agent", "short", lifetime="1d")
    live.create("agent", "long")
    clock.advance(timedelta(days=2))
    live.app.node.run_pass()
    assert live.http.get("/v1/jobs/short", headers=bearer("agent")).json()["job"]["state"] == "expired"
    assert live.create("agent", "third").status_code == 200  # the expired one no longer counts

    renewed = live.call("agent", {"action": "update", "name": "short", "changes": {"lifetime": "1d"}})

    assert renewed.status_code == 403
    assert renewed.json()["error"] == "quota_exceeded"
