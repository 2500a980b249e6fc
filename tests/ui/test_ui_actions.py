"""The buttons of a schedule's page, each through the protocol as the caller: resume, run now, delete
(only with its confirmation), and the operator's approve and reject of a pending schedule."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cronwright.core.sources import operator
from cronwright.fronts.ui.links import issue
from dashboard_site import ORIGIN, Browser, served
from serving import SOURCES, sha256


def _reply(browser: Browser, action: str, **fields: Any) -> dict[str, Any]:
    reply: dict[str, Any] = browser.app.protocol.dispatch({"action": action, **fields}, operator())
    return reply


def _actions(browser: Browser, name: str) -> list[str]:
    return [entry["action"] for entry in _reply(browser, "audit", name=name)["entries"]]


def test_resume_from_the_page(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    browser.act("pause", "nightly")
    assert "Resume" in browser.get("/ui/schedules/nightly").text
    assert browser.act("resume", "nightly").status_code == 303
    assert _reply(browser, "get", name="nightly")["job"]["state"] == "active"
    assert _actions(browser, "nightly")[:2] == ["resume", "pause"]


def test_resume_of_an_active_schedule_shows_the_protocols_refusal(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    answer = browser.act("resume", "nightly")
    assert answer.status_code == 409
    assert "job_not_paused" in answer.text or "not paused" in answer.text


def test_run_now_from_the_page(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    assert browser.act("run_now", "nightly").status_code == 303
    assert _actions(browser, "nightly")[0] == "run_now"


def test_delete_asks_first_and_goes_only_with_its_confirmation(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    confirm = browser.get("/ui/delete/nightly")
    assert confirm.status_code == 200
    assert 'name="confirm" value="yes"' in confirm.text
    assert browser.act("delete", "nightly").status_code == 400
    assert _reply(browser, "get", name="nightly")["ok"]
    answer = browser.act("delete", "nightly", confirm="yes")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/"
    assert _reply(browser, "get", name="nightly")["error"] == "not_found"
    assert _actions(browser, "nightly")[0] == "delete"


@pytest.fixture
def approving(tmp_path: Path) -> Iterator[Browser]:
    """A site where `agent`'s schedules wait for the operator's approval; the browser is the operator's."""
    sources = {**SOURCES, "agent": {"token_sha256": sha256("agent-secret-token"), "targets": ["reports.*"],
                                    "approval": "operator"}}  # fmt: skip
    with served(tmp_path, sources) as (app, asgi, links), TestClient(asgi, base_url=ORIGIN) as client:
        browser = Browser(app, client, links)
        token = issue(links.key, app.node.clock.now())
        assert browser.post("/ui/login/link", {"token": token}).status_code == 303
        yield browser


def test_the_operator_approves_a_pending_schedule_from_the_page(approving: Browser) -> None:
    approving.create("agent", "wants")
    assert "wants" in approving.get("/ui/approvals").text
    assert approving.act("approve", "wants", note="looks fine").status_code == 303
    assert _reply(approving, "get", name="wants")["job"]["state"] == "active"
    entry = _reply(approving, "audit", name="wants")["entries"][0]
    assert (entry["action"], entry["source"], entry["note"]) == ("approve", "cli", "looks fine")
    assert "wants" not in approving.get("/ui/approvals").text


def test_the_operator_rejects_a_pending_schedule_from_the_page(approving: Browser) -> None:
    approving.create("agent", "wants")
    answer = approving.act("reject", "wants", note="no")
    assert answer.status_code == 303
    assert _reply(approving, "get", name="wants")["error"] == "not_found"
    assert _actions(approving, "wants")[0] == "reject"


def test_a_source_cannot_approve_its_own_schedule(tmp_path: Path) -> None:
    sources = {**SOURCES, "agent": {"token_sha256": sha256("agent-secret-token"), "targets": ["reports.*"],
                                    "approval": "operator"}}  # fmt: skip
    with served(tmp_path, sources) as (app, asgi, links), TestClient(asgi, base_url=ORIGIN) as client:
        browser = Browser(app, client, links)
        browser.create("agent", "wants")
        browser.login("agent")
        assert browser.get("/ui/approvals").status_code == 403
        refused = browser.act("approve", "wants")
        assert refused.status_code == 400  # as the API answers it: `invalid`, the operator's verb
        assert "operator" in refused.text
        assert _reply(browser, "get", name="wants")["job"]["state"] == "pending"
