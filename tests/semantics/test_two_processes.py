"""Never twice, across processes: two nodes on one SQLite file fire each occurrence exactly once."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from conftest import at
from cronwright.core.model import AtSchedule, Job
from cronwright.store.sqlite import SqliteStore

NODE = r"""
import sys, os
from cronwright.clock import ManualClock
from cronwright.core.events import MemorySink
from cronwright.core.model import Outcome, Result
from cronwright.node.node_settings import NodeSettings
from cronwright.node.scheduler import Node
from cronwright.store.sqlite import SqliteStore
from datetime import datetime

db, out, now, go = sys.argv[1:5]

class Recorder:
    def __init__(self):
        self.fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    def run(self, job, occurrence):
        os.write(self.fd, f"{occurrence.fire_id} {occurrence.attempt}\n".encode())
        return Result(Outcome.OK)
    def close(self):
        os.close(self.fd)

node = Node(SqliteStore(db), Recorder(), ManualClock(datetime.fromisoformat(now)), MemorySink(),
            NodeSettings(max_concurrency=8))
while not os.path.exists(go):  # both processes start their passes together
    pass
# Beyond max_concurrency firings wait for a slot: pass again until a pass finds nothing to fire.
while node.run_pass().fired or node.in_flight():
    node.wait_for_runs()
node.stop()
"""


def test_two_node_processes_on_one_file_fire_each_occurrence_once(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    out = tmp_path / "fired.log"
    go = tmp_path / "go"
    due = at("2026-03-02T10:00:00+01:00")
    store = SqliteStore(db)
    for index in range(300):
        store.insert(
            Job(
                id=0,
                name=f"job-{index}",
                target="reports",
                action="daily",
                args={},
                schedule=AtSchedule(due),
                ends_at=at("2026-03-03T10:00:00+01:00"),
                created_at=due,
                updated_at=due,
                next_run_at=due,
            )
        )
    store.close()
    now = "2026-03-02T10:00:05+01:00"
    nodes = [
        subprocess.Popen(
            [sys.executable, "-c", NODE, str(db), str(out), now, str(go)], stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    go.touch()
    for node in nodes:
        _, err = node.communicate(timeout=120)
        assert node.returncode == 0, err.decode()
    fired = Counter(out.read_text().split("\n")[:-1])
    assert len(fired) == 300
    assert max(fired.values()) == 1
    check = SqliteStore(db)
    try:
        assert check.counts()["done"] == 300
        assert len(check.runs(None, 1000)) == 300
    finally:
        check.close()
