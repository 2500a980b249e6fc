"""The Prometheus rules docs/alerts.md ships: valid for promtool, and firing on series from a real node."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from serving import Live, bearer

from .test_gauges import Samples, scrape

DOC = Path(__file__).resolve().parents[2] / "docs" / "alerts.md"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (Debian package `prometheus`; .ci/run installs it)"
)


def shipped_rules(folder: Path) -> Path:
    [block] = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    path = folder / "cronwright.rules.yml"
    path.write_text(block)
    return path


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, check=False)


@needs_promtool
def test_promtool_accepts_the_shipped_rules(tmp_path: Path) -> None:
    done = promtool("check", "rules", str(shipped_rules(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 3 rules found" in done.stdout


def series(seen: Samples, metric: str, now: float, shift: bool) -> list[dict[str, str]]:
    """The scraped samples of `metric` as promtool input series, held for an hour. Timestamps are moved to
    promtool's clock (its test starts at 0 s) with the scrape at 0, so ages stay what the node said."""
    found = []
    for (name, labels), value in seen.items():
        if name != metric:
            continue
        picked = ",".join(f'{key}="{text}"' for key, text in (*labels, ("instance", "node-a")))
        start = value - now if shift else value
        found.append({"series": f"{metric}{{{picked}}}", "values": f"{start:g}+0x60"})
    assert found, f"the node exported no {metric}"
    return found


@needs_promtool
def test_the_rules_fire_on_a_real_nodes_series_once_it_stops(live: Live, tmp_path: Path) -> None:
    """A node whose every-5m job succeeded once and then stopped passing: five minutes later the node alert
    fires; past two periods (and the rule's 5 min `for`), the job alert too; persistence stays quiet."""
    assert live.create("agent", "five", schedule={"every": "5m"}).status_code == 200
    assert live.call("agent", {"action": "run_now", "name": "five"}).status_code == 200
    live.app.node.wait_for_runs(30)
    live.app.node.run_pass()
    now = live.app.node.clock.now().timestamp()
    seen = scrape(live.http.get("/metrics", headers=bearer("agent")).text)
    assert seen[
        (
            "cronwright_job_last_run_outcome",
            (("name", "five"), ("outcome", "ok"), ("target", "reports.daily")),
        )
    ]
    inputs = [
        *series(seen, "cronwright_job_last_success_timestamp_seconds", now, shift=True),
        *series(seen, "cronwright_job_period_seconds", now, shift=False),
        *series(seen, "cronwright_last_pass_timestamp_seconds", now, shift=True),
        *series(seen, "cronwright_store_degraded", now, shift=False),
    ]
    job = {
        "exp_labels": {
            "instance": "node-a",
            "name": "five",
            "target": "reports.daily",
            "severity": "warning",
        },
        "exp_annotations": {
            "summary": "cronwright job five has not succeeded within two of its periods",
            "description": "five (reports.daily) has no ok run in twice its period;"
            " see its history with `cronwright history five`.",
        },
    }
    stuck = {
        "exp_labels": {"instance": "node-a", "severity": "critical"},
        "exp_annotations": {
            "summary": "cronwright node node-a has not finished a scheduling pass in five minutes"
        },
    }
    degraded = {
        "exp_labels": {"instance": "node-a", "severity": "critical"},
        "exp_annotations": {"summary": "cronwright on node-a cannot save: jobs wait in memory"},
    }
    tests = {
        "rule_files": [str(shipped_rules(tmp_path))],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "4m", "alertname": "CronwrightNodeNotPassing", "exp_alerts": []},
                    {
                        "eval_time": "6m",
                        "alertname": "CronwrightNodeNotPassing",
                        "exp_alerts": [stuck],
                    },
                    {"eval_time": "12m", "alertname": "CronwrightJobNoRecentSuccess", "exp_alerts": []},
                    {
                        "eval_time": "17m",
                        "alertname": "CronwrightJobNoRecentSuccess",
                        "exp_alerts": [job],
                    },
                    {"eval_time": "30m", "alertname": "CronwrightPersistenceDegraded", "exp_alerts": []},
                ],
            },
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": 'cronwright_store_degraded{instance="node-a"}',
                        "values": "0 0 1 1 1 1 0",
                    }
                ],
                "alert_rule_test": [
                    {"eval_time": "2m", "alertname": "CronwrightPersistenceDegraded", "exp_alerts": []},
                    {
                        "eval_time": "3m",
                        "alertname": "CronwrightPersistenceDegraded",
                        "exp_alerts": [degraded],
                    },
                    {"eval_time": "6m", "alertname": "CronwrightPersistenceDegraded", "exp_alerts": []},
                ],
            },
        ],
    }
    file = tmp_path / "cronwright.tests.yml"
    file.write_text(json.dumps(tests))  # JSON is YAML
    done = promtool("test", "rules", str(file))
    assert done.returncode == 0, done.stdout + done.stderr
