"""/metrics: Prometheus counters from the events, and gauges read at scrape time."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

import cronwright
from cronwright.core.model import Outcome, State
from cronwright.fronts.http.listen import parse_listen
from serving import Live, bearer


def samples(live: Live) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = live.http.get("/metrics", headers=bearer("agent"))
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(reply.text)
        for sample in family.samples
    }


def test_metrics_count_jobs_by_state_and_runs_in_flight(live: Live) -> None:
    live.create("agent", "one")
    live.create("agent", "two")
    live.call("agent", {"action": "pause", "name": "two"})

    seen = samples(live)

    assert seen[("cronwright_jobs", (("state", "active"),))] == 1
    assert seen[("cronwright_jobs", (("state", "paused"),))] == 1
    assert seen[("cronwright_jobs", (("state", "expired"),))] == 0
    assert seen[("cronwright_runs_in_flight", ())] == 0


def test_metrics_count_runs_by_outcome_with_their_duration(live: Live) -> None:
    live.create("agent", "one")
    assert live.call("agent", {"action": "run_now", "name": "one"}).status_code == 200
    live.app.node.wait_for_runs(30)

    seen = samples(live)

    assert seen[("cronwright_runs_total", (("outcome", "ok"),))] == 1
    assert seen[("cronwright_run_duration_seconds_count", (("outcome", "ok"),))] == 1
    assert seen[("cronwright_run_duration_seconds_sum", (("outcome", "ok"),))] == 0.001
    assert seen[("cronwright_run_duration_seconds_bucket", (("le", "0.05"), ("outcome", "ok")))] == 1


def test_metrics_expose_persistence_failures_and_breaker_pauses(live: Live) -> None:
    seen = samples(live)

    assert seen[("cronwright_persistence_failures_total", ())] == 0
    assert seen[("cronwright_breaker_pauses_total", ())] == 0
    assert seen[("cronwright_expirations_total", ())] == 0


def test_listen_addresses_parse_with_their_port() -> None:
    assert parse_listen("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_listen("[::1]:0") == ("::1", 0)
    assert parse_listen("localhost:80") == ("localhost", 80)


def test_metrics_name_the_build_and_say_how_the_store_and_the_leases_stand(live: Live) -> None:
    node = live.app.node
    node.store.beat(node.id, node.clock.now())  # as a pass does
    seen = samples(live)

    [(labels, value)] = [(dict(key[1]), v) for key, v in seen.items() if key[0] == "cronwright_build_info"]
    assert value == 1 and labels["version"] == cronwright.__version__ and labels["python"]
    assert labels["build"] == "unknown build"  # a source tree; a wheel names its commit (.ci/wheel-check)
    assert seen[("cronwright_store_up", ())] == 1
    assert seen[("cronwright_store_degraded", ())] == 0
    assert seen[("cronwright_leases_expired", ())] == 0
    assert seen[("cronwright_due_lateness_seconds", ())] == 0
    beat = seen[("cronwright_node_last_beat_timestamp_seconds", (("node", node.id),))]
    assert beat == node.store.beats()[0].beat_at.timestamp()


def test_every_labelled_counter_starts_at_0_and_no_created_series_is_exposed(live: Live) -> None:
    reply = live.http.get("/metrics", headers=bearer("agent"))
    families = {family.name: family for family in text_string_to_metric_families(reply.text)}
    seen = samples(live)

    for outcome in Outcome:
        assert seen[("cronwright_runs_total", (("outcome", outcome.value),))] == 0
        assert seen[("cronwright_run_duration_seconds_count", (("outcome", outcome.value),))] == 0
    for reason in ("misfire", "overlap", "schedule_error"):
        assert seen[("cronwright_skips_total", (("reason", reason),))] == 0
    for state in State:
        assert seen[("cronwright_jobs", (("state", state.value),))] == 0
    assert not [name for name in families if name.endswith("_created")]
    assert not [name for name, _ in seen if name.endswith("_created")]
