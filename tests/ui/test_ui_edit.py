"""Creating and editing from the dashboard, through the protocol: a preview (the dry run with JavaScript
off, the protocol's `preview` as it is typed) writes nothing; save writes the change and its audit entry."""

from __future__ import annotations

from typing import Any

from cronwright.core.sources import operator
from dashboard_site import Browser

FORM = {
    "name": "morning",
    "target": "reports.daily",
    "kind": "cron",
    "cron": "0 7 * * *",
    "tz": "Europe/Berlin",
    "args": "{}",
}


def _post(browser: Browser, path: str, intent: str, **fields: str) -> Any:
    return browser.post(path, {"csrf": browser.csrf(), **FORM, **fields, "intent": intent})


def _entries(browser: Browser) -> list[dict[str, Any]]:
    reply = browser.app.protocol.dispatch({"action": "audit"}, operator())
    entries: list[dict[str, Any]] = reply["entries"]
    return entries


def test_the_new_form_lists_only_the_targets_the_source_may_schedule(browser: Browser) -> None:
    browser.login("agent")
    html = browser.get("/ui/new").text
    assert '<option value="reports.daily"' in html
    assert "backup.nightly" not in html  # allowed on the node, not to this source


def test_preview_with_javascript_off_shows_the_firings_and_writes_nothing(browser: Browser) -> None:
    browser.login("agent")
    answer = _post(browser, "/ui/new", "preview")
    assert answer.status_code == 200
    assert "2026-03-03T07:00:00+01:00" in answer.text
    assert "2026-03-04T07:00:00+01:00" in answer.text
    assert browser.app.protocol.dispatch({"action": "list"}, operator())["jobs"] == []
    assert _entries(browser) == []


def test_create_from_the_form_makes_the_schedule_and_its_audit_entry(browser: Browser) -> None:
    browser.login("agent")
    answer = _post(browser, "/ui/new", "save", args='{"region": "eu"}')
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/schedules/morning"
    job = browser.app.protocol.dispatch({"action": "get", "name": "morning"}, operator())["job"]
    assert job["created_by"] == "agent"
    assert job["schedule"] == {"cron": "0 7 * * *", "tz": "Europe/Berlin"}
    assert job["args"] == {"region": "eu"}
    assert [(e["action"], e["source"]) for e in _entries(browser)] == [("create", "agent")]


def test_a_refused_create_shows_the_protocols_reason_and_keeps_the_form(browser: Browser) -> None:
    browser.login("agent")
    answer = _post(browser, "/ui/new", "save", cron="0 0 30 2 *")
    assert answer.status_code == 400
    assert "0 0 30 2 *" in answer.text  # the form is shown again, as typed
    assert 'role="alert"' in answer.text
    assert browser.app.protocol.dispatch({"action": "list"}, operator())["jobs"] == []


def test_args_that_are_not_json_are_refused_before_the_protocol(browser: Browser) -> None:
    browser.login("agent")
    answer = _post(browser, "/ui/new", "save", args="{not json")
    assert answer.status_code == 400
    assert "args must be a JSON object" in answer.text
    assert _entries(browser) == []


def test_a_target_the_source_may_not_use_is_refused(browser: Browser) -> None:
    browser.login("agent")
    answer = _post(browser, "/ui/new", "save", target="backup.nightly", args='{"dest": "x"}')
    assert answer.status_code == 403
    assert _entries(browser) == []


def test_the_form_needs_the_csrf_token(browser: Browser) -> None:
    browser.login("agent")
    answer = browser.post("/ui/new", {**FORM, "intent": "save"})
    assert answer.status_code == 403
    assert _entries(browser) == []


def test_the_live_preview_answers_the_typed_expression_with_its_firings(browser: Browser) -> None:
    browser.login("agent")
    answer = browser.get("/ui/preview", params={"cron": "30 2 * * *", "tz": "Europe/Berlin"})
    assert answer.status_code == 200
    assert "2026-03-03T02:30:00+01:00" in answer.text
    refused = browser.get("/ui/preview", params={"cron": "not cron"})
    assert refused.status_code == 400
    assert 'role="alert"' in refused.text


def test_edit_changes_the_schedule_through_update_and_audits_it(browser: Browser) -> None:
    browser.create("agent", "morning")
    browser.login("agent")
    form = browser.get("/ui/edit/morning").text
    assert "0 7 * * *" in form
    preview = _post(browser, "/ui/edit/morning", "preview", cron="0 8 * * *")
    assert preview.status_code == 200
    assert "2026-03-03T08:00:00+01:00" in preview.text
    assert [e["action"] for e in _entries(browser)] == ["create"]
    saved = _post(browser, "/ui/edit/morning", "save", cron="0 8 * * *")
    assert saved.status_code == 303
    job = browser.app.protocol.dispatch({"action": "get", "name": "morning"}, operator())["job"]
    assert job["schedule"]["cron"] == "0 8 * * *"
    assert [e["action"] for e in _entries(browser)] == ["update", "create"]


def test_saving_an_unchanged_form_changes_nothing(browser: Browser) -> None:
    browser.create("agent", "morning", schedule={"cron": "0 7 * * *", "tz": "Europe/Berlin"})
    browser.login("agent")
    assert _post(browser, "/ui/edit/morning", "save").status_code == 303
    assert [e["action"] for e in _entries(browser)] == ["create"]


def test_another_sources_schedule_cannot_be_edited(browser: Browser) -> None:
    browser.create("other", "theirs")
    browser.login("agent")
    assert browser.get("/ui/edit/theirs").status_code == 404
    assert _post(browser, "/ui/edit/theirs", "save", name="theirs", cron="0 9 * * *").status_code == 404
    assert [e["action"] for e in _entries(browser)] == ["create"]
