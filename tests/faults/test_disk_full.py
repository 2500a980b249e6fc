"""A full disk, or a read-only database file, under a running node (DESIGN semantic 18).

Each fault is real: the kernel refuses the writes. While it lasts, mutations answer `degraded` and stay
live in memory, `job_persistence_failed` is emitted once per job, claims that are not durable never run,
finished runs are kept in memory, and a pass that cannot renew its lease fails cleanly. When the cause is
gone, the next pass saves everything (`job_persistence_recovered`), and what was due runs, once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CHILD = Path(__file__).resolve().parent / "degraded_node.py"


def can(argv: list[str]) -> bool:
    return shutil.which(argv[0]) is not None and subprocess.run(argv, capture_output=True).returncode == 0


def run_child(tmp_path: Path, mode: str) -> dict[str, Any]:
    if mode == "tmpfs":
        # A private mount namespace (as an unprivileged user too, where user namespaces are allowed):
        # a 1 MB tmpfs that only the child sees, gone when it exits.
        folder = tmp_path / "tiny"
        folder.mkdir()
        mount = f"mount -t tmpfs -o size=1m tmpfs {folder}"
        if not can(["unshare", "-rm", "sh", "-c", mount]):
            pytest.skip("cannot mount a tmpfs in a private namespace (unshare -rm) here")
        argv = ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$@"', "sh",
                sys.executable, str(CHILD), str(folder / "cronwright.db"), mode]  # fmt: skip
    else:
        if mode == "immutable":
            probe = tmp_path / "probe"
            probe.touch()
            if not can(["chattr", "+i", str(probe)]):
                pytest.skip("chattr +i needs root (CAP_LINUX_IMMUTABLE) and a file system that has it")
            subprocess.run(["chattr", "-i", str(probe)], check=True)
        argv = [sys.executable, str(CHILD), str(tmp_path / "cronwright.db"), mode]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    reported: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return reported


@pytest.mark.parametrize("mode", ["fsize", "tmpfs", "immutable"])
def test_a_failing_disk_degrades_the_node_and_it_recovers_when_the_cause_is_gone(
    tmp_path: Path, mode: str
) -> None:
    seen = run_child(tmp_path, mode)

    # An operator's change is kept in memory and says so.
    assert seen["pause"]["ok"] and seen["pause"]["persistence"] == "degraded"
    assert seen["pause"]["job"]["state"] == "paused"
    # A create that cannot be stored is refused whole: nothing half-made, try again later.
    assert seen["create"]["ok"] is False and seen["create"]["error"] == "store_unavailable"

    # The pass during the fault: the finished run is kept in memory, the due one-shot is not run.
    assert seen["tick_failing"] == {"ok": True, "fired": 0, "fire_ids": [], "skipped": 0}
    slow = seen["slow_failing"]
    assert slow["job"]["state"] == "active" and slow["job"]["last_run"]["outcome"] == "ok"
    assert [run["fire_id"] for run in slow["runs"]] == ["1-1"]  # its history, from memory
    assert seen["shot_failing"]["state"] == "active"  # its claim was not durable, so it did not run
    assert seen["status_failing"] == "degraded"
    # A pass that cannot renew its lease fails as a refusal, not as a crash.
    assert seen["tick_beat_failing"]["ok"] is False
    assert seen["tick_beat_failing"]["error"] == "store_unavailable"
    # On disk, nothing moved while the fault lasted.
    disk = seen["disk_failing"]
    assert {name: job["state"] for name, job in disk["jobs"].items()} == {
        "slow": "running",
        "quiet": "active",
        "shot": "active",
    }
    assert disk["runs"] == []
    assert seen["calls_failing"] == ["1-1"]
    # Once per job, however many saves failed.
    assert seen["events_failing"].count("job_persistence_failed") == 2
    assert "job_persistence_recovered" not in seen["events_failing"]

    # The cause is gone: the next pass saves what waited, and runs what was due, once.
    assert seen["tick_recovered"]["ok"] and seen["tick_recovered"]["fire_ids"] == ["3-1"]
    assert seen["status_recovered"] == "persisted"
    assert seen["pause_recovered"]["persistence"] == "persisted"
    disk = seen["disk_recovered"]
    assert {name: job["state"] for name, job in disk["jobs"].items()} == {
        "slow": "paused",
        "quiet": "paused",
        "shot": "done",
    }
    assert disk["jobs"]["slow"]["last_run"]["outcome"] == "ok"
    assert disk["runs"] == ["1-1 1", "3-1 1"]
    assert seen["calls"] == ["1-1", "3-1"]
    assert seen["events"].count("job_persistence_failed") == 2
    assert seen["events"].count("job_persistence_recovered") == 2
