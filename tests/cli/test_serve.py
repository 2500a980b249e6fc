"""`cronwright serve` on the real clock: a change made by the CLI reaches it without a restart (semantic 25),
and SIGTERM stops it cleanly."""

from __future__ import annotations

import json
import signal
import subprocess
from datetime import UTC, datetime, timedelta

from .blackbox import Cronwright, Lines, wait_for


def soon(seconds: int) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="seconds")


def test_a_change_made_by_the_cli_reaches_a_running_serve(cw: Cronwright) -> None:
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve's startup line", lambda: stderr.saw("serving"), timeout=15)
            # An idle node sleeps until its next safety wake-up, a minute away: only a wake-up brings in
            # these changes in time. `doomed` is removed before it comes due, a second before `soon` does.
            doomed_at, soon_at = soon(5), soon(6)
            cw.json("add", "doomed", "--target", "sh", "--action", "log", "--at", doomed_at)
            assert cw.json("remove", "doomed")["job"]["state"] == "active", "removed before it ran"
            cw.json("add", "soon", "--target", "sh", "--action", "log", "--at", soon_at)
            wait_for("serve to run the new job", lambda: len(cw.fires()) == 1, timeout=10)
            wait_for("serve to record the run", lambda: cw.json("show", "soon")["job"]["state"] == "done")
            job = cw.json("show", "soon")["job"]
            assert job["last_run"]["outcome"] == "ok"
            assert cw.fires() == [f"{job['last_run']['fire_id']} 1"], "the removed job never ran"
            assert serve.poll() is None, "".join(stderr.seen)
        finally:
            serve.send_signal(signal.SIGTERM)
            try:
                returncode = serve.wait(timeout=15)
            except subprocess.TimeoutExpired:
                serve.kill()
                raise
            finally:
                stderr.join()
    assert returncode == 0, "".join(stderr.seen)
    assert stderr.saw("stopping")
    # The last line says it stopped (after the runs in flight were recorded), so an operator tailing the
    # log knows the process is gone rather than hung.
    assert json.loads(stderr.seen[-1])["message"].endswith(" stopped"), stderr.seen[-1]
    # Semantic 41: every line on stderr is one JSON object with its time and offset, and the run has its own.
    logged = [json.loads(line) for line in stderr.seen]
    assert all(datetime.fromisoformat(line["time"]).utcoffset() is not None for line in logged), logged
    runs = [line for line in logged if line.get("event") == "job_run"]
    assert [(run["job"], run["outcome"]) for run in runs] == [("soon", "ok")], logged
    assert cw.json("status")["node"]["peers"] == [], "a node that stopped leaves no live beat behind"
