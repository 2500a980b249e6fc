"""The per-job and per-node series that alert rules use (semantic 39), read from the store at scrape time."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from conftest import Harness, at
from cronwright.core.model import Outcome
from cronwright.notify.gauges import AlertGauges
from semantics.test_durability import failing_writes
from serving import Live, bearer

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(text: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def gauges(harness: Harness, limit: int = 10_000) -> Samples:
    registry = CollectorRegistry()
    node, store = harness.node, harness.node.store
    registry.register(AlertGauges(store, lambda: node.last_pass_at, limit, lambda: store.persistence))
    return scrape(generate_latest(registry).decode())


LABELS = (("name", "five"), ("target", "reports.daily"))


def test_a_job_shows_its_next_run_and_period_before_it_ever_ran(harness: Harness) -> None:
    harness.create("five", {"every": "5m"})
    seen = gauges(harness)
    assert (
        seen[("cronwright_job_next_run_timestamp_seconds", LABELS)]
        == at("2026-03-02T09:05:00+01:00").timestamp()
    )
    assert seen[("cronwright_job_period_seconds", LABELS)] == 300
    assert ("cronwright_job_last_success_timestamp_seconds", LABELS) not in seen


def test_last_success_survives_a_failure_and_the_outcome_follows_the_last_run(harness: Harness) -> None:
    harness.create("five", {"every": "5m"})
    harness.runner.outcomes["five"] = [Outcome.OK, Outcome.ERROR]
    harness.clock.set(at("2026-03-02T09:05:00+01:00"))
    harness.tick()
    first = gauges(harness)
    ok_at = at("2026-03-02T09:05:00+01:00").timestamp() + 0.001  # the scripted run took 1 ms
    assert first[("cronwright_job_last_success_timestamp_seconds", LABELS)] == ok_at
    assert first[("cronwright_job_last_run_outcome", tuple(sorted((*LABELS, ("outcome", "ok")))))] == 1

    harness.clock.set(at("2026-03-02T09:10:00+01:00"))
    harness.tick()
    later = gauges(harness)
    assert later[("cronwright_job_last_success_timestamp_seconds", LABELS)] == ok_at
    assert later[("cronwright_job_last_run_outcome", tuple(sorted((*LABELS, ("outcome", "error")))))] == 1
    assert ("cronwright_job_last_run_outcome", tuple(sorted((*LABELS, ("outcome", "ok"))))) not in later


def test_a_cron_jobs_period_is_the_gap_to_its_occurrence_after_next(harness: Harness) -> None:
    harness.create("five", {"cron": "0 7 * * *", "tz": "Europe/Berlin"})
    assert gauges(harness)[("cronwright_job_period_seconds", LABELS)] == 86_400


def test_the_last_pass_is_when_the_node_last_finished_a_pass(harness: Harness) -> None:
    harness.clock.advance(timedelta(minutes=3))
    harness.node.run_pass()
    assert (
        gauges(harness)[("cronwright_last_pass_timestamp_seconds", ())]
        == at("2026-03-02T09:03:00+01:00").timestamp()
    )


def test_persistence_degraded_is_1_while_a_save_waits_in_memory(harness: Harness, tmp_path: Path) -> None:
    harness.create("five", {"every": "5m"})
    assert gauges(harness)[("cronwright_persistence_degraded", ())] == 0
    with failing_writes(tmp_path / "cronwright.db"):
        harness.ok("pause", name="five")
        assert gauges(harness)[("cronwright_persistence_degraded", ())] == 1
    harness.tick()
    assert gauges(harness)[("cronwright_persistence_degraded", ())] == 0


def test_per_job_series_are_bounded_to_the_first_jobs_by_id(harness: Harness) -> None:
    for name in ("c", "a", "b"):
        harness.create(name, {"every": "5m"})
    names = {
        dict(labels)["name"]
        for (metric, labels) in gauges(harness, limit=2)
        if metric == "cronwright_job_next_run_timestamp_seconds"
    }
    assert names == {"c", "a"}  # created first
    assert not any(metric.startswith("cronwright_job_") for metric, _ in gauges(harness, limit=0))


def test_metrics_over_http_carry_the_alerting_series(live: Live, tmp_path: Path) -> None:
    assert live.create("agent", "five").status_code == 200
    live.app.node.run_pass()
    seen = scrape(live.http.get("/metrics", headers=bearer("agent")).text)
    assert ("cronwright_job_next_run_timestamp_seconds", LABELS) in seen
    assert seen[("cronwright_last_pass_timestamp_seconds", ())] > 0
