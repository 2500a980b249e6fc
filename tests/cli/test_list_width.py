"""`cronwright list` fits 80 and 120 columns without cutting an instant; `--wide` and a pipe show it all."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from cronwright.fronts.listing import compact, lay_out

from .blackbox import TIMEOUT, Cronwright, needs_faketime

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)  # 09:30 in Berlin (UTC+01)


# --- the compact instant, pure ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instant", "shown"),
    [
        ("2026-03-02T10:00:00+01:00", "10:00"),
        ("2026-03-02T03:10:06+01:00", "03:10:06"),
        ("2026-03-03T03:00:00+01:00", "03-03 03:00"),
        ("2026-05-31T09:00:00+02:00", "05-31 09:00+02"),
        ("2027-01-10T00:00:00+01:00", "2027-01-10 00:00"),
        ("2026-03-02T07:00:00+00:00", "08:00"),
    ],
)
def test_a_compact_instant_leaves_out_only_what_it_shares_with_now(instant: str, shown: str) -> None:
    assert compact(instant, NOW, BERLIN) == shown


def test_the_offset_stays_when_it_is_not_nows_and_a_fraction_of_an_hour_is_kept() -> None:
    kolkata = ZoneInfo("Asia/Kolkata")
    assert compact("2026-03-02T14:00:00+05:30", NOW, kolkata) == "14:00"
    assert compact("2026-03-02T14:00:00+05:30", NOW, ZoneInfo("UTC")) == "08:30"
    summer = datetime(2026, 7, 1, 12, tzinfo=UTC)
    assert compact("2026-12-01T10:00:00+01:00", summer, BERLIN) == "12-01 10:00+01"
    assert compact("2026-12-01T10:00:00-05:00", summer, ZoneInfo("America/St_Johns")) == "12-01 11:30-03:30"


def row(name: str, **fields: object) -> dict[str, object]:
    return {
        "name": name,
        "target": "reports",
        "action": "daily",
        "schedule": {"cron": "0 7 * * MON-FRI", "tz": "Europe/Berlin"},
        "next_run_at": "2026-03-03T07:00:00+01:00",
        "last_run": {"fired_at": "2026-03-02T07:00:01+01:00", "outcome": "ok"},
        "ends_at": "2026-05-31T09:00:00+02:00",
        "state": "active",
        "paused_by": None,
        **fields,
    }


def test_the_richest_form_that_fits_wins_and_the_footer_names_what_was_left_out() -> None:
    rows = [row("reports-daily"), row("backup", state="paused", paused_by="breaker")]
    wide = lay_out(rows, NOW, BERLIN, None)
    assert wide.notes == []
    assert "  2026-03-03T07:00:00+01:00  " in wide.lines[1]
    assert "  ok (breaker)  " in wide.lines[2]

    roomy = lay_out(rows, NOW, BERLIN, 120)
    assert roomy.lines[0].split() == ["NAME", "RUNS", "SCHEDULE", "NEXT", "LEFT", "LAST", "RESULT", "ENDS",
                                      "STATE"]  # fmt: skip
    assert roomy.lines[1].split() == ["reports-daily", "reports.daily", "0", "7", "*", "*", "MON-FRI",
                                      "03-03", "07:00", "in", "21h", "30m", "07:00:01", "ok", "05-31",
                                      "09:00+02", "active"]  # fmt: skip
    assert roomy.notes == [
        "Times: Europe/Berlin, UTC+01 unless marked; --wide for ISO-8601.",
        "* paused by the breaker: `show NAME` says why.",
    ]
    narrow = lay_out(rows, NOW, BERLIN, 60)
    assert narrow.lines[0].split() == ["NAME", "SCHEDULE", "NEXT", "LEFT", "RESULT", "STATE"]
    assert narrow.notes[-1] == "Left out to fit 60 columns: RUNS, ENDS, LAST (--wide shows them)."
    assert all(len(line) <= 60 for line in narrow.lines)


def test_only_names_and_schedules_are_cut_and_never_an_instant() -> None:
    rows = [row("a-schedule-name-far-too-long-for-any-terminal", schedule={"cron": "0 7 1,15 * MON-FRI"})]
    shown = lay_out(rows, NOW, BERLIN, 56)
    assert all(len(line) <= 56 for line in shown.lines), shown.lines
    assert "…" in shown.lines[1]
    assert "03-03 07:00" in shown.lines[1]


# --- black-box: a realistic set of jobs at 80 and 120 columns ---------------------------------------------

T0 = "2026-03-02T02:55:00+01:00"
LOOK = "2026-03-02T09:30:00+01:00"


SEEDS = [
    ("nightly-backup", "log", 'schedule = { cron = "0 3 * * *" }'),
    ("reports-weekday", "log", 'schedule = { cron = "0 7 * * MON-FRI", tz = "America/New_York" }'),
    ("heartbeat", "log", 'schedule = { every = "5m" }\nlifetime = "7d"'),
    ("flaky-sync", "fail", 'schedule = { every = "15m" }\nbreaker_threshold = 1'),
    ("release-note", "log", 'run_at = "2026-03-03T12:00:00+01:00"'),
    ("db-vacuum", "log", 'schedule = { cron = "30 2 * * SUN" }\nlifetime = "2027-01-10T00:00:00+01:00"'),
]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Cronwright:
    """Six schedules of every kind, seeded at boot, two passes run, one paused by its breaker."""
    cw = Cronwright(tmp_path_factory.mktemp("list"), max_lifetime="400d")
    if not Path(cw.command()[0][0]).exists():
        pytest.skip("the cronwright binary is not installed")
    seeds = [
        f'[[seed]]\ndedupe_key = "{name}"\nname = "{name}"\ntarget = "sh"\naction = "{action}"\n{rest}\n'
        for name, action, rest in SEEDS
    ]
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + "\n" + "\n".join(seeds), encoding="utf-8")
    for at in (T0, "2026-03-02T03:00:05+01:00", "2026-03-02T03:10:05+01:00"):
        cw.tick(at=at)
    return cw


def listed(cw: Cronwright, *args: str, columns: int | None) -> str:
    argv, env = cw.command("list", *args, at=LOOK)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cw.folder, timeout=TIMEOUT)
    assert (done.returncode, done.stderr) == (0, ""), done
    return done.stdout


@needs_faketime
@pytest.mark.parametrize("columns", [80, 120])
def test_list_fits_the_width_and_shows_every_instant_it_keeps_complete(
    jobs: Cronwright, columns: int
) -> None:
    text = listed(jobs, columns=columns)
    lines = text.splitlines()
    assert all(len(line) <= columns for line in lines), "\n" + text
    header = lines[0].split()
    table = lines[1:7]
    names = [line.split()[0] for line in table]
    assert names == ["db-vacuum", "flaky-sync", "heartbeat", "nightly-backup", "release-note",
                     "reports-weekday"]  # fmt: skip
    # Each instant kept is there whole, exactly as the compact form of the reply's instant.
    assert "NEXT" in header
    reply = {job["name"]: job for job in jobs.json("list", at=LOOK)["jobs"]}
    now = datetime.fromisoformat(LOOK)
    for line in table:
        job = reply[line.split()[0]]
        # A held (paused) schedule fires nothing: its NEXT is "-" (tests/cli/test_held_words.py).
        upcoming = None if job["state"] in ("paused", "pending") else job["next_run_at"]
        wanted = {"NEXT": upcoming, "LAST": (job["last_run"] or {}).get("fired_at"),
                  "ENDS": job["ends_at"]}  # fmt: skip
        for column, instant in wanted.items():
            if column in header and instant is not None:
                assert f" {compact(instant, now, BERLIN)} " in f" {line} ", (column, line)
    assert "Times: Europe/Berlin, UTC+01 unless marked; --wide for ISO-8601." in lines


@needs_faketime
def test_list_at_120_keeps_ends_and_last_and_at_80_says_what_it_left_out(jobs: Cronwright) -> None:
    roomy = listed(jobs, columns=120).splitlines()
    assert {"LAST", "ENDS", "RESULT", "STATE"} <= set(roomy[0].split())
    narrow = listed(jobs, columns=80).splitlines()
    assert narrow[0].split() == ["NAME", "SCHEDULE", "NEXT", "LEFT", "RESULT", "STATE"]
    assert narrow[-1] == "Left out to fit 80 columns: RUNS, ENDS, LAST (--wide shows them)."
    assert "paused*" in next(line for line in narrow if line.startswith("flaky-sync"))


@needs_faketime
def test_wide_and_piped_list_show_every_column_and_full_iso_instants(jobs: Cronwright) -> None:
    wide = listed(jobs, "--wide", columns=80)
    assert wide == listed(jobs, columns=None), "piped without $COLUMNS is the wide form"
    lines = wide.splitlines()
    assert lines[0].split() == ["NAME", "RUNS", "SCHEDULE", "NEXT", "LEFT", "LAST", "RESULT", "ENDS", "STATE"]
    backup = next(line for line in lines if line.startswith("nightly-backup"))
    assert "2026-03-03T03:00:00+01:00" in backup and "2027-04-06T" in backup
    assert len(backup) > 120
