"""The read verbs answered around Starlette (read_route.py): for every read a caller may send, well formed
or not, the same status, headers and body as Starlette's routes give; and they never reach Starlette."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from cronwright.fronts.http.asgi import BearerAuth, create_app
from serving import bearer, make_app

READS = [
    "/v1/status",
    "/v1/jobs",
    "/v1/jobs?limit=1",
    "/v1/jobs?limit=1&after_name=daily-a",
    "/v1/jobs?state=active&target=reports&source=other",
    "/v1/jobs?limit=1&limit=5",  # the last of a name given twice
    "/v1/jobs?limit=",  # blank, kept, refused by the model
    "/v1/jobs?limit=abc",
    "/v1/jobs?limit=-1",
    "/v1/jobs?limit=" + "9" * 45,
    "/v1/jobs?nope=1",
    "/v1/status?verbose=1",
    "/v1/jobs/daily-a",
    "/v1/jobs/missing",
    "/v1/jobs/n%C3%A4me%20with%20space",
    "/v1/jobs/daily-a?ignored=1",
    "/v1/runs?name=daily-a",
    "/v1/runs?job_id=1&limit=2",
    "/v1/runs?before=x",
    "/v1/runs",
    "/v1/audit?name=daily-a",
    "/v1/audit?source=other&limit=1",
    "/v1/audit?job_id=99999",
]


class Starlette404:
    """Stands where Starlette's app is, and says so if a request reaches it."""

    def __init__(self) -> None:
        self.reached: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 599, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture
def apps(tmp_path: Path) -> Iterator[tuple[BearerAuth, BearerAuth, Starlette404]]:
    app = make_app(tmp_path)
    for name in ("daily-a", "daily-b", "daily-c"):
        request = {"name": name, "target": "reports", "action": "daily", "schedule": {"cron": "0 7 * * *"}}
        made = app.protocol.dispatch({"action": "create_job", "job": request}, app.config.source("other"))
        assert made["ok"], made
    served = create_app(app)
    assert isinstance(served, BearerAuth) and served.reads is not None
    starlette_only = BearerAuth(served.app, served.tokens, served.failures, served.call, reads=None)
    yield served, starlette_only, Starlette404()
    app.close()


def get(asgi: Any, path: str) -> httpx.Response:
    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get(path, headers=bearer("other"))

    return asyncio.run(fetch())


@pytest.mark.parametrize("path", READS)
def test_a_read_is_answered_as_starlettes_route_answered_it(
    apps: tuple[BearerAuth, BearerAuth, Starlette404], path: str
) -> None:
    served, starlette_only, _ = apps

    bare, routed = get(served, path), get(starlette_only, path)

    assert (bare.status_code, bare.headers.raw, bare.content) == (
        routed.status_code,
        routed.headers.raw,
        routed.content,
    )
    assert bare.headers["content-type"] == "application/json"


def test_the_reads_never_reach_starlette_and_the_rest_still_does(
    apps: tuple[BearerAuth, BearerAuth, Starlette404],
) -> None:
    served, _, nowhere = apps
    bypassing = BearerAuth(nowhere, served.tokens, served.failures, served.call, served.reads)

    for path in READS:
        assert get(bypassing, path).status_code != 599, path
    assert nowhere.reached == []

    for path in ("/v1/jobs/", "/v1/jobs/a/b", "/v1/jobsx", "/openapi.json", "/v1/status/"):
        assert get(bypassing, path).status_code == 599, path
    assert nowhere.reached == ["/v1/jobs/", "/v1/jobs/a/b", "/v1/jobsx", "/openapi.json", "/v1/status/"]
