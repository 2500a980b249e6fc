"""A stored schedule that no longer reads, written in behind the service's back (DESIGN semantic 10).

The row still lists, with `next_run_at: null` and a `schedule_error` that says what is wrong; every other
row is answered as before; no pass crashes on it. It has no next occurrence, so at the instant it was armed
for the pass skips it and the job turns `failed`: it never runs on a guess. The other jobs keep firing.
"""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import Harness, at, make_harness
from cronwright.clock import ManualClock
from cronwright.core.sources import Source
from cronwright.node import drive
from cronwright.store.sqlite import SqliteStore

from .helpers import cli, edit_job_data, raw, write_config

DB = "cronwright.db"

# What a hand edit can leave in the row's schedule, and words the error must hold.
BROKEN: dict[str, tuple[dict[str, Any], str]] = {
    "an hour out of range": ({"cron": "0 99 * * *"}, "hour field '99' is out of range 0-23"),
    "words": ({"cron": "every morning at 9!"}, "contains '!'"),
    "too few fields": ({"cron": "0 10 *"}, "has 3 fields"),
    "a number": ({"cron": 42}, "expression 42 is not a string but a int"),
    "a macro cronsim cannot walk": ({"cron": "@daily"}, "not in the form cronwright stores ('0 0 * * *')"),
    "an impossible date": ({"cron": "0 10 30 2 *"}, "can never fire"),
    "an unknown zone": ({"tz": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
    "a zone that is no string": ({"tz": ["Europe/Berlin"]}, "must be a string naming a time zone"),
}


def fixture_jobs(harness: Harness) -> None:
    harness.create("a-every", {"every": "5m"})
    harness.create("b-broken", {"cron": "0 10 * * *"})
    harness.create("c-cron", {"cron": "*/10 * * * *"})
    harness.create("d-shot", run_at="2026-03-02T10:00:00+01:00")


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_row_whose_schedule_no_longer_reads_is_listed_with_its_error_and_never_fires(
    harness: Harness, tmp_path: Path, kind: str
) -> None:
    edit, words = BROKEN[kind]
    fixture_jobs(harness)
    before = {job["name"]: job for job in harness.ok("list")["jobs"]}
    edit_job_data(tmp_path / DB, "b-broken", **edit)

    listed = {job["name"]: job for job in harness.ok("list")["jobs"]}
    broken = listed.pop("b-broken")
    assert broken["next_run_at"] is None
    assert broken["state"] == "active"  # nothing has decided about it yet
    assert broken["schedule_error"].startswith("the stored schedule cannot be read: ")
    assert words in broken["schedule_error"]
    assert listed == {name: job for name, job in before.items() if name != "b-broken"}
    assert all(job["schedule_error"] is None for job in listed.values())
    assert harness.ok("get", name="b-broken")["job"] == broken
    json.dumps(broken)  # the row, whatever the stored value, is still JSON

    # A pass every five minutes for an hour, through the instant the broken job was armed for (10:00).
    for minutes in range(0, 61, 5):
        harness.clock.set(at("2026-03-02T09:00:00+01:00") + timedelta(minutes=minutes))
        harness.tick()
    fired = harness.runner.fire_ids()
    broken = harness.job("b-broken")
    assert broken["state"] == "failed" and broken["next_run_at"] is None
    assert words in broken["schedule_error"]
    assert broken["last_run"] is None and harness.ok("history", name="b-broken")["runs"] == []
    assert not [fire_id for fire_id in fired if fire_id.startswith(f"{broken['id']}-")]
    skipped = [e for e in harness.events.events if e.job_name == "b-broken"]
    assert [(e.kind.value, e.fields["reason"]) for e in skipped] == [("job_skipped", "schedule_error")]
    # The others kept firing: the every-5m job twelve times, the 10-minute cron six, the one-shot once.
    ids = {job["name"]: job["id"] for job in harness.ok("list")["jobs"]}
    assert [f for f in fired if f.startswith(f"{ids['a-every']}-")] == [
        f"{ids['a-every']}-{n}" for n in range(1, 13)
    ]
    assert len([f for f in fired if f.startswith(f"{ids['c-cron']}-")]) == 6
    assert harness.job("d-shot")["state"] == "done"
    assert len(fired) == len(set(fired))


@pytest.mark.parametrize("period_ms", [0, -60_000])
def test_an_every_schedule_edited_to_a_period_that_is_not_positive_fails_without_spinning(
    harness: Harness, tmp_path: Path, period_ms: int
) -> None:
    harness.create("every", {"every": "5m"})
    edit_job_data(tmp_path / DB, "every", every_ms=period_ms)
    row = harness.job("every")
    assert row["next_run_at"] is None and "is not positive" in row["schedule_error"]
    harness.clock.set(at("2026-03-02T09:05:00+01:00"))
    assert harness.tick()["fired"] == 0
    assert harness.job("every")["state"] == "failed"
    assert harness.runner.calls == []


def test_update_with_a_valid_schedule_repairs_a_broken_row_and_run_now_is_refused_until_then(
    harness: Harness, tmp_path: Path
) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    edit_job_data(tmp_path / DB, "daily", cron="0 25 * * *")

    refused = harness.call("run_now", name="daily")
    assert refused["ok"] is False and refused["error"] == "invalid" and refused["field"] == "schedule"
    assert "hour field '25'" in refused["message"] and "update it with a valid schedule" in refused["message"]
    assert harness.runner.calls == []

    repaired = harness.ok("update", name="daily", changes={"schedule": {"cron": "0 11 * * *"}})["job"]
    assert repaired["schedule_error"] is None
    assert repaired["next_run_at"] == "2026-03-02T11:00:00+01:00"
    harness.clock.set(at("2026-03-02T11:00:00+01:00"))
    assert harness.tick()["fired"] == 1


def test_a_schedule_broken_while_its_run_is_in_flight_ends_the_job_failed_after_the_run(
    harness: Harness, tmp_path: Path
) -> None:
    gate = threading.Event()
    harness.runner.hold["hourly"] = gate
    harness.create("hourly", {"cron": "0 * * * *"})
    harness.clock.set(at("2026-03-02T10:00:00+01:00"))
    harness.node.run_pass()
    assert harness.runner.started.wait(10)
    edit_job_data(tmp_path / DB, "hourly", cron="0 * * *")

    harness.clock.set(at("2026-03-02T11:00:00+01:00"))
    report = harness.node.run_pass()  # its next occurrence comes while it runs: an overlap, no walk
    assert report.fired == []
    gate.set()
    harness.node.wait_for_runs()
    harness.node.run_pass()
    row = harness.job("hourly")
    assert row["state"] == "failed" and row["next_run_at"] is None
    assert row["last_run"]["outcome"] == "ok"  # the run itself went well, and is in the history
    assert "has 4 fields" in row["schedule_error"]
    assert harness.runner.fire_ids() == ["1-1"]


def test_a_paused_job_with_a_broken_schedule_fails_when_resumed_and_never_runs(
    harness: Harness, tmp_path: Path
) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    harness.ok("pause", name="daily")
    edit_job_data(tmp_path / DB, "daily", cron="61 10 * * *")
    harness.clock.set(at("2026-03-03T12:00:00+01:00"))
    harness.tick()
    assert harness.job("daily")["state"] == "paused"
    harness.ok("resume", name="daily")
    assert harness.tick()["fired"] == 0
    assert harness.job("daily")["state"] == "failed"
    assert harness.runner.calls == []


def test_the_real_binary_lists_every_row_with_the_broken_one_among_them(tmp_path: Path) -> None:
    db = tmp_path / "data" / DB
    config = write_config(
        tmp_path, db, '[targets.note]\nkind = "command"\n[targets.note.actions.write]\nargv = ["true"]\n'
    )
    for name, cron in (("alpha", "0 9 * * *"), ("broken", "0 10 * * *"), ("omega", "0 11 * * *")):
        added = cli(config, "add", name, "--target", "note", "--action", "write", "--cron", cron)
        assert added.returncode == 0, added.stderr
    edit_job_data(db, "broken", cron="0 10 * * * * *")

    listed = cli(config, "list", "--json")
    table = cli(config, "list")

    assert listed.returncode == 0, listed.stderr
    rows = {job["name"]: job for job in json.loads(listed.stdout)["jobs"]}
    assert list(rows) == ["alpha", "broken", "omega"]
    assert rows["broken"]["next_run_at"] is None and "has 7 fields" in rows["broken"]["schedule_error"]
    assert rows["alpha"]["next_run_at"] is not None and rows["omega"]["schedule_error"] is None
    assert table.returncode == 0, table.stderr
    assert "broken" in table.stdout and "3 schedules" in table.stdout


# --- a row that cannot be read at all ------------------------------------------------------------------


def spoil(db: Path, name: str, data: str = '{"name": "half a rec') -> None:
    """Overwrites a row's JSON with something that does not parse, as a botched hand edit would."""
    with raw(db) as connection:
        connection.execute("UPDATE jobs SET data = ? WHERE name = ?", (data, name))


def test_a_row_that_cannot_be_read_is_left_out_and_every_other_job_keeps_firing(
    harness: Harness, tmp_path: Path
) -> None:
    fixture_jobs(harness)
    before = {job["name"]: job for job in harness.ok("list")["jobs"]}
    spoil(tmp_path / DB, "b-broken")

    listed = harness.ok("list")
    assert [job["name"] for job in listed["jobs"]] == ["a-every", "c-cron", "d-shot"]
    assert [row["id"] for row in listed["unreadable"]] == [before["b-broken"]["id"]]
    assert "cannot be read" in listed["unreadable"][0]["error"]
    assert harness.ok("status")["node"]["unreadable"] == listed["unreadable"]
    assert harness.call("get", name="b-broken")["error"] == "store_unavailable"  # asked for by name

    for minutes in range(0, 61, 5):
        harness.clock.set(at("2026-03-02T09:00:00+01:00") + timedelta(minutes=minutes))
        harness.tick()
    fired = harness.runner.fire_ids()
    ids = {name: job["id"] for name, job in before.items()}
    assert len([f for f in fired if f.startswith(f"{ids['a-every']}-")]) == 12
    assert len([f for f in fired if f.startswith(f"{ids['c-cron']}-")]) == 6
    assert harness.job("d-shot")["state"] == "done"
    assert not [f for f in fired if f.startswith(f"{ids['b-broken']}-")]


def test_unreadable_rows_due_first_never_use_up_a_passs_slots(tmp_path: Path) -> None:
    clock = ManualClock(at("2026-03-02T09:00:00+01:00"))
    harness = make_harness(SqliteStore(tmp_path / DB), clock, max_concurrency=2)
    for index in range(5):  # due at 09:30, before the good ones, and all spoiled
        harness.create(f"bad-{index}", run_at="2026-03-02T09:30:00+01:00")
        spoil(tmp_path / DB, f"bad-{index}")
    for index in range(3):
        harness.create(f"good-{index}", run_at="2026-03-02T10:00:00+01:00")
    clock.set(at("2026-03-02T10:00:00+01:00"))

    assert harness.tick()["fired"] == 3
    assert sorted(job["name"] for job in harness.ok("list", state="done")["jobs"]) == [
        "good-0", "good-1", "good-2"
    ]  # fmt: skip
    assert len(harness.ok("list")["unreadable"]) == 5
    harness.runner.close()


def test_a_repaired_row_is_read_again(harness: Harness, tmp_path: Path) -> None:
    harness.create("fixed", {"every": "5m"})
    with raw(tmp_path / DB) as connection:
        (good,) = connection.execute("SELECT data FROM jobs WHERE name = 'fixed'").fetchone()
    spoil(tmp_path / DB, "fixed")
    assert harness.ok("list")["jobs"] == []

    spoil(tmp_path / DB, "fixed", data=good)

    assert [job["name"] for job in harness.ok("list")["jobs"]] == ["fixed"]
    assert "unreadable" not in harness.ok("list")


def test_a_run_that_ends_while_its_row_cannot_be_read_is_recorded_once_the_row_is_back(
    harness: Harness, tmp_path: Path
) -> None:
    gate = threading.Event()
    harness.runner.hold["every"] = gate
    harness.create("every", {"every": "5m"})
    harness.clock.set(at("2026-03-02T09:05:00+01:00"))
    assert harness.node.run_pass().fired == ["1-1"]
    with raw(tmp_path / DB) as connection:  # the row as the claim left it: the backup to restore
        (good,) = connection.execute("SELECT data FROM jobs WHERE name = 'every'").fetchone()
    spoil(tmp_path / DB, "every")
    gate.set()
    harness.node.wait_for_runs()
    harness.clock.set(at("2026-03-02T09:06:00+01:00"))
    harness.node.run_pass()  # the outcome cannot be decided: it waits, and is not taken for a deleted job's
    assert harness.ok("history")["runs"] == []
    assert (
        drive.seconds_until_next_pass(harness.node) > 1
    )  # the unreadable running row is no peer lease to wait on

    spoil(tmp_path / DB, "every", data=good)
    harness.node.run_pass()

    assert [(run["fire_id"], run["outcome"]) for run in harness.ok("history")["runs"]] == [("1-1", "ok")]
    job = harness.job("every")
    assert (job["state"], job["next_run_at"]) == ("active", "2026-03-02T09:10:00+01:00")


def test_pages_read_past_a_row_that_cannot_be_read(harness: Harness, tmp_path: Path) -> None:
    for name in "abcd":
        harness.create(name, {"every": "5m"})
    spoil(tmp_path / DB, "b")

    first = harness.ok("list", limit=2)
    rest = harness.ok("list", limit=2, after_name=first["next_after_name"])

    assert ([job["name"] for job in first["jobs"]], first["next_after_name"]) == (["a", "c"], "c")
    assert [job["name"] for job in rest["jobs"]] == ["d"] and "next_after_name" not in rest


def test_a_once_key_whose_row_cannot_be_read_refuses_a_second_create(
    harness: Harness, tmp_path: Path
) -> None:
    spec = {
        "target": "reports",
        "action": "daily",
        "schedule": {"every": "5m"},
        "dedupe_key": "K",
        "once": True,
    }
    harness.ok("create_job", job={"name": "first", **spec})
    spoil(tmp_path / DB, "first")

    reply = harness.call("create_job", job={"name": "second", **spec})

    assert reply["error"] == "store_unavailable"  # never a second "once"
    assert "cannot be read" in reply["message"]


def test_a_broken_row_removed_by_hand_is_no_longer_reported(harness: Harness, tmp_path: Path) -> None:
    harness.create("gone", {"every": "5m"})
    spoil(tmp_path / DB, "gone")
    assert len(harness.ok("list")["unreadable"]) == 1

    with raw(tmp_path / DB) as connection:
        connection.execute("DELETE FROM jobs WHERE name = 'gone'")

    assert "unreadable" not in harness.ok("list")
    assert harness.ok("status")["node"]["unreadable"] == []


def test_the_operator_deletes_a_row_that_cannot_be_read_by_its_id(harness: Harness, tmp_path: Path) -> None:
    kept = harness.create("kept", {"every": "5m"})
    broken = harness.create("broken", {"every": "5m"})
    spoil(tmp_path / DB, "broken")
    agent = Source("agent", targets=("reports.*",))
    by_agent = harness.protocol.dispatch({"action": "delete", "job_id": broken["id"]}, agent)
    assert by_agent["error"] == "store_unavailable"  # whose it is cannot be told: only the operator
    assert harness.call("delete", name="broken")["error"] == "store_unavailable"  # by id only

    gone = harness.ok("delete", job_id=broken["id"])

    assert gone["job"]["id"] == broken["id"] and "cannot be read" in gone["job"]["error"]
    assert gone["persistence"] == "persisted"
    listed = harness.ok("list")
    assert [job["name"] for job in listed["jobs"]] == ["kept"] and "unreadable" not in listed
    assert harness.call("delete", job_id=broken["id"])["error"] == "not_found"
    assert harness.create("broken", {"every": "5m"})["id"] not in (kept["id"], broken["id"])  # name free
