"""Everything a row holds is shown as text (semantic 40): a hostile name, args or search is escaped by the
templates' autoescape, on every page that shows it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dashboard_site import Browser

HOSTILE = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _rename_behind_the_services_back(database: Path, old: str, new: str) -> None:
    """A name no front accepts, written into the store's file directly (as a hand-edited row would be)."""
    # The name is in its column and in the row's JSON `data`, which is what a read decodes.
    with sqlite3.connect(database) as connection:
        connection.execute(
            "UPDATE jobs SET name = ?, data = json_set(data, '$.name', ?) WHERE name = ?", (new, new, old)
        )
    connection.close()


def test_a_schedule_named_script_is_shown_as_text(browser: Browser, tmp_path: Path) -> None:
    browser.create("agent", "plain")
    _rename_behind_the_services_back(tmp_path / "cw.db", "plain", HOSTILE)
    browser.login("agent")
    for path in ("/ui/", "/ui/timeline"):
        html = browser.get(path).text
        assert HOSTILE not in html, path
        assert ESCAPED in html, path
    # Its own page, by the quoted link the list gives it.
    link = "/ui/schedules/%3Cscript%3Ealert%281%29%3C%2Fscript%3E"
    assert f'href="{link}"' in browser.get("/ui/").text
    page = browser.get(link)
    assert page.status_code == 200
    assert HOSTILE not in page.text
    assert f"<h1>{ESCAPED}" in page.text


def test_hostile_args_are_shown_as_text(browser: Browser) -> None:
    browser.create("agent", "nightly", args={"note": '<img src=x onerror="alert(1)">'})
    browser.login("agent")
    for path in ("/ui/schedules/nightly", "/ui/edit/nightly"):
        html = browser.get(path).text
        assert "<img src=x" not in html, path
        assert "&lt;img src=x" in html, path


def test_a_hostile_search_is_shown_as_text(browser: Browser) -> None:
    browser.login("agent")
    html = browser.get("/ui/", params={"q": HOSTILE, "target": '"><b>x', "state": HOSTILE}).text
    assert HOSTILE not in html
    assert ESCAPED in html
    assert '"><b>x' not in html
