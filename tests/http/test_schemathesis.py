"""schemathesis, every check, over every operation of /openapi.json, against a real `cronwright serve`.

Bounded: a fixed seed, 20 examples per operation and phase, one worker, and a time limit. The node's
config has the target and the calendar the models' examples name (reports.daily, holidays), so that
requests made from the document alone can succeed: the run must find no failure, and must create schedules.

One setting departs from the defaults: a schema-valid request may get 400. The document declares the
shape of each request (types, ranges, no unknown fields), and the server refuses whatever breaks it; what
a value means is the service's to check and cannot be written in JSON Schema (a cron expression that can
fire, a zone that exists, a duration, `schedule` or `run_at` but not both), and a request that breaks
that gets 400 `invalid` naming the field, as the document's 400 response says.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from test_http_serve import serving

from serving import TOKENS, sha256

SCHEMATHESIS = str(Path(sys.executable).with_name("st"))
EXAMPLES = 20
CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]
"""


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "cronwright.toml"
    path.write_text(
        f"""
[node]
zone = "Europe/Berlin"
store = "sqlite:///{tmp_path / "cw.db"}"
listen = "127.0.0.1:0"
shutdown_grace = "5s"

[targets.reports]
kind = "command"
[targets.reports.actions.daily]
argv = ["/bin/true"]

[calendars.holidays]
dates = ["2026-12-24"]

[sources.agent]
token_sha256 = "{sha256(TOKENS["agent"])}"
targets = ["reports.*"]
""",
        encoding="utf-8",
    )
    return path


def test_schemathesis_finds_no_failure_and_creates_schedules(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    settings = tmp_path / "schemathesis.toml"
    settings.write_text(CONFIG, encoding="utf-8")
    with serving(write_config(tmp_path)) as (_, url):
        run = subprocess.run(
            [
                SCHEMATHESIS, "--config-file", str(settings), "run", f"{url}/openapi.json", "--checks", "all",
                "--max-examples", str(EXAMPLES), "--seed", "1", "--workers", "1", "--no-shrink",
                "--continue-on-failure", "--phases", "examples,coverage,fuzzing",
                "--header", f"Authorization: Bearer {TOKENS['agent']}",
                "--report", "json", "--report-json-path", str(report_path),
            ],
            capture_output=True, text=True, timeout=240, cwd=tmp_path, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    report = json.loads(report_path.read_text(encoding="utf-8"))
    with sqlite3.connect(tmp_path / "cw.db") as db:
        # The highest id ever handed out (AUTOINCREMENT): how many creates were accepted.
        created = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()

    assert report["failures"] == [] and report["errors"] == [], run.stdout[-6000:]
    assert run.returncode == 0, run.stdout[-6000:]
    assert report["operations"]["tested"] == report["operations"]["total"] == 9  # /mcp and /v1/audit too
    assert report["test_cases"]["generated"] >= 500, report["test_cases"]
    assert created is not None and created[0] >= 1, "no create_job was accepted"
    print(f"schemathesis: {report['test_cases']}, creates accepted: {created[0]}")  # noqa: T201
