"""The local operator's one-time link (semantic 40): it logs in once, within its minute, on the node's
clock; opening its page spends nothing; a forged or foreign token logs nobody in."""

from __future__ import annotations

from datetime import timedelta

from cronwright.clock import ManualClock
from cronwright.fronts.ui.links import Links, issue
from dashboard_site import Browser


def _token(browser: Browser) -> str:
    return issue(browser.links.key, browser.app.node.clock.now())


def _redeem(browser: Browser, token: str) -> int:
    status: int = browser.post("/ui/login/link", {"token": token}).status_code
    return status


def test_the_link_logs_the_operator_in(browser: Browser) -> None:
    browser.create("agent", "agents-report")
    token = _token(browser)
    page = browser.get("/ui/login/link", params={"token": token})
    assert page.status_code == 200
    assert "Log in as the operator" in page.text
    assert _redeem(browser, token) == 303
    # The operator sees every source's schedules, and the operator's pages.
    assert "agents-report" in browser.get("/ui/").text
    assert browser.get("/ui/nodes").status_code == 200
    assert browser.get("/ui/approvals").status_code == 200


def test_the_link_works_once(browser: Browser) -> None:
    token = _token(browser)
    assert _redeem(browser, token) == 303
    other = Browser(
        browser.app,
        type(browser.client)(browser.client.app, base_url=str(browser.client.base_url)),
        browser.links,
    )
    assert _redeem(other, token) == 401
    assert other.get("/ui/", follow_redirects=False).status_code == 303


def test_opening_the_links_page_does_not_spend_it(browser: Browser) -> None:
    token = _token(browser)
    for _ in range(3):
        assert browser.get("/ui/login/link", params={"token": token}).status_code == 200
    assert _redeem(browser, token) == 303


def test_the_link_expires_after_a_minute_on_the_nodes_clock(browser: Browser) -> None:
    clock = browser.app.node.clock
    assert isinstance(clock, ManualClock)
    token = _token(browser)
    clock.advance(timedelta(seconds=61))
    assert _redeem(browser, token) == 401
    assert browser.get("/ui/", follow_redirects=False).status_code == 303


def test_a_link_within_its_minute_still_works(browser: Browser) -> None:
    clock = browser.app.node.clock
    assert isinstance(clock, ManualClock)
    token = _token(browser)
    clock.advance(timedelta(seconds=59))
    assert _redeem(browser, token) == 303


def test_a_forged_or_foreign_token_logs_nobody_in(browser: Browser) -> None:
    token = _token(browser)
    expires, nonce, mac = token.split(".")
    later = str(int(expires) + 3600)
    foreign = issue(Links().key, browser.app.node.clock.now())
    for forged in (f"{later}.{nonce}.{mac}", f"{expires}.{nonce}x.{mac}", foreign, "", "a.b", "1.2.3"):
        assert _redeem(browser, forged) == 401, forged
    assert browser.get("/ui/", follow_redirects=False).status_code == 303


def test_a_link_posted_from_a_foreign_page_is_refused_and_not_spent(browser: Browser) -> None:
    token = _token(browser)
    assert browser.post("/ui/login/link", {"token": token}, origin="http://evil.example").status_code == 403
    assert _redeem(browser, token) == 303


def test_the_operator_filters_the_schedules_by_source(browser: Browser) -> None:
    browser.create("agent", "agents-report")
    browser.create("other", "others-report")
    assert _redeem(browser, _token(browser)) == 303
    listed = browser.get("/ui/", params={"source": "agent"}).text
    assert "agents-report" in listed
    assert "others-report" not in listed
    assert 'id="source"' in listed


def test_the_operators_nodes_page_shows_the_node_the_store_and_its_persistence(browser: Browser) -> None:
    assert _redeem(browser, _token(browser)) == 303
    page = browser.get("/ui/nodes").text
    assert browser.app.node.id in page
    status = browser.app.protocol.dispatch({"action": "status"}, browser.app.config.source("agent"))
    assert status["node"]["persistence"] in page
    assert "Runs in flight" in page


def test_a_source_has_no_nodes_page(browser: Browser) -> None:
    browser.login("agent")
    assert browser.get("/ui/nodes").status_code == 403
    assert "Nodes" not in browser.get("/ui/").text.split("<main")[0]
