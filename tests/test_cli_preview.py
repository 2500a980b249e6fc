"""`cronwright preview`: the normalized expression, its explanation, its zone and its next firings.

It asks the protocol like every verb, so a bad expression, zone or instant is a refusal (exit 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronwright.fronts.cli import cli

SCRIPT = Path(sys.executable).with_name("cronwright")


@pytest.fixture(autouse=True)
def _berlin_host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    # The node zone defaults to the host's; pin it, and keep any config file out of reach.
    monkeypatch.setenv("TZ", "Europe/Berlin")
    monkeypatch.delenv("CRONWRIGHT_CONFIG", raising=False)
    # Without a config the store is the built-in default under $XDG_DATA_HOME: keep it in tmp_path.
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["preview", *args])


def firing_lines(output: str) -> list[str]:
    """The instants shown, one a line, in order."""
    found = []
    for line in output.splitlines():
        words = line.split()
        if words and words[-1][:4].isdigit() and "T" in words[-1]:
            found.append(words[-1])
    return found


def test_human_output_shows_expression_meaning_zone_and_one_firing_a_line() -> None:
    # Berlin, 2026-03-29T01:00:00Z: 02:00+01:00 becomes 03:00+02:00.
    result = run(
        "30  2 * * *", "--tz", "Europe/Berlin", "--after", "2026-03-28T00:00:00+01:00", "--count", "3"
    )
    assert result.exit_code == 0, result.output
    assert "30 2 * * *" in result.stdout
    assert "At 02:30 every day" in result.stdout
    assert "Europe/Berlin" in result.stdout
    assert firing_lines(result.stdout) == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_json_output_is_exactly_the_preview() -> None:
    result = run(
        "@daily", "--tz", "America/Havana", "--after", "2026-03-07T12:00:00-05:00", "--count", "2", "--json"
    )
    assert result.exit_code == 0, result.output
    # Havana, 2026-03-08T05:00:00Z: 00:00-05:00 becomes 01:00-04:00.
    assert json.loads(result.stdout) == {
        "expression": "0 0 * * *",
        "explanation": "At 00:00 every day",
        "tz": "America/Havana",
        "firings": ["2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"],
    }


def test_the_zone_defaults_to_the_node_zone() -> None:
    result = run("0 3 * * *", "--after", "2026-05-01T00:00:00Z", "--count", "1", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tz"] == "Europe/Berlin"
    assert json.loads(result.stdout)["firings"] == ["2026-05-01T03:00:00+02:00"]


def test_an_offset_less_after_is_wall_time_in_the_zone() -> None:
    result = run(
        "0 * * * *", "--tz", "Europe/Berlin", "--after", "2026-05-01T10:30", "--count", "1", "--json"
    )
    assert json.loads(result.stdout)["firings"] == ["2026-05-01T11:00:00+02:00"]


def test_after_defaults_to_now() -> None:
    before = datetime.now(UTC)
    result = run("* * * * * *", "--count", "2")
    assert result.exit_code == 0, result.output
    shown = [datetime.fromisoformat(text) for text in firing_lines(result.stdout)]
    assert len(shown) == 2 and before < shown[0] < shown[1]


def test_count_sets_how_many_firings() -> None:
    result = run("*/5 * * * *", "--after", "2026-05-01T00:00:00Z", "--count", "7")
    assert len(firing_lines(result.stdout)) == 7


@pytest.mark.parametrize(
    ("args", "field", "expected"),
    [
        (["0 0 30 2 *"], "EXPR", "February has no 30th"),
        (["61 * * * *"], "EXPR", "minute field '61' is out of range 0-59"),
        (["*/1000000 * * * *"], "EXPR", "step"),
        (["not cron"], "EXPR", "has 2 fields"),
        (["@daily", "--tz", "Mars/Base"], "--tz", "unknown time zone 'Mars/Base'"),
        (["@daily", "--after", "yesterday"], "--after", "not an ISO-8601 instant"),
    ],
)
def test_bad_input_is_a_refusal_on_one_line_of_stderr_and_exit_1(
    args: list[str], field: str, expected: str
) -> None:
    result = run(*args)
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cronwright: refused: invalid ({field}): "), lines
    assert expected in lines[0]


@pytest.mark.parametrize("count", ["0", "1001", "x"])
def test_a_bad_count_is_a_usage_error(count: str) -> None:
    result = run("@daily", "--count", count)
    assert result.exit_code == 2
    assert "count" in result.stderr


def test_the_installed_script_previews_and_refuses(tmp_path: Path) -> None:
    env = {**os.environ, "TZ": "Europe/Berlin", "XDG_DATA_HOME": str(tmp_path)}
    env.pop("CRONWRIGHT_CONFIG", None)
    args = ["preview", "45 * * * *", "--tz", "Australia/Lord_Howe", "--after", "2026-04-05T01:00:00+11:00"]
    done = subprocess.run(
        [SCRIPT, *args, "--count", "3", "--json"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    # Lord Howe, 2026-04-04T15:00:00Z: 02:00+11:00 becomes 01:30+10:30, so 01:45 comes twice.
    assert json.loads(done.stdout)["firings"] == [
        "2026-04-05T01:45:00+11:00",
        "2026-04-05T01:45:00+10:30",
        "2026-04-05T02:45:00+10:30",
    ]
    refused = subprocess.run(
        [SCRIPT, "preview", "0 0 30 2 *"], capture_output=True, text=True, env=env, check=False
    )
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "cronwright: refused: invalid (EXPR): cron expression '0 0 30 2 *' can never fire: "
        "February has no 30th (L means the last day of the month)"
    ]
