"""For the HTTP and MCP tests: an app on a real SQLite store, served by a real uvicorn on a loopback port.

Sources, each with its own bearer token:
- `agent` may schedule reports.*, with at most 2 schedules, periods of 5m or more, lives of 30d or less;
- `other` may schedule reports.* too, without limits of its own;
- `nobody` has a token but no targets: fail-closed, it may schedule nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import ALLOWED, ScriptedRunner, at
from cronwright.app import App, build
from cronwright.clock import ManualClock
from cronwright.config.settings import parse
from cronwright.fronts.http.asgi import Serving, create_app
from cronwright.store.sqlite import SqliteStore

NOW = "2026-03-02T09:00:00+01:00"
TOKENS = {"agent": "agent-secret-token", "other": "other-secret-token", "nobody": "nobody-secret-token"}
MAX_MESSAGE_BYTES = 4096


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


SOURCES: dict[str, dict[str, Any]] = {
    "agent": {
        "token_sha256": sha256(TOKENS["agent"]),
        "targets": ["reports.*"],
        "max_schedules": 2,
        "min_period": "5m",
        "max_lifetime": "30d",
    },
    "other": {"token_sha256": sha256(TOKENS["other"]), "targets": ["reports.*"]},
    "nobody": {"token_sha256": sha256(TOKENS["nobody"])},
}


def bearer(source: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[source]}"}


def make_app(tmp_path: Path, sources: dict[str, dict[str, Any]] | None = None) -> App:
    """The app on a SQLite file in `tmp_path`, with SOURCES unless other `[sources]` are given."""
    config = parse(
        {
            "node": {"zone": "Europe/Berlin", "max_message_bytes": MAX_MESSAGE_BYTES, "max_lifetime": "90d"},
            "sources": SOURCES if sources is None else sources,
        }
    )
    clock = ManualClock(at(NOW))
    return build(
        config, ScriptedRunner(), ALLOWED, clock=clock, store=SqliteStore(tmp_path / "cw.db"), seed=False
    )


@dataclass
class Live:
    """A served app, and a client to it that sends no token unless told."""

    app: App
    url: str
    http: httpx.Client

    def call(self, source: str, request: dict[str, Any]) -> httpx.Response:
        return self.http.post("/v1/call", json=request, headers=bearer(source))

    def create(self, source: str, name: str, **job: Any) -> httpx.Response:
        spec: dict[str, Any] = {"name": name, "target": "reports", "action": "daily", **job}
        spec.setdefault("schedule", {"cron": "0 7 * * *"})
        return self.call(source, {"action": "create_job", "job": spec})


@contextmanager
def live_server(tmp_path: Path, sources: dict[str, dict[str, Any]] | None = None) -> Iterator[Live]:
    app = make_app(tmp_path, sources)
    serving = Serving(create_app(app), "127.0.0.1:0")
    try:
        serving.start()
        with httpx.Client(base_url=serving.url, timeout=30) as client:
            yield Live(app, serving.url, client)
    finally:
        serving.stop()
        app.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """A live HTTP server for one test."""
    with live_server(tmp_path) as served:
        yield served
