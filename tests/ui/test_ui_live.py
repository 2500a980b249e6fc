"""Live updates (semantic 25 and 40): the dashboard's event stream says `changed` after a change, woken by
the app's change feed, and nothing listens while no page is open."""

from __future__ import annotations

import threading

from dashboard_site import Browser


def _lines_until(browser: Browser, wanted: str, then: object = None) -> list[str]:
    """The stream's lines up to the first that holds `wanted`; `then()` runs once the stream is ready."""
    seen: list[str] = []
    with browser.client.stream("GET", "/ui/events") as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        for line in stream.iter_lines():
            seen.append(line)
            if line == "event: ready" and callable(then):
                then()
            if wanted in line:
                return seen
    return seen


def test_the_stream_says_changed_after_a_pause(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    token = browser.csrf()

    def pause() -> None:
        # From another thread, as another browser tab would: the stream is open meanwhile.
        threading.Thread(
            target=lambda: browser.post("/ui/actions/pause", {"name": "nightly", "csrf": token})
        ).start()

    seen = _lines_until(browser, "event: changed", then=pause)
    assert "event: changed" in seen


def test_the_stream_says_changed_after_a_change_made_through_the_api(browser: Browser) -> None:
    browser.login("agent")
    seen = _lines_until(browser, "event: changed", then=lambda: browser.create("agent", "later"))
    assert "event: changed" in seen


def test_nothing_listens_for_changes_while_no_page_is_open(browser: Browser) -> None:
    browser.login("agent")
    assert browser.app.changes.listening == 0
    _lines_until(browser, "event: changed", then=lambda: browser.create("agent", "later"))
    assert browser.app.changes.listening == 0


def test_the_stream_needs_a_session(browser: Browser) -> None:
    assert browser.get("/ui/events", headers={"Accept": "text/event-stream"}).status_code == 401


def test_the_stream_ends_when_the_app_stops(browser: Browser) -> None:
    browser.login("agent")
    seen = _lines_until(browser, "never said", then=browser.app.changes.close)
    assert "event: ready" in seen
    assert "event: changed" not in seen


def test_the_stream_ends_with_its_session(browser: Browser) -> None:
    browser.create("agent", "nightly")
    browser.login("agent")
    token = browser.csrf()

    def log_out_then_change() -> None:
        browser.post("/ui/logout", {"csrf": token})
        browser.create("agent", "later")

    seen = _lines_until(browser, "never said", then=log_out_then_change)
    assert "event: changed" not in seen
