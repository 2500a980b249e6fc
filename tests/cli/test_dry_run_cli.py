"""`add --dry-run` and `update --dry-run`, black-box: the real binary on a real SQLite file, whose bytes
must not change (issue 15)."""

from __future__ import annotations

import hashlib

from .blackbox import Cronwright, needs_faketime

pytestmark = needs_faketime

NOW = "2026-03-02T09:00:00+01:00"


def store_bytes(cw: Cronwright) -> str:
    digest = hashlib.sha256()
    for part in sorted(cw.folder.glob("cw.db*")):
        if not part.name.endswith("-shm"):  # shared memory for readers, not the store's content
            digest.update(part.name.encode() + part.read_bytes())
    return digest.hexdigest()


def test_add_dry_run_prints_the_firings_and_leaves_the_store_byte_for_byte(cw: Cronwright) -> None:
    cw.add("first", "--every", "1h", at=NOW)
    before = store_bytes(cw)

    reply = cw.json("add", "report", "--target", "sh", "--action", "log", "--cron", "0 10 * * *",
                    "--lifetime", "3d", "--dry-run", at=NOW)  # fmt: skip
    human = cw.ok("add", "report", "--target", "sh", "--action", "log", "--cron", "0 10 * * *",
                  "--dry-run", at=NOW)  # fmt: skip

    assert reply["dry_run"] is True and reply["job"]["name"] == "report"
    assert reply["firings"] == ["2026-03-02T10:00:00+01:00", "2026-03-03T10:00:00+01:00",
                                "2026-03-04T10:00:00+01:00"]  # fmt: skip
    assert reply["ends_at"].startswith("2026-03-05T09:0")  # 3 days from the (running) fake clock
    assert reply["quota"] == {"used": 2, "max": None}
    assert "dry run: nothing added" in human.stdout and "2026-03-02T10:00:00+01:00" in human.stdout
    assert store_bytes(cw) == before
    assert [row["name"] for row in cw.json("list", at=NOW)["jobs"]] == ["first"]


def test_update_dry_run_changes_nothing_and_a_refusal_exits_1(cw: Cronwright) -> None:
    cw.add("report", "--cron", "0 10 * * *", at=NOW)
    shown = cw.show("report", at=NOW)["job"]
    before = store_bytes(cw)

    reply = cw.json("update", "report", "--cron", "30 7 * * *", "--dry-run", at=NOW)
    refused = cw.run("update", "report", "--every", "1s", "--dry-run", at=NOW)

    assert reply["job"]["schedule"]["cron"] == "30 7 * * *"
    assert reply["firings"][0] == "2026-03-03T07:30:00+01:00"
    assert refused.rc == 1 and "period_too_short" in refused.stderr
    assert store_bytes(cw) == before
    assert cw.show("report", at=NOW)["job"] == shown
