"""The dashboard is scoped exactly like the API (semantic 40): a source logs in with its token and sees
and changes only its own schedules; every change needs this page's Origin and the session's CSRF token."""

from __future__ import annotations

from typing import Any

from cronwright.app import App
from cronwright.fronts.ui.guard import CSP
from cronwright.fronts.ui.links import Links
from dashboard_site import ORIGIN, Browser, second_browser
from serving import TOKENS


def test_a_page_without_a_session_goes_to_the_login_form(browser: Browser) -> None:
    answer = browser.get("/ui/", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/login"


def test_a_source_logs_in_with_its_token_and_gets_a_strict_http_only_cookie(browser: Browser) -> None:
    answer = browser.login("agent")
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Path=/ui/" in cookie
    assert browser.get("/ui/").status_code == 200


def test_a_wrong_token_is_refused_and_starts_no_session(browser: Browser) -> None:
    answer = browser.post("/ui/login", {"token": TOKENS["agent"] + "x"})
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers
    assert browser.get("/ui/", follow_redirects=False).status_code == 303


def test_a_login_from_a_foreign_page_is_refused(browser: Browser) -> None:
    answer = browser.post("/ui/login", {"token": TOKENS["agent"]}, origin="http://evil.example")
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


def test_a_source_sees_only_its_own_schedules(browser: Browser) -> None:
    browser.create("agent", "agents-report")
    browser.create("other", "others-report")
    browser.login("agent")
    listed = browser.get("/ui/").text
    assert "agents-report" in listed
    assert "others-report" not in listed


def test_another_sources_schedule_is_not_found_by_url(browser: Browser) -> None:
    browser.create("other", "others-report")
    browser.login("agent")
    assert browser.get("/ui/schedules/others-report").status_code == 404
    assert browser.get("/ui/delete/others-report").status_code == 404


def test_a_source_cannot_change_another_sources_schedule(browser: Browser) -> None:
    browser.create("other", "others-report")
    browser.login("agent")
    assert browser.act("pause", "others-report").status_code == 404
    assert browser.act("delete", "others-report", confirm="yes").status_code == 404
    assert _job(browser.app, "others-report")["state"] == "active"


def test_pause_from_the_page_pauses_and_writes_the_audit_entry(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    answer = browser.act("pause", "nightly")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/schedules/nightly"
    assert _job(browser.app, "nightly")["state"] == "paused"
    entries = _audit(browser.app, "nightly")
    assert [e["action"] for e in entries][:1] == ["pause"]
    assert entries[0]["source"] == "agent"
    # The schedule's page shows the entry and the state.
    page = browser.get("/ui/schedules/nightly").text
    assert "state-paused" in page
    assert ">pause" in page


def test_a_change_without_the_csrf_token_is_refused(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    assert browser.post("/ui/actions/pause", {"name": "nightly"}).status_code == 403
    assert browser.post("/ui/actions/pause", {"name": "nightly", "csrf": "guessed"}).status_code == 403
    assert _job(browser.app, "nightly")["state"] == "active"
    assert [e["action"] for e in _audit(browser.app, "nightly")] == ["create"]


def test_a_change_from_a_foreign_origin_is_refused_even_with_the_token(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    token = browser.csrf()
    for origin in ("http://evil.example", None, "null"):
        answer = browser.post("/ui/actions/pause", {"name": "nightly", "csrf": token}, origin=origin)
        assert answer.status_code == 403, origin
    assert _job(browser.app, "nightly")["state"] == "active"


def test_one_sessions_csrf_token_does_not_serve_another_session(
    browser: Browser, site: tuple[App, Any, Links]
) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    mine = browser.csrf()
    other = Browser(browser.app, second_browser(site), browser.links)
    other.login("agent")
    answer = other.post("/ui/actions/pause", {"name": "nightly", "csrf": mine})
    assert answer.status_code == 403


def test_logout_ends_the_session(browser: Browser) -> None:
    browser.login("agent")
    answer = browser.post("/ui/logout", {"csrf": browser.csrf()})
    assert answer.status_code == 303
    assert browser.get("/ui/", follow_redirects=False).status_code == 303


def test_every_answer_carries_a_strict_csp_and_refuses_framing(browser: Browser) -> None:
    browser.login("agent")
    for path in ("/ui/", "/ui/login", "/ui/static/dashboard.css", "/ui/history"):
        headers = browser.get(path).headers
        assert headers["content-security-policy"] == CSP, path
        assert "frame-ancestors 'none'" in CSP
        assert "'unsafe-inline'" not in CSP
        assert headers["x-frame-options"] == "DENY"
    assert browser.get("/ui/").headers["cache-control"] == "no-store"


def test_no_page_holds_inline_script_or_style_or_a_cdn(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    for path in ("/ui/", "/ui/schedules/nightly", "/ui/history", "/ui/login", "/ui/timeline"):
        html = browser.get(path).text
        assert "<style" not in html, path
        assert " style=" not in html, path
        assert "<script>" not in html and "<script " not in html.replace('<script src="/ui/static/', ""), path
        assert "http://" not in html.replace(ORIGIN, "") and "https://" not in html, path


def _job(app: App, name: str) -> dict[str, Any]:
    reply = app.protocol.dispatch({"action": "get", "name": name}, app.config.source("other"))
    if not reply["ok"]:
        reply = app.protocol.dispatch({"action": "get", "name": name}, app.config.source("agent"))
    assert reply["ok"], reply
    job: dict[str, Any] = reply["job"]
    return job


def _audit(app: App, name: str) -> list[dict[str, Any]]:
    from cronwright.core.sources import operator

    reply = app.protocol.dispatch({"action": "audit", "name": name}, operator())
    entries: list[dict[str, Any]] = reply["entries"]
    return entries


def test_hostile_text_in_a_query_is_shown_as_text(browser: Browser) -> None:
    browser.login("agent")
    html = browser.get("/ui/", params={"q": "<script>alert(1)</script>", "target": '"><b>x'}).text
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '"><b>x' not in html


def test_ui_without_its_slash_leads_to_the_dashboard(browser: Browser) -> None:
    answer = browser.get("/ui", follow_redirects=False)
    assert answer.status_code in (307, 308)
    assert answer.headers["location"].endswith("/ui/")


def test_the_api_still_wants_its_bearer_token(browser: Browser) -> None:
    browser.login("agent")
    # A dashboard session is no bearer token: the API beside it is as closed as before.
    assert browser.get("/v1/jobs").status_code == 401


def test_a_source_has_no_source_filter_and_cannot_widen_its_list(browser: Browser) -> None:
    browser.create("other", "others-report")
    browser.login("agent")
    listed = browser.get("/ui/", params={"source": "other"}).text
    assert 'id="source"' not in listed
    assert "others-report" not in listed


def test_pause_with_a_note_shows_it_and_audits_it(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    assert 'id="pause-note"' in browser.get("/ui/schedules/nightly").text
    assert browser.act("pause", "nightly", note="<b>disk full</b>").status_code == 303
    assert _job(browser.app, "nightly")["pause_note"] == "<b>disk full</b>"
    assert _audit(browser.app, "nightly")[0]["note"] == "<b>disk full</b>"
    page = browser.get("/ui/schedules/nightly").text
    assert "&lt;b&gt;disk full&lt;/b&gt;" in page
    assert "<b>disk full</b>" not in page


def test_a_session_ends_twelve_hours_after_login_on_the_nodes_clock(browser: Browser) -> None:
    from datetime import timedelta

    from cronwright.clock import ManualClock

    clock = browser.app.node.clock
    assert isinstance(clock, ManualClock)
    browser.login("agent")
    clock.advance(timedelta(hours=11, minutes=59))
    assert browser.get("/ui/", follow_redirects=False).status_code == 200
    clock.advance(timedelta(minutes=1))
    assert browser.get("/ui/", follow_redirects=False).status_code == 303
