"""A schedule's recent runs as a server-rendered SVG bar chart: a bar a run, its height the run's duration.

Pure. It takes the protocol's run rows (newest first, as `get` and `history` answer) and draws them oldest
first, left to right. The outcome is a colour and also words: a label under each bar and a `<title>` with
the run's start, outcome, duration, attempt and fire_id, so nothing depends on telling colours apart.
Every text is escaped here; no inline style (presentation attributes and classes, for a strict CSP).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cronwright.fronts.render import counted
from cronwright.fronts.ui.svg import esc

WIDTH = 600
HEIGHT = 180
BASE = 140  # the bars' baseline
TOP = 24  # room for the scale above the tallest bar
LEFT = 50  # room for the scale's labels
# The chart draws at most this many runs (the newest), so that every bar has room for its label.
MAX_BARS = 24

# The outcome's fill and its short label under a bar; an outcome not listed gets a grey bar and its name.
OUTCOMES: dict[str, tuple[str, str]] = {
    "ok": ("#2e8540", "ok"),
    "error": ("#c0392b", "err"),
    "timeout": ("#d35400", "t/o"),
    "crashed": ("#8e44ad", "crash"),
    "refused": ("#7f8c8d", "ref"),
    "interrupted": ("#b7950b", "int"),
    "cancelled": ("#5d6d7e", "cncl"),
}


def duration_text(took_ms: int) -> str:
    """'850 ms', '12.3 s', '4 min 05 s'."""
    if took_ms < 1000:
        return f"{took_ms} ms"
    if took_ms < 60_000:
        return f"{took_ms / 1000:.1f} s"
    minutes, seconds = divmod(took_ms // 1000, 60)
    return f"{minutes} min {seconds:02d} s"


def runs_chart(runs: Sequence[Mapping[str, Any]]) -> str:
    """The chart of `runs` (newest first) as one `<svg>`, or a sentence when there are none."""
    if not runs:
        return '<p class="cw-chart-empty">No runs yet.</p>'
    shown = list(reversed(runs[:MAX_BARS]))
    longest = max(max(_took(run) for run in shown), 1)
    slot = (WIDTH - LEFT - 10) / len(shown)
    bar = max(2.0, min(28.0, slot * 0.7))
    counts = _counts(shown)
    summary = ", ".join(f"{count} {outcome}" for outcome, count in counts.items())
    said = f"{counted(len(shown), 'run')}: {summary}; the longest took {duration_text(longest)}."
    parts = [
        f'<svg class="cw-runs-chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="100%" role="img" aria-labelledby="cw-runs-title cw-runs-desc">',
        '<title id="cw-runs-title">Recent runs: duration and outcome, oldest to newest</title>',
        f'<desc id="cw-runs-desc">{esc(said)}</desc>',
        f'<line x1="{LEFT}" y1="{BASE}" x2="{WIDTH - 10}" y2="{BASE}" stroke="currentColor"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" font-size="11" text-anchor="end" fill="currentColor">'
        f"{esc(duration_text(longest))}</text>",
        f'<text x="{LEFT - 4}" y="{BASE}" font-size="11" text-anchor="end" fill="currentColor">0</text>',
    ]
    for index, run in enumerate(shown):
        x = round(LEFT + slot * index + (slot - bar) / 2, 2)
        parts.append(_bar(run, x, bar, longest))
    parts.append("</svg>")
    return "".join(parts)


def _bar(run: Mapping[str, Any], x: float, width: float, longest: int) -> str:
    outcome = str(run.get("outcome", "?"))
    fill, short = OUTCOMES.get(outcome, ("#999999", outcome))
    took = _took(run)
    height = max(1.0, round((BASE - TOP) * took / longest, 2))
    title = (
        f"{run.get('started_at', '?')}: {outcome}, took {duration_text(took)}, "
        f"attempt {run.get('attempt', '?')}, fire_id {run.get('fire_id', '?')}"
    )
    message = str(run.get("message") or "")
    if message:
        title += f": {message[:200]}"
    label = (
        f'<text x="{round(x + width / 2, 2)}" y="{BASE + 14}" font-size="10" text-anchor="middle" '
        f'fill="currentColor">{esc(short)}</text>'
    )
    return (
        f'<g class="cw-run cw-{esc(outcome)}" data-outcome="{esc(outcome)}"><title>{esc(title)}</title>'
        f'<rect x="{x}" y="{round(BASE - height, 2)}" width="{round(width, 2)}" height="{height}" '
        f'fill="{fill}"/>{label}</g>'
    )


def _took(run: Mapping[str, Any]) -> int:
    took = run.get("took_ms")
    return took if isinstance(took, int) and not isinstance(took, bool) and took > 0 else 0


def _counts(runs: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for run in runs:
        outcome = str(run.get("outcome", "?"))
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts
