"""Real receivers for the channel tests: a local HTTP server that checks signatures, and an SMTP server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cronwright.targets.http import verify

SECRET = "s3cret-for-alerts"


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """What the server got, and how it answers: `down` makes it answer 503 (a receiver that is down)."""

    url: str
    received: list[Received] = field(default_factory=list)
    down: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The unix time a signature's timestamp is checked against: the sender's clock (faked, in black-box).
    clock: Callable[[], float] = time.time

    def ids(self) -> list[str]:
        with self.lock:
            return [item.headers["x-cronwright-notification-id"] for item in self.received]

    def bodies(self) -> list[Any]:
        with self.lock:
            return [item.json() for item in self.received]


@contextmanager
def http_receiver(secret: str = SECRET) -> Iterator[Receiver]:
    """An HTTP server on 127.0.0.1 (an ephemeral port) that records each POST and verifies its signature."""
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {key.lower(): value for key, value in self.headers.items()}
            signature = headers.get("x-cronwright-signature", "")
            with state.lock:
                if state.down:
                    self.send_response(503)
                    self.end_headers()
                    return
                state.received.append(
                    Received(self.path, headers, body, verify(secret, signature, body, state.clock()))
                )
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/alerts"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def free_port() -> int:
    """A port nothing listens on now (aiosmtpd's Controller cannot bind port 0 and report it)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
