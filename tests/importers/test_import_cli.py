"""`cronwright import`, black-box: the real binary imports a crontab and a CronJob into a fresh config, and
`tick` under faketime fires the seeds at exactly the instants `--compare` printed, on both DST nights of
Europe/Berlin; `--apply` twice creates once. Instants in the `at=` arguments are when each process starts."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from cli.blackbox import CRONWRIGHT, Cronwright, needs_faketime

pytestmark = needs_faketime


@pytest.fixture
def cw(tmp_path: Path) -> Cronwright:
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    return Cronwright(tmp_path)


def sources(cw: Cronwright) -> tuple[Path, Path]:
    """A crontab and a CronJob, both at 02:30 Berlin time, each appending its run to cw's fires log."""
    record = f'echo "$CRONWRIGHT_FIRE_ID $CRONWRIGHT_ATTEMPT" >> {shlex.quote(str(cw.log))}'
    table = cw.folder / "table"
    table.write_text(f"CRON_TZ=Europe/Berlin\n30 2 * * * {record}\n", encoding="utf-8")
    manifest = cw.folder / "jobs.yaml"
    manifest.write_text(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n"
        '  schedule: "30 2 * * *"\n  timeZone: Europe/Berlin\n  concurrencyPolicy: Forbid\n'
        "  jobTemplate: {spec: {template: {spec: {containers: [{name: a, image: b, command: "
        f"[/bin/sh, -c, {shlex.quote(record)}]}}]}}}}}}}}\n",
        encoding="utf-8",
    )
    return table, manifest


def imported(cw: Cronwright, fmt: str, source: Path, after: str) -> dict[str, Any]:
    result = cw.run("import", fmt, str(source), "--compare", "--after", after, "--json")
    assert result.rc == 0, result.stderr
    return result.json()


def scheduled(cw: Cronwright, at: str) -> list[str]:
    runs = cw.json("history", at=at)["runs"]
    return sorted(run["scheduled_for"] for run in runs)


def test_seeds_fire_where_compare_said_on_the_spring_forward_night(cw: Cronwright) -> None:
    table, manifest = sources(cw)
    cron = imported(cw, "crontab", table, "2026-03-28T12:00:00+01:00")
    k8s = imported(cw, "kubernetes", manifest, "2026-03-28T12:00:00+01:00")
    (cron_compare,) = cron["compare"]
    (k8s_compare,) = k8s["compare"]
    # 02:30 does not exist that night: cronwright (cronie's rule) fires at 03:00, and croniter agrees.
    assert cron_compare["next"][:2] == ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
    assert k8s_compare["next"][:2] == cron_compare["next"][:2]
    assert (cron_compare["differences"], k8s_compare["differences"]) == (1, 1)  # the autumn night, below
    cw.config.write_text(cw.config.read_text() + cron["config"] + k8s["config"], encoding="utf-8")
    assert cw.run("check").rc == 0

    assert cw.tick(at="2026-03-29T01:00:00+01:00")["fired"] == 0  # boot: the seeds are created
    assert cw.tick(at="2026-03-29T03:00:05+02:00")["fired"] == 2
    assert scheduled(cw, at="2026-03-29T03:01:00+02:00") == ["2026-03-29T03:00:00+02:00"] * 2
    assert cw.tick(at="2026-03-30T02:30:05+02:00")["fired"] == 2
    assert len(cw.fires()) == 4


def test_the_fall_back_night_fires_once_where_compare_flagged_the_source_firing_twice(cw: Cronwright) -> None:
    table, manifest = sources(cw)
    k8s = imported(cw, "kubernetes", manifest, "2026-10-24T12:00:00+02:00")
    cron = imported(cw, "crontab", table, "2026-10-24T12:00:00+02:00")
    for reply in (k8s, cron):
        (compared,) = reply["compare"]
        assert compared["next"][:2] == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
        assert compared["differ"] == [
            {"at": "2026-10-25T02:30:00+01:00", "source": True, "cronwright": False}
        ]
    cw.config.write_text(cw.config.read_text() + cron["config"] + k8s["config"], encoding="utf-8")

    assert cw.tick(at="2026-10-25T01:00:00+02:00")["fired"] == 0
    assert cw.tick(at="2026-10-25T02:30:05+02:00")["fired"] == 2
    assert cw.tick(at="2026-10-25T02:30:05+01:00")["fired"] == 0  # the repeated 02:30: once, as printed
    assert scheduled(cw, at="2026-10-25T03:00:00+01:00") == ["2026-10-25T02:30:00+02:00"] * 2


def test_apply_twice_creates_once_and_a_dry_run_creates_nothing(cw: Cronwright) -> None:
    table, manifest = sources(cw)
    at = "2026-05-04T10:00:00+02:00"
    lacking = cw.run("import", "crontab", str(table), "--apply", at=at)
    assert lacking.rc == 1 and "the config lacks [targets.crontab-table]" in lacking.stderr
    targets = "".join(
        imported(cw, fmt, path, at)["config"].split("\n# from ")[0] + "\n"
        for fmt, path in (("crontab", table), ("kubernetes", manifest))
    )
    cw.config.write_text(cw.config.read_text() + targets, encoding="utf-8")

    dry = cw.run("import", "kubernetes", str(manifest), "--apply", "--dry-run", "--json", at=at).json()
    assert [row["result"] for row in dry["applied"]] == ["would create"]
    assert cw.json("list", at=at)["jobs"] == []

    for fmt, path in (("crontab", table), ("kubernetes", manifest)):
        first = cw.run("import", fmt, str(path), "--apply", "--json", at=at).json()
        again = cw.run("import", fmt, str(path), "--apply", "--json", at=at).json()
        assert [row["result"] for row in first["applied"]] == ["created"]
        assert [row["result"] for row in again["applied"]] == ["deduped"]
    jobs = cw.json("list", at=at)["jobs"]
    assert sorted(job["dedupe_key"].split(":")[0] for job in jobs) == ["crontab-table", "kubernetes"]
    # The config path: the same input writes the same config, byte for byte.
    assert imported(cw, "crontab", table, at)["config"] == imported(cw, "crontab", table, at)["config"]
