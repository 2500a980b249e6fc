"""For the dashboard's tests (tests/ui, and the browser tests): the whole HTTP app (API and dashboard)
over a real SQLite store, driven through starlette's TestClient as a browser would (cookies kept, forms
posted with this page's Origin)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cronwright.app import App
from cronwright.fronts.http.asgi import create_app
from cronwright.fronts.ui.links import Links
from serving import TOKENS, make_app

ORIGIN = "http://testserver"
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Browser:
    """One browser: its own cookie jar, logged in or not."""

    app: App
    client: TestClient
    links: Links

    def get(self, path: str, **kw: Any) -> Any:
        return self.client.get(path, **kw)

    def post(self, path: str, data: dict[str, str], origin: str | None = ORIGIN, **kw: Any) -> Any:
        headers = {"Origin": origin} if origin is not None else {}
        return self.client.post(path, data=data, headers=headers, follow_redirects=False, **kw)

    def login(self, source: str) -> Any:
        answer = self.post("/ui/login", {"token": TOKENS[source]})
        assert answer.status_code == 303, answer.text
        return answer

    def csrf(self, path: str = "/ui/") -> str:
        found = _CSRF.search(self.get(path).text)
        assert found is not None, "the page carries a CSRF token"
        return found.group(1)

    def act(self, verb: str, name: str, **fields: str) -> Any:
        return self.post(f"/ui/actions/{verb}", {"csrf": self.csrf(), "name": name, **fields})

    def create(self, source: str, name: str, **job: Any) -> dict[str, Any]:
        """A schedule made through the protocol, as `source` (not through the page)."""
        spec: dict[str, Any] = {"name": name, "target": "reports", "action": "daily", **job}
        spec.setdefault("schedule", {"cron": "0 7 * * *"})
        reply = self.app.protocol.dispatch(
            {"action": "create_job", "job": spec}, self.app.config.source(source)
        )
        assert reply["ok"], reply
        return reply


@contextmanager
def served(
    tmp_path: Path, sources: dict[str, dict[str, Any]] | None = None
) -> Iterator[tuple[App, Any, Links]]:
    """The app with `serving.SOURCES`, or these `[sources]`, and the HTTP app over it."""
    app = make_app(tmp_path, sources)
    links = Links()
    try:
        yield app, create_app(app, links=links), links
    finally:
        app.close()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[App, Any, Links]]:
    with served(tmp_path) as parts:
        yield parts


@pytest.fixture
def browser(site: tuple[App, Any, Links]) -> Iterator[Browser]:
    app, asgi, links = site
    with TestClient(asgi, base_url=ORIGIN) as client:
        yield Browser(app, client, links)


def second_browser(site: tuple[App, Any, Links]) -> TestClient:
    """Another browser on the same app (not entered: the app's lifespan runs once, for the first)."""
    return TestClient(site[1], base_url=ORIGIN)
