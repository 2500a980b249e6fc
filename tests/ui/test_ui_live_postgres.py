"""Live updates across nodes (semantics 24 and 25): a change made through another node of the same
PostgreSQL store reaches this node's dashboard stream by the store's NOTIFY, with no timer of its own."""

from __future__ import annotations

import threading
from pathlib import Path

from starlette.testclient import TestClient

import pg
from conftest import ALLOWED, ScriptedRunner, at
from cronwright.app import App, build
from cronwright.clock import ManualClock
from cronwright.config.settings import parse
from cronwright.fronts.http.asgi import create_app
from cronwright.fronts.ui.links import Links
from cronwright.node import drive
from cronwright.store.postgres import PostgresStore
from dashboard_site import ORIGIN, Browser
from serving import NOW, SOURCES


def _node(url: str) -> App:
    config = parse({"node": {"zone": "Europe/Berlin"}, "sources": SOURCES})
    return build(
        config, ScriptedRunner(), ALLOWED, clock=ManualClock(at(NOW)), store=PostgresStore(url), seed=False
    )


def test_a_change_through_another_node_reaches_the_stream(tmp_path: Path) -> None:
    with pg.scratch_url() as url:
        first, second = _node(url), _node(url)
        serving = threading.Thread(target=drive.serve_forever, args=(first.node,), daemon=True)
        serving.start()  # its loop LISTENs on the store's channel
        try:
            links = Links()
            with TestClient(create_app(first, links=links), base_url=ORIGIN) as client:
                browser = Browser(first, client, links)
                browser.login("agent")

                def change_on_the_other_node() -> None:
                    job = {"name": "elsewhere", "target": "reports", "action": "daily",
                           "schedule": {"cron": "0 7 * * *"}}  # fmt: skip
                    reply = second.protocol.dispatch({"action": "create_job", "job": job},
                                                     second.config.source("agent"))  # fmt: skip
                    assert reply["ok"], reply

                seen: list[str] = []
                with client.stream("GET", "/ui/events") as stream:
                    for line in stream.iter_lines():
                        seen.append(line)
                        if line == "event: ready":
                            change_on_the_other_node()
                        if line == "event: changed":
                            break
                assert "event: changed" in seen
                assert "elsewhere" in browser.get("/ui/").text
        finally:
            first.close()
            serving.join(30)
            second.close()
