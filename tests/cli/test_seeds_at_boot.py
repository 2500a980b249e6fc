"""Seeds at boot, black-box (issue 11, defects 1 and 2): the real binary's `tick` upserts the config's seeds
into a real SQLite file, its clock moved by faketime. DESIGN semantics 6 and 16.

Each `at=` is the instant the cronwright process starts at; instants are in Berlin time, the node zone.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from .blackbox import Cronwright, needs_faketime, utc

pytestmark = needs_faketime


def seed(cw: Cronwright, **fields: object) -> None:
    """Adds one [[seed]] of target sh, action log, to the config."""
    lines = ["", "[[seed]]", 'target = "sh"', 'action = "log"']
    lines += [f"{key} = {_toml(value)}" for key, value in fields.items()]
    with cw.config.open("a", encoding="utf-8") as config:
        config.write("\n".join(lines) + "\n")


def _toml(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml(item)}" for key, item in value.items()) + " }"
    return json.dumps(value)


def test_a_one_shot_seed_that_came_due_while_the_node_was_down_fires_its_late_run(cw: Cronwright) -> None:
    seed(cw, dedupe_key="launch", name="launch", run_at="2026-03-02T09:30:00+01:00")
    first = cw.tick(at="2026-03-02T09:00:00+01:00")
    assert first["fired"] == 0
    assert cw.show("launch", at="2026-03-02T09:00:10+01:00")["job"]["next_run_at"] == (
        "2026-03-02T09:30:00+01:00"
    )

    # The node is down from 09:00 to 10:00: the boot still succeeds, and the one-shot fires late, once.
    late = cw.run("tick", "--json", at="2026-03-02T10:00:00+01:00")
    assert late.rc == 0, late.stderr
    assert late.json()["fired"] == 1
    assert cw.fires() == [f"{late.json()['fire_ids'][0]} 1"]
    job = cw.show("launch", at="2026-03-02T10:01:00+01:00")["job"]
    assert (job["state"], job["last_run"]["outcome"]) == ("done", "ok")

    # A one-shot seed with a terminal row is a no-op: later boots neither fail nor fire it again.
    again = cw.run("tick", "--json", at="2026-03-03T10:00:00+01:00")
    assert (again.rc, again.json()["fired"]) == (0, 0), again.stderr
    assert len(cw.fires()) == 1


def test_a_one_shot_seed_long_past_that_its_store_never_knew_is_reported_and_skipped(cw: Cronwright) -> None:
    """A config copied to a new machine after a one-shot's instant still boots (semantic 16, last bullet;
    issue 35, defect 11): the seed is named on stderr, skipped, and nothing fires; the other seeds stand."""
    seed(cw, dedupe_key="launch", name="launch", run_at="2026-03-02T09:30:00+01:00")
    seed(cw, dedupe_key="hourly", name="hourly", schedule={"every": "1h"})

    checked = cw.run("check", at="2026-03-02T10:00:00+01:00")
    ticked = cw.run("tick", "--json", at="2026-03-02T10:00:00+01:00")
    again = cw.run("tick", "--json", at="2026-03-02T10:00:30+01:00")

    for result in (checked, ticked, again):
        assert result.rc == 0, result
        assert "[[seed]] #1 (launch) is skipped: its store never had it" in result.stderr, result.stderr
        assert "run_at" in result.stderr
    assert ticked.json()["fired"] == 0 and cw.fires() == []
    names = [job["name"] for job in cw.json("list", at="2026-03-02T10:01:00+01:00")["jobs"]]
    assert names == ["hourly"]


@pytest.mark.parametrize(
    ("schedule", "stored", "first_boot", "due"),
    [
        ({"cron": "0 10 * * mon-fri"}, {"cron": "0 10 * * MON-FRI"}, "09:00:00", "10:00:00"),
        ({"cron": "@daily"}, {"cron": "0 0 * * *"}, "23:00:00", "00:00:00"),
        ({"every": "60m"}, {"every": "1h"}, "09:00:00", "10:00:00"),
        ({"every": "PT1H"}, {"every": "1h"}, "09:00:00", "10:00:00"),
    ],
    ids=["names", "macro", "minutes", "iso-duration"],
)
def test_a_seed_spelled_unlike_its_stored_form_keeps_its_occurrence_across_a_boot(
    cw: Cronwright, schedule: dict[str, str], stored: dict[str, str], first_boot: str, due: str
) -> None:
    """Semantic 16: an unchanged seed keeps its `next_run_at`. A boot within the grace of an occurrence
    fires it, and an `every` seed keeps its phase, however the seed spells its schedule."""
    seed(cw, dedupe_key="beat", name="beat", schedule=schedule)
    day = "2026-03-02"
    due_day = "2026-03-03" if due < first_boot else day
    cw.tick(at=f"{day}T{first_boot}+01:00")
    job = cw.show("beat", at=f"{day}T{first_boot[:6]}10+01:00")["job"]
    assert {key: job["schedule"][key] for key in stored} == stored
    armed = job["next_run_at"]
    # An `every` seed is anchored at its create, which comes a moment after the process starts.
    assert timedelta(0) <= utc(armed) - utc(f"{due_day}T{due}+01:00") < timedelta(seconds=10)

    # A boot between: the row stays exactly as it was (no re-arm, no phase shift).
    cw.tick(at=f"{day}T{first_boot[:3]}30:00+01:00")
    assert cw.show("beat", at=f"{day}T{first_boot[:3]}30:10+01:00")["job"] == job

    # A boot 20 s after the occurrence, within the grace: it fires.
    fired = cw.tick(at=f"{due_day}T{due[:6]}20+01:00")
    assert fired["fired"] == 1
    runs = cw.json("history", "beat", at=f"{due_day}T{due[:3]}01:00+01:00")["runs"]
    assert [run["scheduled_for"] for run in runs] == [armed]


def test_a_changed_seed_is_updated_in_place_and_keeps_its_next_run(cw: Cronwright) -> None:
    seed(cw, dedupe_key="beat", name="beat", schedule={"every": "1h"}, max_attempts=1)
    cw.tick(at="2026-03-02T09:00:00+01:00")
    before = cw.show("beat", at="2026-03-02T09:00:10+01:00")["job"]
    cw.config.write_text(
        cw.config.read_text(encoding="utf-8").replace("max_attempts = 1", "max_attempts = 3"),
        encoding="utf-8",
    )
    cw.tick(at="2026-03-02T09:30:00+01:00")
    after = cw.show("beat", at="2026-03-02T09:30:10+01:00")["job"]
    assert (after["id"], after["max_attempts"]) == (before["id"], 3)
    assert after["next_run_at"] == before["next_run_at"]


def test_check_judges_a_one_shot_seed_that_already_fired_as_a_boot_does(cw: Cronwright) -> None:
    """`check` agrees with boot: the seed's row is in the store, so it is no create of an instant long
    past. Before, `check` upserted the seeds into an empty store and refused it."""
    seed(cw, dedupe_key="launch", name="launch", run_at="2026-03-02T09:30:00+01:00")
    assert cw.tick(at="2026-03-02T09:30:05+01:00")["fired"] == 1
    before = cw.store.read_bytes()

    checked = cw.run("check", at="2026-03-02T11:00:00+01:00")
    assert checked.rc == 0, checked.stderr
    assert "1 seed" in checked.stdout
    assert cw.store.read_bytes() == before, "check reads the store and writes nothing"
    assert cw.run("tick", at="2026-03-02T11:00:00+01:00").rc == 0, "boot agrees"

    # The same seed with no row is an instant long past that its store never knew: check and boot both
    # report it and skip it (semantic 16), and check still makes no store.
    cw.store.unlink()
    skipped = cw.run("check", at="2026-03-02T11:00:00+01:00")
    assert skipped.rc == 0 and "[[seed]] #1 (launch) is skipped" in skipped.stderr, skipped
    assert not cw.store.exists(), "check makes no store"
