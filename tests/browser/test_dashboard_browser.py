"""The dashboard in chromium against a real `cronwright serve` (issue 17's "must show"): login by token and
by the operator's one-time link, scoping by source, pause with an audit entry, CSRF, hostile text shown as
text, the timeline's DST change, a live update after a CLI `run-now`, keyboard-only use, and JavaScript off.
Each page is also photographed at desktop width and at 375 px (see conftest.py for where).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from browser.world import (
    HOSTILE_ARG,
    HOSTILE_NOTE,
    HOSTILE_OUTPUT,
    TOKENS,
    World,
    log_in,
    shoot,
)
from cli.blackbox import wait_for

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Dialog, Page

# conftest.py skips this suite, saying why, where playwright or chromium is missing.
expect = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed").expect


@pytest.fixture(scope="module")
def seeded(world: World) -> World:
    """The schedules the tests look at, made through the HTTP API as their sources."""
    world.create("agent", "agent-daily", args={"who": HOSTILE_ARG})
    for name in ("agent-pause", "agent-csrf", "agent-keys", "agent-nojs", "agent-live"):
        world.create("agent", name)
    world.create("agent", "agent-hostile", action="hostile", schedule={"every": "1h"})
    world.create(
        "agent",
        "agent-timeline",
        schedule={"cron": "30 7 * * *", "tz": "Europe/Berlin", "jitter": "20m", "exclude": ["holidays"]},
    )
    world.create("other", "other-secret")
    paused = world.call("agent", {"action": "pause", "name": "agent-hostile", "note": HOSTILE_NOTE})
    assert paused["ok"], paused
    resumed = world.call("agent", {"action": "resume", "name": "agent-hostile"})
    assert resumed["ok"], resumed
    ran = world.cli_json("run-now", "agent-hostile")
    assert ran["ok"], ran
    wait_for("the hostile run to be recorded", lambda: bool(_runs(world, "agent-hostile")), timeout=30)
    return world


def _runs(world: World, name: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = world.cli_json("history", name)["runs"]
    return runs


def _show(world: World, name: str) -> dict[str, Any]:
    job: dict[str, Any] = world.cli_json("show", name)["job"]
    return job


def test_a_source_logs_in_with_its_token_and_sees_its_own_schedules(page: Page, seeded: World) -> None:
    log_in(page, "agent")
    rows = page.locator("table.rows tbody th")
    expect(rows.first).to_be_visible()
    names = rows.all_inner_texts()
    assert "agent-daily" in names
    assert "other-secret" not in names
    assert "other-secret" not in page.content()
    shoot(page, seeded, "schedules")
    page.goto("/ui/history")
    shoot(page, seeded, "history")
    page.goto("/ui/notifications")
    shoot(page, seeded, "notifications")


def test_a_source_cannot_reach_another_sources_schedule_by_url(page: Page, seeded: World) -> None:
    log_in(page, "agent")
    answer = page.goto("/ui/schedules/other-secret")
    assert answer is not None and answer.status == 404
    assert "other-secret" in page.locator("main").inner_text()  # the refusal names what was asked, no more
    assert "sh.log" not in page.locator("main").inner_text()
    answer = page.goto("/ui/delete/other-secret")
    assert answer is not None and answer.status == 404
    answer = page.goto("/ui/nodes")
    assert answer is not None and answer.status == 403


def test_the_operator_logs_in_once_with_the_printed_link(context: BrowserContext, seeded: World) -> None:
    link = seeded.link()
    page = context.new_page()
    page.goto(link)
    shoot(page, seeded, "operator-link")
    page.get_by_role("button", name="Log in as the operator").click()
    page.wait_for_url("**/ui/")
    names = page.locator("table.rows tbody th").all_inner_texts()
    assert "agent-daily" in names and "other-secret" in names  # the operator sees every source's
    page.goto("/ui/nodes")
    expect(page.locator("main")).to_contain_text("sqlite")
    shoot(page, seeded, "nodes")
    page.goto("/ui/approvals")
    shoot(page, seeded, "approvals")
    # The link is spent: a second browser cannot use it.
    assert context.browser is not None  # a context made by a browser (not a persistent one) has it
    other = context.browser.new_context(base_url=seeded.url)
    try:
        again = other.new_page()
        again.goto(link)
        again.get_by_role("button", name="Log in as the operator").click()
        expect(again.locator("main")).not_to_contain_text("Schedules")
        assert "/ui/login/link" in again.url
    finally:
        other.close()


def test_pause_from_the_page_pauses_the_job_and_writes_an_audit_entry(page: Page, seeded: World) -> None:
    log_in(page, "agent")
    page.goto("/ui/schedules/agent-pause")
    shoot(page, seeded, "schedule")
    page.get_by_label("Note (optional)").first.fill("paused from the browser")
    page.get_by_role("button", name="Pause", exact=True).click()
    page.wait_for_load_state()
    job = _show(seeded, "agent-pause")
    assert job["state"] == "paused"
    entries = seeded.cli_json("audit", "agent-pause")["entries"]
    assert entries[0]["action"] == "pause"
    assert entries[0]["source"] == "agent"
    assert entries[0]["note"] == "paused from the browser"


def test_a_change_without_the_csrf_token_is_refused(page: Page, seeded: World) -> None:
    log_in(page, "agent")
    page.goto("/ui/schedules/agent-csrf")
    # A forged form: the page's own, with its CSRF token taken out.
    page.evaluate("document.querySelectorAll('input[name=csrf]').forEach(e => e.remove())")
    with page.expect_response("**/ui/actions/pause") as answered:
        page.get_by_role("button", name="Pause", exact=True).click()
    assert answered.value.status == 403
    expect(page.locator("main")).to_contain_text("CSRF")
    assert _show(seeded, "agent-csrf")["state"] == "active"
    # And a post from the session's cookies alone (no form, no token) is refused too.
    answer = page.request.post(
        f"{seeded.url}/ui/actions/pause", form={"name": "agent-csrf"}, headers={"Origin": seeded.url}
    )
    assert answer.status == 403
    assert _show(seeded, "agent-csrf")["state"] == "active"


def test_hostile_text_is_shown_as_text_and_never_runs(page: Page, seeded: World) -> None:
    dialogs: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    log_in(page, "agent")
    for path in ("/ui/schedules/agent-daily", "/ui/schedules/agent-hostile", "/ui/history", "/ui/"):
        page.goto(path)
        page.wait_for_load_state("load")
    page.goto("/ui/schedules/agent-daily")
    assert HOSTILE_ARG in page.locator("main").inner_text()
    page.goto("/ui/schedules/agent-hostile")
    page.locator("details summary").first.click()
    main = page.locator("main").inner_text()
    assert HOSTILE_NOTE in main  # the pause note, in the audit entries
    assert HOSTILE_OUTPUT in main  # the run's captured output
    assert page.locator("main img").count() == 0
    assert page.locator("main script").count() == 0
    shoot(page, seeded, "schedule-hostile")
    # A hostile name cannot be made (the protocol refuses it), and one asked for by URL is refused
    # without anything of it running.
    refused = seeded.call("agent", {"action": "create_job", "job": {"name": HOSTILE_ARG, "target": "sh",
                                    "action": "log", "schedule": {"every": "1h"}}})  # fmt: skip
    assert refused["ok"] is False, refused
    answer = page.goto("/ui/schedules/" + quote(HOSTILE_NOTE, safe=""))
    assert answer is not None and answer.status == 404
    page.wait_for_load_state("load")
    assert page.locator("main img").count() == 0
    assert dialogs == []


def test_the_timeline_shows_berlins_spring_forward(page: Page, seeded: World) -> None:
    log_in(page, "agent")
    page.goto("/ui/timeline?span=7d")
    change = "Europe/Berlin: clocks go forward 1 hour (+01:00 to +02:00) at 2027-03-28T03:00:00+02:00"
    expect(page.locator(".cw-dst-list")).to_contain_text(change)
    line = page.locator("svg.cw-timeline g.cw-dst")
    expect(line).to_have_count(1)
    assert "DST Europe/Berlin +01:00 → +02:00" in (line.text_content() or "")
    # The daily 09:00 moves from +01:00 to +02:00 across the change, in the drawing's titles and the table.
    table = page.locator("table.cw-timeline-table").inner_text()
    assert "2027-03-27T09:00:00+01:00" in table and "2027-03-28T09:00:00+02:00" in table
    # Jitter, an excluded date and the occurrence it takes out, in the drawing and in words.
    lane = "agent-timeline"
    expect(page.locator("svg.cw-timeline rect.cw-excluded-day")).to_have_count(1)
    expect(page.locator("svg.cw-timeline g.cw-excluded")).to_have_count(1)
    excluded = page.locator("svg.cw-timeline g.cw-excluded title").text_content() or ""
    assert (
        excluded == f"{lane}: 2027-03-29T07:30:00+02:00 excluded, 2027-03-29 is listed in calendar 'holidays'"
    )
    jittered = [t for t in page.locator("svg.cw-timeline g.cw-firing title").all_text_contents() if lane in t]
    assert len(jittered) == 6 and all("(nominal " in t and ", jittered)" in t for t in jittered), jittered
    assert "excluded: 2027-03-29 is listed in calendar 'holidays'" in table
    assert "excluded date: 2027-03-29 is listed in calendar 'holidays'" in table
    shoot(page, seeded, "timeline-7d")
    page.goto("/ui/timeline")
    shoot(page, seeded, "timeline-24h")


def test_a_live_update_arrives_after_a_cli_run_now(page: Page, seeded: World) -> None:
    log_in(page, "agent")
    page.goto("/ui/schedules/agent-live")
    expect(page.locator("#live")).to_contain_text("No runs yet")
    expect(page.locator("body")).to_have_attribute("data-live-state", "open")
    ran = seeded.cli_json("run-now", "agent-live")
    assert ran["ok"], ran
    expect(page.locator("#live-status")).to_contain_text("Updated", timeout=30_000)
    expect(page.locator("#live .outcome-ok").first).to_be_visible(timeout=30_000)
    (run,) = _runs(seeded, "agent-live")
    expect(page.locator("#live")).to_contain_text(run["fire_id"])


def test_the_keyboard_alone_reaches_and_presses_pause(page: Page, seeded: World) -> None:
    page.goto("/ui/login")
    page.keyboard.press("Tab")  # the skip link first
    for _ in range(10):
        if page.evaluate("document.activeElement && document.activeElement.id") == "token":
            break
        page.keyboard.press("Tab")
    page.keyboard.type(TOKENS["agent"])
    page.keyboard.press("Enter")
    page.wait_for_url("**/ui/")
    page.goto("/ui/schedules/agent-keys")
    reached = []
    for _ in range(40):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "(() => { const e = document.activeElement;"
            " return e ? [e.tagName, e.textContent.trim()] : null })()"
        )
        reached.append(focused)
        if focused == ["BUTTON", "Pause"]:
            break
    assert ["BUTTON", "Pause"] in reached, reached
    page.keyboard.press("Enter")
    page.wait_for_load_state()
    assert _show(seeded, "agent-keys")["state"] == "paused"


def test_the_pages_work_with_javascript_off(chromium: Any, seeded: World) -> None:
    context = chromium.new_context(base_url=seeded.url, java_script_enabled=False)
    try:
        page = context.new_page()
        log_in(page, "agent")
        assert "agent-nojs" in page.locator("table.rows").inner_text()
        page.goto("/ui/schedules/agent-nojs")
        page.get_by_role("button", name="Pause", exact=True).click()
        page.wait_for_load_state()
        assert _show(seeded, "agent-nojs")["state"] == "paused"
        page.goto("/ui/timeline?span=7d")
        expect(page.locator("table.cw-timeline-table")).to_contain_text("agent-daily")
        expect(page.locator(".cw-dst-list")).to_contain_text("Europe/Berlin")
        shoot(page, seeded, "timeline-no-js")
    finally:
        context.close()


def test_the_login_page(page: Page, seeded: World) -> None:
    page.goto("/ui/login")
    expect(page.get_by_label("Your source's bearer token")).to_be_visible()
    shoot(page, seeded, "login")
