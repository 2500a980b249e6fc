"""`cronwright tick` waits for its python runs' replies on its own thread (the pump, targets/replies.py),
black-box: a call past its deadline is still stopped and recorded `timeout`, and a command run, which
ends on a thread of its own, still ends the tick at once. Each slot is used one after the other
(max_concurrency 1), so that the python runs after the first find its worker warm and are begun without
a thread: the runs the tick pumps."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pump_actions import OK_AND_HANG

from .blackbox import Cronwright


@pytest.fixture
def cw(tmp_path: Path) -> Cronwright:
    # Beats this far apart: a wait that only a beat would end outlasts the test's timeout for a command.
    world = Cronwright(tmp_path, max_concurrency=1, lease_beat="5m", lease_ttl="20m")
    world.add_python_target(OK_AND_HANG)
    return world


def test_a_tick_pumping_its_replies_keeps_deadlines_and_is_woken_by_a_command(cw: Cronwright) -> None:
    now = datetime.now(UTC)
    due = [("first", "py", "ok"), ("stuck", "py", "hang"), ("after", "py", "ok"), ("cmd", "sh", "log")]
    for n, (name, target, action) in enumerate(due):
        at = (now + timedelta(milliseconds=n)).isoformat()  # in this order: one slot, one run at a time
        cw.json("add", name, "--target", target, "--action", action, "--at", at)
    # Each `add` is a process of its own: by the tick, every instant is behind us.
    done = cw.run("tick", "--json")  # fails the test if it is still running after TIMEOUT

    assert done.rc == 0, done
    assert json.loads(done.stdout)["fired"] == len(due)
    runs = {run["schedule"]: run for run in cw.json("history", "--limit", "10")["runs"]}
    assert {name: runs[name]["outcome"] for name, _, _ in due} == {
        "first": "ok",
        "stuck": "timeout",
        "after": "ok",
        "cmd": "ok",
    }
    assert runs["stuck"]["message"] == "ran past its deadline of 1s; the worker was killed"
