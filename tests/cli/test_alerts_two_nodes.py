"""Semantic 38 on two real `cronwright serve` nodes sharing one PostgreSQL store, on the real clock: each
notification reaches the receiver once, whichever node detects or delivers it, and a node that dies holding
a run is told of by its peer (`node_down`)."""

from __future__ import annotations

import signal
import subprocess
from contextlib import ExitStack
from pathlib import Path

import pg
from notify.receivers import http_receiver

from .blackbox import Cronwright, children, serving, wait_for
from .test_alert_scenarios import check_envelopes, delivered, with_alerts
from .test_serve import soon


def shell_child(serve: subprocess.Popen[str]) -> bool:
    """Whether `serve` runs a command target now (its /bin/sh is a child of the node process)."""
    for pid in children(serve.pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"/bin/sh"):
                return True
        except OSError:
            continue
    return False


def test_two_serve_nodes_deliver_each_notification_once_and_a_peer_tells_of_a_dead_one(
    tmp_path: Path,
) -> None:
    with pg.scratch_url() as url, http_receiver() as receiver, ExitStack() as nodes:
        cw = Cronwright(tmp_path, store=url, lease_beat="1s", lease_ttl="4s", shutdown_grace="2s")
        with_alerts(cw, receiver, ["failed", "node_down"])
        first, second = nodes.enter_context(serving(cw)), nodes.enter_context(serving(cw))

        due = soon(4)
        for index in range(8):
            cw.json("add", f"bad-{index}", "--target", "sh", "--action", "fail", "--at", due)

        def settled() -> bool:
            rows = cw.json("notifications")["deliveries"]
            return len(rows) == 8 and all(row["state"] == "delivered" for row in rows)

        wait_for("eight failures, each delivered", settled, timeout=90)
        assert sorted(delivered(receiver)) == sorted(("failed", f"bad-{index}") for index in range(8))
        ids = receiver.ids()
        assert len(ids) == len(set(ids)) == 8

        # A slow one-shot starts on one node; that node is killed mid-run, and its peer recovers the run.
        cw.json("add", "slow", "--target", "sh", "--action", "slow", "--at", soon(3))
        wait_for("the slow run to start", lambda: cw.started.exists(), timeout=60)
        wait_for("a node to run it", lambda: shell_child(first) or shell_child(second), timeout=10)
        victim, peer = (first, second) if shell_child(first) else (second, first)
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        cw.release.touch()  # the orphaned shell ends; its node is gone

        wait_for("the peer to tell of the dead node", lambda: ("node_down", None) in delivered(receiver), 90)
        wait_for("the interrupted run's failure", lambda: ("failed", "slow") in delivered(receiver), 60)
        assert peer.poll() is None

    assert delivered(receiver).count(("node_down", None)) == 1
    check_envelopes(receiver)
    ids = receiver.ids()
    assert len(ids) == len(set(ids)) == 10
