"""A burst of wake-ups (SIGUSR1) at the node's process of `serve`: the fronts' process sends one for each
change it makes, a CLI one for each of its own. However many arrive, and however they overlap, the node
neither dies nor stops firing (the handler used to take locks, and a signal landing inside it nested it
until the process died of a RecursionError)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import httpx

from cli.blackbox import Cronwright, Lines, wait_for


def test_a_burst_of_wake_signals_leaves_the_node_serving_and_firing(tmp_path: Path) -> None:
    cw = Cronwright(tmp_path, min_period="1s")
    for index in range(8):  # the node's thread is busy telling the fronts of firings while signals land
        cw.ok("add", f"busy-{index}", "--target", "sh", "--action", "log", "--every", "1s")
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            url = json.loads(next(line for line in stderr.seen if "listening on" in line))["url"]
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                for _ in range(2_000):
                    os.kill(serve.pid, signal.SIGUSR1)

            assert serve.poll() is None, stderr.seen[-5:]
            assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
            fired = len(cw.log.read_text().splitlines())
            wait_for("firings after the burst", lambda: len(cw.log.read_text().splitlines()) >= fired + 8)
            assert serve.poll() is None, stderr.seen[-5:]
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
            stderr.join()
    assert serve.returncode == 0, stderr.seen[-5:]
