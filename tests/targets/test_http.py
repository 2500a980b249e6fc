"""HTTP targets: the envelope POSTed, HMAC-signed; a real server on 127.0.0.1 verifies the signature."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cronwright.core.model import Outcome
from cronwright.targets.http import SIGNATURE_HEADER, sign, verify
from cronwright.targets.secrets import Secrets

from .conftest import MakeRunner, job, occurrence

SECRET = "whsec-7f3a9c1e2b"


@dataclass
class Hook:
    """A receiver that verifies each request as a real one would, and answers as a test tells it to."""

    url: str = ""
    status: int = 204
    body: bytes = b""
    release: threading.Event = field(default_factory=threading.Event)
    hang: bool = False
    received: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def hook() -> Iterator[Hook]:
    state = Hook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            header = self.headers.get(SIGNATURE_HEADER, "")
            state.received.append(
                {
                    "path": self.path,
                    "headers": dict(self.headers),
                    "envelope": json.loads(body),
                    "verified": verify(SECRET, header, body, time.time()),
                    "verified_with_another_secret": verify("wrong", header, body, time.time()),
                }
            )
            if state.hang:
                state.release.wait(10)
            self.send_response(state.status)
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


def target(hook: Hook, timeout: str = "5s") -> dict[str, Any]:
    return {
        "kind": "http",
        "url": hook.url,
        "signing_secret": "HOOK_SECRET",
        "actions": {"ping": {"args_schema": {"type": "object"}, "timeout": timeout}},
    }


def test_the_envelope_is_posted_signed_and_the_server_verifies_it(
    hook: Hook, make_runner: MakeRunner
) -> None:
    _, runner = make_runner({"hook": target(hook)}, secrets=Secrets(environ={"HOOK_SECRET": SECRET}))
    result = runner.run(job("hook", "ping", {"region": "eu"}, name="nightly-ping"), occurrence(attempt=2))
    assert (result.outcome, result.message) == (Outcome.OK, "HTTP 204")
    [request] = hook.received
    assert request["verified"] is True
    assert request["verified_with_another_secret"] is False
    assert request["path"] == "/hook"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["X-Cronwright-Fire-Id"] == "fire-1"
    assert request["headers"]["X-Cronwright-Attempt"] == "2"
    assert request["envelope"] == {
        "schedule": "nightly-ping",
        "job_id": 7,
        "target": "hook",
        "action": "ping",
        "args": {"region": "eu"},
        "cron": {
            "fire_id": "fire-1",
            "attempt": 2,
            "scheduled_for": "2026-03-02T09:00:00+01:00",
            "nominal": "2026-03-02T09:00:00+01:00",
            "fired_at": "2026-03-02T09:00:01+01:00",
        },
    }


def test_a_non_2xx_answer_is_an_error_with_the_status_and_the_body(
    hook: Hook, make_runner: MakeRunner
) -> None:
    hook.status, hook.body = 503, b"maintenance until 10:00\nretry later"
    _, runner = make_runner({"hook": target(hook)}, secrets=Secrets(environ={"HOOK_SECRET": SECRET}))
    result = runner.run(job("hook", "ping"), occurrence())
    assert (result.outcome, result.message) == (Outcome.ERROR, "HTTP 503: maintenance until 10:00")
    assert result.output == "maintenance until 10:00\nretry later"


def test_no_answer_by_the_deadline_is_a_timeout(hook: Hook, make_runner: MakeRunner) -> None:
    hook.hang = True
    _, runner = make_runner(
        {"hook": target(hook, timeout="1s")}, secrets=Secrets(environ={"HOOK_SECRET": SECRET})
    )
    result = runner.run(job("hook", "ping"), occurrence())
    assert (result.outcome, result.message) == (Outcome.TIMEOUT, f"POST {hook.url} got no answer within 1s")


def test_an_unreachable_url_is_an_error(make_runner: MakeRunner) -> None:
    dead = {
        "kind": "http",
        "url": "http://127.0.0.1:9/hook",
        "signing_secret": "HOOK_SECRET",
        "actions": {"ping": {}},
    }
    _, runner = make_runner({"hook": dead}, secrets=Secrets(environ={"HOOK_SECRET": SECRET}))
    result = runner.run(job("hook", "ping"), occurrence())
    assert result.outcome is Outcome.ERROR
    assert result.message.startswith("POST http://127.0.0.1:9/hook failed: ConnectError")


def test_a_missing_signing_secret_fails_the_run_and_sends_nothing(
    hook: Hook, make_runner: MakeRunner
) -> None:
    _, runner = make_runner({"hook": target(hook)}, secrets=Secrets(environ={}))
    result = runner.run(job("hook", "ping"), occurrence())
    assert result.outcome is Outcome.ERROR
    assert result.message.startswith("secret HOOK_SECRET not set in the environment")
    assert hook.received == []


def test_the_signing_secret_never_shows_even_when_the_server_echoes_it(
    hook: Hook, make_runner: MakeRunner
) -> None:
    hook.status, hook.body = 400, f"bad signature for secret {SECRET}".encode()
    _, runner = make_runner({"hook": target(hook)}, secrets=Secrets(environ={"HOOK_SECRET": SECRET}))
    result = runner.run(job("hook", "ping"), occurrence())
    assert result.message == "HTTP 400: bad signature for secret ***"
    assert SECRET not in result.output


def test_a_signature_is_refused_when_stale_or_tampered() -> None:
    body = b'{"cron":{}}'
    header = sign(SECRET, body, 1_700_000_000)
    assert verify(SECRET, header, body, now=1_700_000_100)
    assert not verify(SECRET, header, body, now=1_700_000_000 + 301)
    assert not verify(SECRET, header, body + b" ", now=1_700_000_100)
    assert not verify(SECRET, "t=abc,v1=00", body, now=1_700_000_100)
    assert not verify(SECRET, "", body, now=1_700_000_100)
