"""The pool's reply thread (targets/replies.py) over real pipes: with epoll, where a new watch needs no
wake-up unless its deadline comes first, and with poll(), where every watch wakes the thread."""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

import pytest

from cronwright.targets.worker_replies import Event, Replies


class Pipe:
    """A worker's reply pipe: one JSON line is a reply, end of file is a death."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        self.events: list[Event] = []
        self.ended = threading.Event()

    def fileno(self) -> int:
        return self.read

    def receive(self) -> dict[str, Any] | Literal["died"] | None:
        chunk = os.read(self.read, 65536)
        return json.loads(chunk) if chunk else "died"

    def end(self, event: Event) -> None:
        self.events.append(event)
        self.ended.set()

    def outcome(self) -> Event:
        assert self.ended.wait(10), "the watch never ended"
        [event] = self.events  # exactly once
        return event

    def close(self) -> None:
        """Ends a watch still open (end of file) before its read end closes: a reused fd number must not
        reach a watch of an earlier test."""
        with contextlib.suppress(OSError):
            os.close(self.write)
        self.ended.wait(10)
        os.close(self.read)


def made(epoll: bool, grace: float = 600.0) -> Iterator[Replies]:
    """Replies whose parked thread leaves a pump's deadlines to it for `grace` seconds: long, so that no
    test of a pump races it, but the one that shows it keeping what a pump misses."""
    if epoll and not hasattr(__import__("select"), "epoll"):
        pytest.skip("no epoll here")
    replies = Replies(epoll=epoll, grace=grace)
    yield replies
    replies.close()
    for thread in threading.enumerate():  # it ends once its watches have (the pipes fixture ends them)
        if thread.name == "cronwright-replies":
            thread.join(10)


@pytest.fixture(params=[True, False], ids=["epoll", "poll"])
def replies(request: pytest.FixtureRequest) -> Iterator[Replies]:
    yield from made(request.param)


@pytest.fixture
def on_epoll() -> Iterator[Replies]:
    yield from made(epoll=True)


@pytest.fixture
def pipes() -> Iterator[list[Pipe]]:
    made: list[Pipe] = []
    yield made
    for pipe in made:
        pipe.close()


def far() -> float:
    return time.monotonic() + 600


def asleep_in_its_wait() -> None:
    """Returns once the replies thread sleeps in poll() or epoll_wait() (Linux: its /proc wchan)."""
    [thread] = [t for t in threading.enumerate() if t.name == "cronwright-replies"]
    for _ in range(10_000):
        task = f"/proc/self/task/{thread.native_id}"
        with open(f"{task}/wchan") as wchan, open(f"{task}/stat") as stat:
            if "poll" in wchan.read() and stat.read().rsplit(")", 1)[1].split()[0] == "S":
                return
        time.sleep(0.001)  # a condition to wait for, not time to pass
    raise AssertionError("the replies thread never went to sleep")


def test_each_of_a_burst_of_watches_gets_its_own_reply_once(replies: Replies, pipes: list[Pipe]) -> None:
    pipes.extend(Pipe() for _ in range(16))
    for pipe in pipes:
        replies.watch(pipe, far(), pipe.end)
    for n, pipe in reversed(list(enumerate(pipes))):
        os.write(pipe.write, json.dumps({"n": n}).encode())

    assert [pipe.outcome() for pipe in pipes] == [{"n": n} for n in range(16)]


def test_a_watch_made_while_the_thread_waits_on_others_is_seen(replies: Replies, pipes: list[Pipe]) -> None:
    waiting, late_comer = Pipe(), Pipe()
    pipes.extend([waiting, late_comer])
    replies.watch(waiting, far(), waiting.end)
    asleep_in_its_wait()
    replies.watch(late_comer, far(), late_comer.end)  # with epoll, no wake-up: a later deadline
    os.write(late_comer.write, b'{"ok": true}')

    assert late_comer.outcome() == {"ok": True}
    assert not waiting.ended.is_set()


def test_a_deadline_before_the_waits_end_wakes_the_thread(replies: Replies, pipes: list[Pipe]) -> None:
    long, overdue = Pipe(), Pipe()
    pipes.extend([long, overdue])
    replies.watch(long, far(), long.end)
    asleep_in_its_wait()  # until `long`'s deadline, ten minutes away
    # Already past its deadline: the thread, waiting until `long`'s deadline, must wake for it now.
    replies.watch(overdue, time.monotonic() - 1, overdue.end)

    assert overdue.outcome() == "late"
    assert not long.ended.is_set()


def test_a_pipe_that_closes_is_a_death(replies: Replies, pipes: list[Pipe]) -> None:
    pipe = Pipe()
    pipes.append(pipe)
    replies.watch(pipe, far(), pipe.end)
    os.close(pipe.write)

    assert pipe.outcome() == "died"


def counting_wakes(replies: Replies) -> list[int]:
    """Counts the wake-ups `watch` writes to the thread's pipe."""
    wakes: list[int] = []
    wake = replies._wake

    def counted() -> None:
        wakes.append(1)
        wake()

    # The ignore below is kept: the test counts wake-ups by swapping the method on this instance.
    replies._wake = counted  # type: ignore[method-assign]
    return wakes


def test_a_watch_soon_after_the_last_call_ended_needs_no_wake_up(
    on_epoll: Replies, pipes: list[Pipe]
) -> None:
    """For a while after its last call ends the thread waits on a clock, so the next call (the next run
    of a busy node) is seen by its epoll_wait without a write, a context switch and a GIL hand-off."""
    replies = on_epoll
    first, second = Pipe(), Pipe()
    pipes.extend([first, second])
    replies.watch(first, far(), first.end)
    os.write(first.write, b'{"n": 1}')
    assert first.outcome() == {"n": 1}

    wakes = counting_wakes(replies)
    replies.watch(second, far(), second.end)
    os.write(second.write, b'{"n": 2}')
    assert second.outcome() == {"n": 2}
    assert wakes == []


def test_a_deadline_before_the_linger_ends_still_wakes_the_thread(
    on_epoll: Replies, pipes: list[Pipe]
) -> None:
    replies = on_epoll
    first, overdue = Pipe(), Pipe()
    pipes.extend([first, overdue])
    replies.watch(first, far(), first.end)
    os.write(first.write, b'{"n": 1}')
    assert first.outcome() == {"n": 1}

    wakes = counting_wakes(replies)
    replies.watch(overdue, time.monotonic() - 1, overdue.end)
    assert overdue.outcome() == "late"
    assert wakes == [1]


def test_after_the_linger_the_thread_sleeps_without_a_timeout(on_epoll: Replies, pipes: list[Pipe]) -> None:
    """Semantic 25: an idle node's reply thread wakes once after its last call, then never."""
    replies = on_epoll
    pipe = Pipe()
    pipes.append(pipe)
    replies.watch(pipe, far(), pipe.end)
    os.write(pipe.write, b'{"n": 1}')
    assert pipe.outcome() == {"n": 1}
    for _ in range(10_000):
        if replies._waits_until == math.inf:
            break
        time.sleep(0.001)  # a condition to wait for, not time to pass
    assert replies._waits_until == math.inf
    asleep_in_its_wait()


class CountingEpoll:
    """The thread's epoll set, its calls counted (the C object's methods cannot be wrapped in place)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls: list[tuple[str, int]] = []
        self.polls = 0

    def register(self, fd: int, mask: int) -> None:
        self.calls.append(("register", fd))
        self.real.register(fd, mask)

    def modify(self, fd: int, mask: int) -> None:
        self.calls.append(("modify", fd))
        self.real.modify(fd, mask)

    def unregister(self, fd: int) -> None:
        self.calls.append(("unregister", fd))
        self.real.unregister(fd)

    def poll(self, timeout: float) -> list[tuple[int, int]]:
        self.polls += 1
        found: list[tuple[int, int]] = self.real.poll(timeout)
        return found

    def close(self) -> None:
        self.real.close()


def counting_epoll(replies: Replies) -> CountingEpoll:
    counted = CountingEpoll(replies._epoll)
    # The ignore below is kept: a counting stand-in for the epoll object, on purpose.
    replies._epoll = counted  # type: ignore[assignment]
    return counted


def reply_on(replies: Replies, pipe: Pipe, n: int) -> Event:
    """One call on `pipe` (a worker's next run): watched, answered, ended."""
    pipe.events.clear()
    pipe.ended.clear()
    replies.watch(pipe, far(), pipe.end)
    os.write(pipe.write, json.dumps({"n": n}).encode())
    return pipe.outcome()


def until(what: str, check: Any) -> None:
    for _ in range(10_000):
        if check():
            return
        time.sleep(0.001)  # a condition to wait for, not time to pass
    raise AssertionError(f"never: {what}")


def test_a_worker_pipe_stays_registered_between_its_calls(on_epoll: Replies, pipes: list[Pipe]) -> None:
    """One epoll_ctl for the pipe's life, not one each way per call (a python firing's cost, per run)."""
    epoll = counting_epoll(on_epoll)
    pipe = Pipe()
    pipes.append(pipe)

    assert [reply_on(on_epoll, pipe, n) for n in range(3)] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert epoll.calls == [("register", pipe.read)]


def test_a_pipe_that_fires_while_unwatched_is_taken_out_not_spun_on(
    on_epoll: Replies, pipes: list[Pipe]
) -> None:
    """An idle worker that dies (its pipe at end of file, readable for ever) must not keep the thread
    spinning on a level-triggered epoll: the pipe leaves the set the first time it fires unwatched."""
    epoll = counting_epoll(on_epoll)
    pipe = Pipe()
    pipes.append(pipe)
    assert reply_on(on_epoll, pipe, 1) == {"n": 1}

    os.close(pipe.write)  # nobody watches it now
    until("the dead pipe is taken out", lambda: ("unregister", pipe.read) in epoll.calls)
    asleep_in_its_wait()
    polls = epoll.polls
    asleep_in_its_wait()
    assert epoll.polls - polls <= 1  # at most the linger's end: no wait returns at once any more
    assert epoll.calls.count(("unregister", pipe.read)) == 1


def test_a_new_pipe_on_a_closed_ones_fd_number_is_registered_afresh(
    on_epoll: Replies, pipes: list[Pipe]
) -> None:
    """The kernel drops a closed pipe from the epoll set: a new pipe that gets its fd number must be
    registered again, though the number is one the set had."""
    first = Pipe()
    assert reply_on(on_epoll, first, 1) == {"n": 1}
    os.close(first.write)
    os.close(first.read)
    second = Pipe()
    pipes.append(second)
    if second.read != first.read:
        pytest.skip("the new pipe got another fd number")

    assert reply_on(on_epoll, second, 2) == {"n": 2}


# --- pumping: the thread that waits for the calls does the reply thread's work (a tick's) -----------


class OnThread(Pipe):
    """A pipe that notes the thread its watch ended on."""

    def __init__(self) -> None:
        super().__init__()
        self.thread: int | None = None

    def end(self, event: Event) -> None:
        self.thread = threading.get_ident()
        super().end(event)


def reply_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "cronwright-replies"]


def pump_until(pump: Any, pipe: Pipe) -> None:
    for _ in range(1_000):
        if pipe.ended.is_set():
            return
        pump.wait(60)
    raise AssertionError("the pump never ended the watch")


def test_while_a_thread_pumps_the_replies_end_on_it(replies: Replies, pipes: list[Pipe]) -> None:
    first, second = OnThread(), OnThread()
    pipes.extend([first, second])
    with replies.pumping() as pump:
        replies.watch(first, far(), first.end)
        replies.watch(second, far(), second.end)
        os.write(second.write, b'{"n": 2}')
        os.write(first.write, b'{"n": 1}')
        pump_until(pump, first)
        pump_until(pump, second)
        assert replies.ended_on_thread == 0

    assert (first.outcome(), second.outcome()) == ({"n": 1}, {"n": 2})
    assert first.thread == second.thread == threading.get_ident()


def test_the_pump_keeps_the_deadlines(replies: Replies, pipes: list[Pipe]) -> None:
    overdue = OnThread()
    pipes.append(overdue)
    with replies.pumping() as pump:
        replies.watch(overdue, time.monotonic() - 1, overdue.end)
        pump_until(pump, overdue)

    assert overdue.outcome() == "late"
    assert overdue.thread == threading.get_ident()


@pytest.mark.parametrize("epoll", [True, False], ids=["epoll", "poll"])
def test_a_deadline_a_busy_pump_misses_is_kept_by_the_parked_thread(epoll: bool, pipes: list[Pipe]) -> None:
    """A pump busy elsewhere (a pass waiting on a store that hangs) does not wait, so it keeps no deadline:
    past the grace, the parked reply thread ends the call itself, and the pool kills its worker on time."""
    for replies in made(epoll, grace=0.0):
        overdue, waiting = OnThread(), OnThread()
        pipes.extend([overdue, waiting])
        with replies.pumping():  # and never waits
            replies.watch(waiting, far(), waiting.end)
            replies.watch(overdue, time.monotonic(), overdue.end)
            assert overdue.outcome() == "late"
            assert overdue.thread != threading.get_ident()
            assert replies.ended_on_thread == 1
            assert not waiting.ended.is_set()  # a call whose deadline is far is left to the pump
            os.write(waiting.write, b'{"n": 1}')


@pytest.mark.parametrize("epoll", [True, False], ids=["epoll", "poll"])
def test_a_watch_due_before_the_parked_thread_would_wake_wakes_it(epoll: bool, pipes: list[Pipe]) -> None:
    """The parked thread sleeps until the first deadline it saw (and the grace): a call watched later
    with an earlier deadline wakes it, or a busy pump's short deadline would wait for a long one."""
    for replies in made(epoll, grace=0.0):
        long, short = OnThread(), OnThread()
        pipes.extend([long, short])
        with replies.pumping():  # and never waits
            replies.watch(long, far(), long.end)
            until("the thread to park on the far deadline", lambda r=replies: math.isfinite(r._parked_until))
            replies.watch(short, time.monotonic(), short.end)
            assert short.outcome() == "late"
            assert not long.ended.is_set()
            os.write(long.write, b'{"n": 1}')


def test_a_reply_thread_parks_while_a_thread_pumps(replies: Replies, pipes: list[Pipe]) -> None:
    earlier, during = OnThread(), OnThread()
    pipes.extend([earlier, during])
    replies.watch(earlier, far(), earlier.end)  # the reply thread starts, and ends it
    os.write(earlier.write, b'{"n": 1}')
    assert earlier.outcome() == {"n": 1}
    assert earlier.thread != threading.get_ident()

    with replies.pumping() as pump:
        replies.watch(during, far(), during.end)
        os.write(during.write, b'{"n": 2}')
        pump_until(pump, during)

    assert during.outcome() == {"n": 2}
    assert during.thread == threading.get_ident()  # not the parked reply thread's


def test_what_is_still_watched_when_the_pumping_ends_goes_to_a_reply_thread(
    replies: Replies, pipes: list[Pipe]
) -> None:
    left = OnThread()
    pipes.append(left)
    with replies.pumping():
        replies.watch(left, far(), left.end)
    os.write(left.write, b'{"n": 1}')

    assert left.outcome() == {"n": 1}
    assert left.thread != threading.get_ident()


def test_wake_ends_a_pumps_wait(replies: Replies) -> None:
    """What the pump waits for may end elsewhere (a run on a thread of its own): `wake` ends its wait."""
    with replies.pumping() as pump:
        waking = threading.Thread(target=pump.wake)  # from another thread: before the wait or in it
        waking.start()
        began = time.monotonic()
        pump.wait(120)
        waking.join()

    assert time.monotonic() - began < 120  # woken, not timed out (a function, not a timing, checked)
