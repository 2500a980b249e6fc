"""serve's main thread waits for a stop in `MainWait` (fronts/cli/main_wait.py): a signal that the kernel gave
to another thread must still end its wait. Real signals, on this process's threads.

With a plain `threading.Event` in its place, such a signal is handled only when something else wakes the
main thread: a script that sends it once the main thread is blocked in `Event.wait` saw it handled when its
3 s fallback woke the thread, against 0.05 s with this wait.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator

import pytest

from cronwright.fronts.cli.main_wait import MainWait


@pytest.fixture
def main_wait() -> Iterator[MainWait]:
    assert threading.current_thread() is threading.main_thread(), "signal handlers are the main thread's"
    wait = MainWait()
    previous_fd = signal.set_wakeup_fd(-1)
    previous_handler = signal.getsignal(signal.SIGUSR2)
    wait.install()
    try:
        yield wait
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGUSR2, previous_handler)


def in_wait(thread: int) -> bool:
    """Whether `thread` is inside `MainWait.wait` now (its frames, as py-spy would see them)."""
    frame = sys._current_frames().get(thread)
    while frame is not None:
        if frame.f_code is MainWait.wait.__code__:
            return True
        frame = frame.f_back
    return False


def test_a_signal_that_came_to_another_thread_ends_the_main_threads_wait(main_wait: MainWait) -> None:
    handled: list[str] = []
    fell_back: list[str] = []

    def on_signal(signum: int, frame: object) -> None:
        handled.append("handler")
        main_wait.set()

    def give_up() -> None:
        fell_back.append("fallback")
        main_wait.set()

    signal.signal(signal.SIGUSR2, on_signal)
    fallback = threading.Timer(30, give_up)
    fallback.start()
    main = threading.main_thread().ident
    assert main is not None

    def send_once_waiting() -> None:
        while not in_wait(main) and not fell_back:
            threading.Event().wait(0.001)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR2)  # to this thread, not the main one

    sender = threading.Thread(target=send_once_waiting)
    sender.start()
    try:
        main_wait.wait()
    finally:
        fallback.cancel()
        sender.join()

    assert handled == ["handler"]
    assert fell_back == []
