"""Semantic 32: the jitter offset is in [0, jitter), a pure function of job id and nominal instant, and
capped below the gap to the next nominal instant, so it never reorders or merges occurrences."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronwright.errors import Invalid
from cronwright.timing.cron_set import CronSet
from cronwright.timing.jitter import MAX_JITTER, jittered, offset, parse_jitter

BERLIN = ZoneInfo("Europe/Berlin")
_INSTANTS = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
_JITTERS = st.integers(min_value=1, max_value=MAX_JITTER // timedelta(milliseconds=1)).map(
    lambda ms: timedelta(milliseconds=ms)
)
_GAPS = st.integers(min_value=1, max_value=10**11).map(lambda us: timedelta(microseconds=us))


@settings(max_examples=300)
@given(st.integers(min_value=1, max_value=2**62), _INSTANTS, _JITTERS, _GAPS)
def test_offset_is_in_range_and_below_the_gap(
    job_id: int, nominal: datetime, jitter: timedelta, gap: timedelta
) -> None:
    delay = offset(job_id, nominal, jitter, nominal + gap)
    assert timedelta(0) <= delay < jitter
    assert delay < gap
    assert delay == offset(job_id, nominal, jitter, nominal + gap)  # stable


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=1, max_value=10**9),
    st.sampled_from(["*/5 * * * *", "0 * * * *", "30 2 * * *", "* * * * *"]),
    st.sampled_from(["1s", "30s", "5m", "1h", "1d"]),
    st.datetimes(min_value=datetime(2026, 3, 25), max_value=datetime(2026, 10, 30), timezones=st.just(UTC)),
)
def test_jitter_never_reorders_or_merges_occurrences(
    job_id: int, text: str, jitter_text: str, after: datetime
) -> None:
    jitter = parse_jitter(jitter_text)
    nominals = list(islice(CronSet.parse(text).iter_after(after, BERLIN), 40))
    followers = [*nominals[1:], None]
    delayed = [jittered(job_id, n, jitter, f) for n, f in zip(nominals, followers, strict=True)]
    assert delayed == sorted(set(delayed))  # strictly increasing: nothing reordered, nothing merged
    for nominal, following, when in zip(nominals, followers, delayed, strict=True):
        assert nominal <= when < nominal + jitter
        assert following is None or when < following


def test_offsets_differ_between_jobs_and_instants() -> None:
    nominal = datetime(2026, 10, 25, 1, 0, tzinfo=UTC)
    jitter = timedelta(minutes=5)
    by_job = {offset(job_id, nominal, jitter, None) for job_id in range(1, 200)}
    by_instant = {offset(7, nominal + timedelta(hours=h), jitter, None) for h in range(200)}
    # 200 draws over 300,000 slots: a fixed or badly mixed hash would repeat far more.
    assert len(by_job) > 190 and len(by_instant) > 190


def test_offset_is_the_same_in_another_process() -> None:
    # Python's own hash() is salted per process; the offset must not be.
    code = (
        "from datetime import datetime, timedelta, UTC;"
        "from cronwright.timing.jitter import offset;"
        "print(offset(42, datetime(2026, 10, 25, 1, 0, tzinfo=UTC), timedelta(minutes=5), None)"
        " // timedelta(milliseconds=1))"
    )
    here = offset(42, datetime(2026, 10, 25, 1, 0, tzinfo=UTC), timedelta(minutes=5), None)
    there = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "1"},
    )
    assert int(there.stdout) == here // timedelta(milliseconds=1)


def test_no_room_before_the_next_instant_is_no_delay() -> None:
    nominal = datetime(2026, 1, 1, tzinfo=UTC)
    assert offset(1, nominal, timedelta(minutes=5), nominal + timedelta(microseconds=500)) == timedelta(0)


def test_offsets_are_whole_milliseconds() -> None:
    nominal = datetime(2026, 1, 1, tzinfo=UTC)
    delay = offset(3, nominal, timedelta(minutes=5), None)
    assert delay % timedelta(milliseconds=1) == timedelta(0)


@pytest.mark.parametrize(
    ("text", "words"), [("500us", "under a millisecond"), ("2d", "more than a day"), ("x", "not a duration")]
)
def test_a_bad_jitter_is_refused(text: str, words: str) -> None:
    with pytest.raises(Invalid) as refused:
        parse_jitter(text)
    assert words in refused.value.message and refused.value.field == "jitter"
