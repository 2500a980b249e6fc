"""A verb that went well ends without the interpreter's teardown (`cli.group._end_at_once`): its whole output
must still reach the pipes that read it, and the process end 0. Read from the real process."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from .blackbox import Cronwright

ACTIONS = """
import cronwright

@cronwright.action
def noop() -> None:
    pass
"""


def test_a_long_output_to_a_pipe_arrives_whole(cw: Cronwright) -> None:
    # A pipe's stdout is block-buffered: 1,000 lines are several buffers, the last of them written only
    # by the flush before the process ends.
    done = cw.run("preview", "* * * * *", "--count", "1000", "--after", "2026-03-02T10:00:00+01:00")
    assert done.rc == 0, done.stderr
    firings = [line for line in done.stdout.splitlines() if "2026-" in line]
    assert len(firings) == 1000
    assert firings[-1].split()[-1] == "2026-03-03T02:40:00+01:00"  # 1,000 minutes after 10:00


def test_a_tick_says_what_it_fired_on_stdout_and_logs_each_run_on_stderr(cw: Cronwright) -> None:
    cw.add_python_target(ACTIONS)
    now = datetime.now(UTC).isoformat()
    for name in ("one", "two", "three"):
        cw.json("add", name, "--target", "py", "--action", "noop", "--at", now)

    done = cw.run("tick", "--json")

    assert done.rc == 0, done.stderr
    assert done.json()["fired"] == 3
    runs = [json.loads(line) for line in done.stderr.splitlines() if '"job_run"' in line]
    assert sorted(run["job"] for run in runs) == ["one", "three", "two"]
