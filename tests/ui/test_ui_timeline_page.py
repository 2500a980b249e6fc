"""The timeline page over HTTP (in-process): scoped to the caller, its drawing and its table both served.

The test app's clock stands at serving.NOW, 2026-03-02T09:00+01:00 (Europe/Berlin). The DST change on the
page is the browser tests' business (tests/browser), on a real serve under faketime.
"""

from __future__ import annotations

import re

from dashboard_site import Browser


def test_the_timeline_shows_a_sources_own_schedules_in_drawing_and_table(browser: Browser) -> None:
    browser.create("agent", "agents-report", schedule={"cron": "0 9 * * *", "tz": "Europe/Berlin"})
    browser.create("other", "others-report", schedule={"cron": "0 9 * * *", "tz": "Europe/Berlin"})
    browser.login("agent")
    answer = browser.get("/ui/timeline?span=7d")
    assert answer.status_code == 200
    text = answer.text
    assert '<svg class="cw-timeline"' in text
    assert 'class="cw-timeline-table rows"' in text
    assert "agents-report" in text
    assert "others-report" not in text
    assert (
        len(re.findall(r'<tr><th scope="row"><a href="/ui/schedules/agents-report">', text)) == 6
    )  # 3 to 8 March


def test_an_unknown_span_falls_back_to_a_day(browser: Browser) -> None:
    browser.create("agent", "agents-report", schedule={"every": "1h"})
    browser.login("agent")
    text = browser.get("/ui/timeline?span=forever").text
    assert 'aria-current="true">next 24 hours' in text
    assert "24 more firings in this window" not in text
    assert (
        len(re.findall(r"agents-report: fires at", text)) == 23
    )  # 10:00 to 08:00 the next day: the window [09:00, 09:00) ends before the 24th
