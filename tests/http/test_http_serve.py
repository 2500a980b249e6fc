"""`cronwright serve`: the node and the HTTP API in one process, stopped cleanly by SIGTERM or SIGINT."""

from __future__ import annotations

import json
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from serving import TOKENS, bearer, sha256

CRONWRIGHT = str(Path(sys.executable).with_name("cronwright"))


def write_config(tmp_path: Path, listen: str) -> Path:
    path = tmp_path / "cronwright.toml"
    path.write_text(
        f"""
[node]
zone = "Europe/Berlin"
store = "sqlite:///{tmp_path / "cw.db"}"
listen = "{listen}"
shutdown_grace = "5s"

[targets.echo]
kind = "command"
[targets.echo.actions.hello]
argv = ["/bin/true"]

[sources.agent]
token_sha256 = "{sha256(TOKENS["agent"])}"
targets = ["echo.*"]
""",
        encoding="utf-8",
    )
    return path


@contextmanager
def serving(config: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Starts `cronwright serve`; yields it and its URL once it says where it listens (at most 60 s)."""
    process = subprocess.Popen(
        [CRONWRIGHT, "--config", str(config), "serve"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None

    def read() -> None:
        for line in process.stderr or ():
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        url = ""
        while not url:
            line = json.loads(lines.get(timeout=60))  # serve logs JSON lines (semantic 41)
            url = line.get("url", "")
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(60)
        reader.join(10)
        process.stderr.close()


@pytest.mark.parametrize("stop_with", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_over_http_and_stops_cleanly_on_a_signal(tmp_path: Path, stop_with: int) -> None:
    with serving(write_config(tmp_path, "127.0.0.1:0")) as (process, url), httpx.Client(base_url=url) as http:
        assert http.get("/healthz").json() == {"ok": True}
        created = http.post(
            "/v1/call",
            json={"action": "create_job", "job": {"name": "hi", "target": "echo", "action": "hello",
                                                   "schedule": {"every": "1h"}}},
            headers=bearer("agent"),
        )  # fmt: skip
        assert created.status_code == 200, created.text
        assert http.get("/v1/status", headers=bearer("agent")).json()["counts"]["active"] == 1

        process.send_signal(stop_with)

        assert process.wait(60) == 0
    listed = subprocess.run(
        [CRONWRIGHT, "--config", str(tmp_path / "cronwright.toml"), "list", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert '"name": "hi"' in listed.stdout


def test_serve_on_a_busy_address_fails_with_status_2(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [CRONWRIGHT, "--config", str(write_config(tmp_path, f"127.0.0.1:{port}")), "serve"],
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port} (node.listen)" in result.stderr


def test_the_listening_socket_says_it_is_tcp_so_that_replies_go_out_at_once() -> None:
    # asyncio sets TCP_NODELAY only on connections of a socket whose protocol is IPPROTO_TCP; without it a
    # keep-alive client waits 40 ms for each reply (Nagle against delayed ACKs).
    from cronwright.fronts.http.listen import _bind

    with _bind("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP
