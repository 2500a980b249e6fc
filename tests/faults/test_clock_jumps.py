"""The wall clock jumps forward by an hour, and back by an hour, under a running node (DESIGN semantic 6).

No occurrence runs twice. Forward, the hour's occurrences were missed: `skip` runs none of them (the
next one fires on its grid), `coalesce` runs one catch-up for the latest, and a one-shot fires its late run.
Backward, nothing that already ran runs again: the node waits for the clock to pass what it last fired.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from conftest import BERLIN, Harness, at
from faketime import needs_faketime

from .helpers import cli, write_config

MINUTE = timedelta(minutes=1)


def passes(harness: Harness, start: datetime, end: datetime) -> None:
    """A pass a minute, as a serving node makes at each due instant, from `start` to `end` inclusive."""
    now = start
    while now <= end:
        harness.clock.set(now)
        harness.tick()
        now += MINUTE


def fired(harness: Harness) -> dict[str, list[str]]:
    """Each job's runs as "HH:MM" of their scheduled_for (Berlin), in the order they ran."""
    names = {job["id"]: job["name"] for job in harness.ok("list")["jobs"]}
    by_job: dict[str, list[str]] = {name: [] for name in names.values()}
    for call in harness.runner.calls:
        by_job[names[call.job_id]].append(call.scheduled_for.astimezone(BERLIN).strftime("%H:%M"))
    return by_job


def five_minutely(start: str, end: str) -> list[str]:
    first, last = datetime.strptime(start, "%H:%M"), datetime.strptime(end, "%H:%M")
    return [(first + k * 5 * MINUTE).strftime("%H:%M") for k in range((last - first) // (5 * MINUTE) + 1)]


def jobs(harness: Harness) -> None:
    harness.create("cron-skip", {"cron": "*/5 * * * *"})
    harness.create("cron-coalesce", {"cron": "*/5 * * * *"}, misfire="coalesce")
    harness.create("every-skip", {"every": "5m"})
    harness.create("every-coalesce", {"every": "5m"}, misfire="coalesce")
    harness.create("shot", run_at="2026-03-02T10:30:00+01:00")


def never_twice(harness: Harness) -> None:
    ids = Counter(harness.runner.fire_ids())
    assert max(ids.values()) == 1, ids
    runs = harness.ok("history", limit=1000)["runs"]
    assert (
        len(runs) == len(ids)
        and Counter((r["fire_id"], r["attempt"]) for r in runs).most_common(1)[0][1] == 1
    )


def test_a_jump_forward_by_an_hour_applies_the_misfire_policy_and_runs_nothing_twice(
    harness: Harness,
) -> None:
    jobs(harness)
    passes(harness, at("2026-03-02T09:00:00+01:00"), at("2026-03-02T10:00:00+01:00"))

    # The clock jumps an hour (and a bit) ahead between two passes: 10:05 to 11:00 were missed.
    harness.clock.set(at("2026-03-02T11:02:30+01:00"))
    reply = harness.tick()
    assert reply["fired"] == 3  # the two coalesce catch-ups, and the late one-shot
    passes(harness, at("2026-03-02T11:03:30+01:00"), at("2026-03-02T11:15:30+01:00"))

    before = five_minutely("09:05", "10:00")
    after = five_minutely("11:05", "11:15")
    assert fired(harness) == {
        "cron-skip": [*before, *after],  # none of the missed hour
        "cron-coalesce": [*before, "11:00", *after],  # one catch-up, for the latest missed
        "every-skip": [*before, *after],  # the grid holds: 11:05, not 11:07:30
        "every-coalesce": [*before, "11:00", *after],
        "shot": ["10:30"],  # a one-shot always fires its single late run
    }
    assert harness.job("cron-skip")["skipped"]["misfire"] == 12
    assert harness.job("cron-coalesce")["skipped"]["misfire"] == 11
    never_twice(harness)


def test_a_jump_back_by_an_hour_never_runs_again_what_already_ran(harness: Harness) -> None:
    jobs(harness)
    harness.create("early-shot", run_at="2026-03-02T09:30:00+01:00")
    passes(harness, at("2026-03-02T09:00:00+01:00"), at("2026-03-02T10:00:00+01:00"))
    ran_before = fired(harness)

    # The clock is set back an hour; the node keeps passing each minute until it is past 10:10 again.
    passes(harness, at("2026-03-02T09:00:30+01:00"), at("2026-03-02T10:10:30+01:00"))

    later = fired(harness)
    for name in ("cron-skip", "cron-coalesce", "every-skip", "every-coalesce"):
        assert later[name] == [*ran_before[name], "10:05", "10:10"], name
    assert later["early-shot"] == ["09:30"]  # done, and stays done
    assert later["shot"] == []  # still waits for 10:30
    assert harness.job("early-shot")["state"] == "done"
    assert all(job["skipped"]["misfire"] == 0 for job in harness.ok("list")["jobs"])
    never_twice(harness)


def test_a_jump_forward_while_a_run_is_in_flight_never_takes_the_live_run_for_dead(harness: Harness) -> None:
    gate = threading.Event()
    harness.runner.hold["slow"] = gate
    harness.create("slow", {"cron": "*/5 * * * *"}, misfire="coalesce")
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    assert harness.runner.started.wait(10)

    harness.clock.set(at("2026-03-02T11:02:30+01:00"))  # its lease looks an hour old now
    report = harness.node.run_pass()
    assert report.recovered == [] and report.fired == []  # its own run is alive: an overlap, not a death
    gate.set()
    harness.node.wait_for_runs()
    harness.clock.set(at("2026-03-02T11:05:00+01:00"))
    assert harness.tick()["fire_ids"] == ["1-2"]
    row = harness.job("slow")
    assert row["last_run"]["outcome"] == "ok" and row["skipped"]["overlap"] == 12
    assert [call.fire_id for call in harness.runner.calls] == ["1-1", "1-2"]


@needs_faketime
def test_the_real_binary_across_ticks_an_hour_apart_and_back(tmp_path: Path) -> None:
    """`faketime` moves the real binary's clock: a tick, a tick an hour later, then one back in time."""
    config = write_config(
        tmp_path,
        tmp_path / "cw.db",
        '[targets.note]\nkind = "command"\n[targets.note.actions.write]\nargv = ["true"]\n',
    )
    env = {"TZ": "UTC"}  # faketime reads its instants in the process zone

    def run(when: str, *argv: str) -> dict[str, object]:
        done = cli(config, *argv, "--json", env=env, faketime=when)
        assert done.returncode == 0, done.stderr
        reply: dict[str, object] = json.loads(done.stdout)
        return reply

    hourly = ["--target", "note", "--action", "write", "--cron", "0 * * * *"]
    run("2026-03-02 08:59:00", "add", "skip", *hourly)
    run("2026-03-02 08:59:00", "add", "coalesce", *hourly, "--misfire", "coalesce")
    assert run("2026-03-02 09:00:10", "tick")["fired"] == 2  # 10:00 Berlin, on time
    ahead = run("2026-03-02 10:02:30", "tick")  # an hour later: 11:00 was missed by 150 s
    assert (ahead["fired"], ahead["skipped"]) == (1, 1)
    assert run("2026-03-02 09:30:00", "tick")["fired"] == 0  # back to 10:30: nothing runs again

    runs = run("2026-03-02 09:30:00", "history", "--limit", "100")["runs"]
    assert isinstance(runs, list)
    seen = sorted((run_["schedule"], run_["scheduled_for"], run_["outcome"]) for run_ in runs)
    assert seen == [
        ("coalesce", "2026-03-02T10:00:00+01:00", "ok"),
        ("coalesce", "2026-03-02T11:00:00+01:00", "ok"),
        ("skip", "2026-03-02T10:00:00+01:00", "ok"),
    ]
