"""The fronts' wake-ups of the node under a burst of changes: the first at once, the rest folded into one
trailing signal per window, and never a change left without a signal sent after it."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from cronwright.fronts.cli.wake_coalescing import WINDOW, CoalescedWake, _TimerThread


class Manual:
    """A clock that moves only when told, and a timer whose callables run only when the test says."""

    def __init__(self) -> None:
        self.now = 100.0
        self.scheduled: list[tuple[float, Callable[[], None]]] = []

    def clock(self) -> float:
        return self.now

    def timer(self, delay: float, action: Callable[[], None]) -> None:
        self.scheduled.append((self.now + delay, action))

    def run_due(self) -> None:
        """Moves the clock to each scheduled instant in turn and runs what was scheduled for it."""
        while self.scheduled:
            self.scheduled.sort(key=lambda entry: entry[0])
            at, action = self.scheduled.pop(0)
            self.now = max(self.now, at)
            action()


def coalesced(manual: Manual, log: list[str]) -> CoalescedWake:
    return CoalescedWake(lambda: log.append("signal"), WINDOW, manual.clock, manual.timer)


def test_a_burst_of_creates_sends_one_signal_at_once_and_one_after_the_window() -> None:
    manual, log = Manual(), list[str]()
    wake = coalesced(manual, log)

    for _ in range(500):
        wake.changed()
        log.append("change")
        manual.now += WINDOW / 1000  # 500 changes within half a window
    assert log.count("signal") == 1 and log[0] == "signal", "the first change signals at once"
    assert [at - 100.0 for at, _ in manual.scheduled] == [pytest.approx(WINDOW)], "one trailing signal"

    manual.run_due()

    assert log.count("signal") == 2
    assert log[-1] == "signal", "the last change of the burst is followed by a signal"


def test_changes_further_apart_than_the_window_each_signal_at_once() -> None:
    manual, log = Manual(), list[str]()
    wake = coalesced(manual, log)

    for _ in range(5):
        wake.changed()
        manual.now += WINDOW * 1.5

    assert log == ["signal"] * 5
    assert manual.scheduled == [], "nothing waits: a lone change is never delayed"


def test_a_steady_stream_signals_once_a_window_and_every_change_is_covered() -> None:
    manual = Manual()
    signals_at: list[float] = []
    wake = CoalescedWake(lambda: signals_at.append(manual.now), WINDOW, manual.clock, manual.timer)
    changes_at: list[float] = []

    step = WINDOW / 7  # a change every 1.4 ms for 200 windows
    end = manual.now + 200 * WINDOW
    while manual.now < end:
        due = [entry for entry in manual.scheduled if entry[0] <= manual.now]
        for entry in due:
            manual.scheduled.remove(entry)
            entry[1]()
        wake.changed()
        changes_at.append(manual.now)
        manual.now += step
    manual.run_due()

    assert len(signals_at) <= 201, "at most one signal a window (and one for the first change)"
    assert len(signals_at) < len(changes_at) / 5
    for changed in changes_at:
        assert any(sent >= changed for sent in signals_at), "a change with no signal sent after it"
    late = [min(sent for sent in signals_at if sent >= changed) - changed for changed in changes_at]
    assert max(late) <= WINDOW + 1e-9, "no change waits longer than the window for its signal"


def test_a_change_made_while_the_trailing_signal_goes_out_gets_a_signal_of_its_own() -> None:
    manual, log = Manual(), list[str]()
    wake: CoalescedWake

    def signal() -> None:
        log.append("signal")
        if log.count("signal") == 2:  # inside the trailing signal: a change lands just as it is sent
            wake.changed()

    wake = CoalescedWake(signal, WINDOW, manual.clock, manual.timer)
    wake.changed()
    wake.changed()
    manual.run_due()

    assert log == ["signal"] * 3


def test_the_timer_thread_runs_each_thing_it_is_given() -> None:
    timer = _TimerThread()
    ran: list[str] = []
    done = threading.Condition()

    def note(what: str) -> None:
        with done:
            ran.append(what)
            done.notify()

    timer.call_after(0.001, lambda: note("later"))
    timer.call_after(0.0, lambda: note("now"))
    timer.call_after(0.002, lambda: note("last"))

    with done:
        assert done.wait_for(lambda: len(ran) == 3, 30)
    assert sorted(ran) == ["last", "later", "now"]
