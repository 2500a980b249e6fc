"""The runs chart (fronts/ui/charts.py): a bar a run, outcome in colour and in words, everything escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from cronwright.fronts.ui.charts import MAX_BARS, duration_text, runs_chart

SVG = ""  # inline in HTML, the drawing names no namespace


def run(n: int, outcome: str = "ok", took_ms: int = 100, message: str = "") -> dict[str, object]:
    return {
        "id": n,
        "fire_id": f"f{n}",
        "attempt": 1,
        "started_at": f"2027-03-01T09:{n:02d}:00+01:00",
        "outcome": outcome,
        "took_ms": took_ms,
        "message": message,
    }


def bars(drawing: str) -> list[ET.Element]:
    return [g for g in ET.fromstring(drawing).iter(f"{SVG}g") if "cw-run" in (g.get("class") or "")]


def child(g: ET.Element, tag: str) -> ET.Element:
    found = g.find(f"{SVG}{tag}")
    assert found is not None, tag
    return found


def test_bars_go_oldest_first_with_their_outcome_in_words() -> None:
    newest_first = [run(3, "error", 300, "boom"), run(2, "timeout", 2000), run(1, "ok", 1000)]
    drawn = bars(runs_chart(newest_first))
    assert [g.get("data-outcome") for g in drawn] == ["ok", "timeout", "error"]
    labels = [child(g, "text").text for g in drawn]
    assert labels == ["ok", "t/o", "err"]
    titles = [child(g, "title").text for g in drawn]
    assert titles[2] == "2027-03-01T09:03:00+01:00: error, took 300 ms, attempt 1, fire_id f3: boom"


def test_the_height_is_the_duration_against_the_longest() -> None:
    drawn = bars(runs_chart([run(2, took_ms=500), run(1, took_ms=1000)]))
    heights = [float(child(g, "rect").get("height", "0")) for g in drawn]
    assert heights[0] == 2 * heights[1]


def test_the_description_counts_the_outcomes() -> None:
    root = ET.fromstring(runs_chart([run(3, "error"), run(2, "ok", 61_500), run(1, "ok")]))
    (desc,) = root.iter(f"{SVG}desc")
    assert desc.text == "3 runs: 2 ok, 1 error; the longest took 1 min 01 s."


def test_no_runs_is_said_in_words() -> None:
    assert runs_chart([]) == '<p class="cw-chart-empty">No runs yet.</p>'


def test_only_the_newest_runs_are_drawn() -> None:
    drawn = bars(runs_chart([run(n % 60) for n in range(MAX_BARS + 10)]))
    assert len(drawn) == MAX_BARS


def test_a_hostile_message_and_outcome_are_text() -> None:
    drawing = runs_chart([run(1, '<img src=x onerror="alert(1)">', 5, "<script>alert(2)</script>")])
    assert "<script" not in drawing and "<img" not in drawing
    (g,) = bars(drawing)
    assert g.get("data-outcome") == '<img src=x onerror="alert(1)">'
    assert (child(g, "title").text or "").endswith(": <script>alert(2)</script>")


def test_durations_in_words() -> None:
    assert [duration_text(ms) for ms in (0, 999, 1000, 12_345, 60_000, 245_000)] == [
        "0 ms",
        "999 ms",
        "1.0 s",
        "12.3 s",
        "1 min 00 s",
        "4 min 05 s",
    ]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ok", "error", "timeout", "crashed", "refused", "interrupted"]),
            st.integers(min_value=0, max_value=10**9),
            st.text(max_size=50),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_any_runs_make_a_well_formed_chart_with_a_labelled_bar_each(runs: list[tuple[str, int, str]]) -> None:
    rows = [run(n % 60, outcome, took, message) for n, (outcome, took, message) in enumerate(runs)]
    drawn = bars(runs_chart(rows))
    assert len(drawn) == min(len(rows), MAX_BARS)
    for g, row in zip(drawn, reversed(rows[:MAX_BARS]), strict=True):
        assert g.get("data-outcome") == row["outcome"]
        assert g.find(f"{SVG}text") is not None  # a word beside the colour
        height = float(child(g, "rect").get("height", "0"))
        assert 1 <= height <= 116
