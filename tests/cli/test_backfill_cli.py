"""Backfill, black-box (semantic 35): the real binary on a real SQLite file, the clock moved by faketime.
A backfill repeated three times runs each missed occurrence once; a dry run leaves the store byte for
byte; a source's backfill, through a running serve, counts against its max_schedules and is run live."""

from __future__ import annotations

import hashlib

import httpx

from .blackbox import Cronwright, Lines, needs_faketime, wait_for
from .test_audit_cli import listening_url
from .test_dry_run_cli import store_bytes

pytestmark = needs_faketime

MADE = "2026-03-02T09:00:00+01:00"
LATER = "2026-03-02T13:30:00+01:00"
RANGE = ("--from", "2026-03-02T09:30:00+01:00", "--to", LATER)
TOKEN = "agent-backfill-token"


def _missed_four(cw: Cronwright) -> None:
    cw.add("hourly", "--cron", "0 * * * *", at=MADE)
    cw.tick(at=LATER)  # the node was down from 10:00: 10, 11, 12 and 13 o'clock were missed
    assert cw.show("hourly", at=LATER)["job"]["skipped"]["misfire"] == 4


def test_a_backfill_repeated_three_times_runs_each_missed_occurrence_once(cw: Cronwright) -> None:
    _missed_four(cw)
    queued = []
    for _ in range(3):
        queued.append(cw.json("backfill", "hourly", *RANGE, at=LATER)["queued"])
        cw.tick(at=LATER)
    human = cw.ok("backfill", "hourly", *RANGE, at=LATER).stdout

    assert queued == [4, 0, 0]
    fire_ids = [line.split()[0] for line in cw.fires()]
    assert len(fire_ids) == 4 and len(set(fire_ids)) == 4
    runs = cw.json("history", "hourly", at=LATER)["runs"]
    assert sorted(run["scheduled_for"] for run in runs) == [
        "2026-03-02T10:00:00+01:00",
        "2026-03-02T11:00:00+01:00",
        "2026-03-02T12:00:00+01:00",
        "2026-03-02T13:00:00+01:00",
    ]
    assert "nothing to backfill" in human
    assert [e["action"] for e in cw.json("audit", "hourly", at=LATER)["entries"]][:1] == ["backfill"]


def test_a_dry_run_lists_the_occurrences_and_leaves_the_store_byte_for_byte(cw: Cronwright) -> None:
    _missed_four(cw)
    before = store_bytes(cw)

    reply = cw.json("backfill", "hourly", *RANGE, "--dry-run", at=LATER)
    human = cw.ok("backfill", "hourly", *RANGE, "--dry-run", at=LATER).stdout

    assert (reply["dry_run"], reply["queued"], len(reply["occurrences"])) == (True, 0, 4)
    assert "dry run, nothing written" in human and "2026-03-02T10:00:00+01:00" in human
    assert store_bytes(cw) == before


def test_a_sources_backfill_counts_against_its_quota_and_a_serve_runs_it_live(cw: Cronwright) -> None:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    with cw.config.open("a", encoding="utf-8") as config:
        config.write(f'\n[sources.agent]\ntoken_sha256 = "{digest}"\ntargets = ["sh.*"]\nmax_schedules = 2\n')
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def call(**request: object) -> dict[str, object]:
        reply = httpx.post(f"{url}/v1/call", json=request, headers=headers, timeout=30)
        body = reply.json()
        assert isinstance(body, dict)
        return body

    def create(name: str) -> dict[str, object]:
        job = {"name": name, "target": "sh", "action": "slow", "schedule": {"cron": "0 3 * * *"}}
        return call(action="create_job", job=job)

    with cw.popen("serve", at=LATER) as serve:
        stderr = Lines(serve.stderr)
        try:
            url = listening_url(stderr)
            assert create("nightly")["ok"]
            span = {"from": "2026-02-26T00:00:00+01:00", "to": "2026-03-02T00:00:00+01:00"}
            reply = call(action="backfill", name="nightly", **span)
            # The first backfilled run holds (sh.slow waits for the release file); three wait behind it.
            wait_for("the first backfilled run", cw.started.exists)
            refused = create("second")
            cw.release.touch()
            wait_for("the four backfilled runs", lambda: len(cw.fires()) == 4, timeout=40)
            wait_for(
                "the queue to drain",
                lambda: "'backfill_queued': 0" in str(call(action="get", name="nightly")),
            )
            allowed = create("second")
        finally:
            serve.terminate()
            serve.wait(timeout=30)
            stderr.join()

    assert reply["ok"] and reply["queued"] == 4, reply
    assert (refused["ok"], refused["error"]) == (False, "quota_exceeded"), refused
    assert "backfill" in str(refused["message"])
    assert allowed["ok"], allowed
    assert len({line.split()[0] for line in cw.fires()}) == 4


def test_one_missed_occurrence_is_said_in_the_singular(cw: Cronwright) -> None:
    cw.add("hourly", "--cron", "0 * * * *", at=MADE)
    cw.tick(at="2026-03-02T10:30:00+01:00")  # 10:00 was missed
    one = ("--from", "2026-03-02T09:30:00+01:00", "--to", "2026-03-02T10:30:00+01:00")

    dry = cw.ok("backfill", "hourly", *one, "--dry-run", at="2026-03-02T10:30:00+01:00").stdout
    real = cw.ok("backfill", "hourly", *one, at="2026-03-02T10:30:00+01:00").stdout

    assert "would queue 1 occurrence of hourly " in dry
    assert real.startswith("queued 1 occurrence of hourly;")


def test_a_refused_range_names_the_option_that_gave_it(cw: Cronwright) -> None:
    cw.add("hourly", "--cron", "0 * * * *", at=MADE)

    unreadable = cw.run("backfill", "hourly", "--from", "yesterday", "--to", LATER, at=LATER)
    backwards = cw.run("backfill", "hourly", "--from", LATER, "--to", MADE, at=LATER)

    assert unreadable.rc == 1 and "refused: invalid (--from): from 'yesterday'" in unreadable.stderr
    assert backwards.rc == 1 and "refused: invalid (--to): to must be after from" in backwards.stderr
