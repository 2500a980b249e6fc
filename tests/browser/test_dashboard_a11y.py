"""The dashboard's accessibility (issue 35, defect 13), in chromium against a real `cronwright serve`:
axe-core finds no serious violation on any page, at desktop width and at 375 px (its axe.min.js ships in
the axe-playwright-python wheel: nothing is fetched at test time); and what axe cannot judge is measured
in the page itself: the chart's labels at 375 px, the timeline's hint to scroll, the audit's headers on
one line."""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

import pytest

from browser.world import DESKTOP, PHONE, World, log_in

if TYPE_CHECKING:
    from playwright.sync_api import Page, ViewportSize

# conftest.py skips this suite, saying why, where playwright or chromium is missing.
expect = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed").expect

AXE = resources.files("axe_playwright_python").joinpath("axe.min.js")
LONG = "a long argument, as a report's recipients or a path of many folders make one, " * 3
PAGES = ("/ui/", "/ui/schedules/a11y-daily", "/ui/history", "/ui/timeline?span=7d", "/ui/notifications")


@pytest.fixture(scope="module")
def seeded(world: World) -> World:
    world.create("agent", "a11y-daily", schedule={"cron": "30 7 * * *", "tz": "Europe/Berlin"})
    world.create("agent", "a11y-every", schedule={"every": "1h"})
    paused = world.call("agent", {"action": "pause", "name": "a11y-every", "note": "for the audit"})
    assert paused["ok"], paused
    changed = world.call(
        "agent", {"action": "update", "name": "a11y-daily", "changes": {"args": {"to": LONG}}}
    )
    assert changed["ok"], changed
    ran = world.cli_json("run-now", "a11y-daily")
    assert ran["ok"], ran
    return world


def violations(page: Page) -> list[dict[str, Any]]:
    page.evaluate(AXE.read_text(encoding="utf-8"))  # through the debugger: the CSP allows no inline script
    found: list[dict[str, Any]] = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]} for v in found
    ]


def test_axe_finds_no_violation_at_desktop_width_or_at_375_px_light_or_dark(
    page: Page, seeded: World
) -> None:
    log_in(page, "agent")
    found: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
    looks: tuple[tuple[ViewportSize, Literal["light", "dark"]], ...] = (
        (DESKTOP, "light"), (PHONE, "light"), (PHONE, "dark")
    )  # fmt: skip
    for size, scheme in looks:
        page.set_viewport_size(size)
        page.emulate_media(color_scheme=scheme)
        for path in PAGES:
            page.goto(path)
            page.wait_for_load_state("networkidle")
            found[(size["width"], scheme, path)] = violations(page)
    assert all(not v for v in found.values()), {k: v for k, v in found.items() if v}


# The rendered size of each text of an SVG: its font size in the SVG's units, times the SVG's scale.
TEXT_SIZES = """svg => {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    return [...svg.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
}"""
# Whether a figure is cut (it scrolls sideways), and whether it says so and can be scrolled by keyboard.
SCROLLING = """figure => ({
    cut: figure.scrollWidth > figure.clientWidth,
    hinted: [...figure.querySelectorAll('.scroll-hint')].some(hint => hint.getClientRects().length > 0),
    focusable: figure.tabIndex >= 0,
})"""
# How many lines a cell's text takes: its text's line boxes, by their distinct tops.
LINES = """cell => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
}"""


def test_the_charts_labels_are_legible_at_375_px_and_a_cut_drawing_says_to_scroll(
    page: Page, seeded: World
) -> None:
    log_in(page, "agent")
    for size in (PHONE, DESKTOP):
        page.set_viewport_size(size)
        for path, drawing in (
            ("/ui/schedules/a11y-daily", "figure.chart"),
            ("/ui/timeline?span=7d", "figure.timeline"),
        ):
            page.goto(path)
            figure = page.locator(drawing)
            sizes: list[float] = figure.locator("svg").evaluate(TEXT_SIZES)
            assert sizes and min(sizes) >= 10, (size, path, sorted(sizes)[:5])
            shown: dict[str, bool] = figure.evaluate(SCROLLING)
            assert shown["cut"] is (size == PHONE), (size, path, shown)
            assert shown["hinted"] is shown["cut"] and shown["focusable"], (size, path, shown)


def test_the_timeline_drawing_holds_nothing_focusable(page: Page, seeded: World) -> None:
    log_in(page, "agent")
    page.goto("/ui/timeline?span=7d")

    inside = page.locator("svg[role=img] a, svg[role=img] [tabindex], svg[role=img] [href]")
    expect(inside).to_have_count(0)


def test_the_audit_headers_never_break_inside_a_word(page: Page, seeded: World) -> None:
    log_in(page, "agent")
    page.goto("/ui/schedules/a11y-daily")
    headers = page.locator("section[aria-labelledby=audit] thead th")

    assert headers.count() == 4
    assert [headers.nth(i).evaluate(LINES) for i in range(4)] == [1, 1, 1, 1]
