"""Where the visual parts plug in: the schedule in words, the runs chart and the timeline drawing.

They come from words.py, charts.py and timeline.py (pure functions that return text, or SVG markup they
have escaped themselves). Until one of them is there, the page shows plain text in its place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from cronwright.fronts import render


def describe(job: Mapping[str, Any]) -> str:
    """The schedule in words, for people: words.describe(job row) once it exists."""
    return render.schedule_text(job["schedule"])


def runs_chart(runs: Sequence[Mapping[str, Any]]) -> Markup | None:
    """The duration and outcome chart of these runs (newest first), as SVG: charts.runs_chart_svg."""
    return None


def timeline(jobs: Sequence[Mapping[str, Any]]) -> Markup | None:
    """The timeline of these schedules' coming firings, as SVG: timeline.py's drawing."""
    return None
