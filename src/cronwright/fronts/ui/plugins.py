"""Where the visual parts plug in: the schedule in words and the runs chart.

They come from words.py and charts.py (pure functions that return text, or SVG markup they have escaped
themselves). The timeline has its own page, timeline_page.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from cronwright.fronts.ui import charts, words


def describe(job: Mapping[str, Any]) -> str:
    """The schedule in words, for people (plain text: the template escapes it)."""
    return words.schedule_in_words(job["schedule"])


def runs_chart(runs: Sequence[Mapping[str, Any]]) -> Markup | None:
    """The duration and outcome chart of these runs (newest first), as SVG charts.py has escaped."""
    if not runs:
        return None  # the page says "No runs yet." itself
    return Markup(charts.runs_chart(runs))
