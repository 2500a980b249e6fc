"""The runs in flight: the dispatcher half of a node (the passes decide; this runs what they claimed).

Each attempt runs on a thread of its own, and the runner isolates the target code in a worker process, a
command's process group or an http call. An outcome comes back through a queue, and the next pass records
it: one transaction records many. The dispatcher remembers every attempt it started until its outcome is
recorded, with the job as the claim wrote it: that tells a claim that never started from a run that did
(semantic 29), and is the base the outcome is decided on.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from cronwright.core.model import Finished, Job, Occurrence, Outcome, Result
from cronwright.node.runner import Begins, LooksOnce, Pump, Pumps, Runner

log = logging.getLogger("cronwright.node")

Attempt = tuple[int, str, int]  # (job id, fire_id, attempt)

# The granularity of a pump's wait (epoll's, in milliseconds), which `wait_for` stops short of.
EPOLL_STEP = 0.001


def attempt_of(occurrence: Occurrence) -> Attempt:
    return (occurrence.job_id, occurrence.fire_id, occurrence.attempt)


class Dispatcher:
    """Starts claimed attempts at once (a claim never exceeds the free slots) and collects their outcomes.

    `finished` is called from a run's thread after its outcome is queued. While `stopping` is set an
    attempt runs on a thread of the pool, never begun without one: the node's stop waits for those
    threads within its grace, then interrupts what still runs.
    """

    def __init__(
        self, runner: Runner, slots: int, finished: Callable[[], None], stopping: threading.Event
    ) -> None:
        self.runner = runner
        # Checked once here, not at every start: `start` is on the path of every firing.
        self._begin = runner.begin if isinstance(runner, Begins) else None
        self.slots = slots
        self._notify = finished
        self._stopping = stopping
        self._pool = ThreadPoolExecutor(slots, thread_name_prefix="cronwright-run")
        # The attempt in flight of each occurrence, by (job id, fire_id), until its outcome is recorded:
        # a job whose overlap policy lets occurrences run side by side has one entry for each.
        self._running: dict[tuple[int, str], tuple[Occurrence, Future[None]]] = {}
        self._started: dict[Attempt, Job] = {}
        # Attempts told to stop (overlap replace): one whose thread has not begun yet never runs.
        self._cancelled: set[Attempt] = set()
        self._finished: queue.SimpleQueue[Finished] = queue.SimpleQueue()
        # While `pumped`: the runner's pump, through which the thread that pumps waits for outcomes.
        self._pump: Pump | None = None

    # --- starting -------------------------------------------------------------------------------

    def start(self, job: Job, occurrence: Occurrence) -> None:
        """Runs an attempt whose claim is durable; `job` is the row as the claim wrote it.

        A runner that can begin the attempt without a thread (`begin`: a python action, a warm worker
        idle) does; any other attempt runs on a thread of the pool.
        """
        if job.alongside:
            self.wrote(job)  # its other attempts here are decided on this newer copy
        self._started[attempt_of(occurrence)] = job
        key = (occurrence.job_id, occurrence.fire_id)
        begin = self._begin
        if begin is not None and not self._stopping.is_set():
            future: Future[None] = Future()
            future.add_done_callback(self._wake_pump)
            self._running[key] = (occurrence, future)  # first: its outcome may come before begin returns
            if begin(job, occurrence, lambda result: self._ended(occurrence, result, future)):
                return
        future = self._pool.submit(self._attempt, job, occurrence)
        future.add_done_callback(self._wake_pump)
        self._running[key] = (occurrence, future)

    def _attempt(self, job: Job, occurrence: Occurrence) -> None:
        # A stop that came after the claim does not keep the attempt from running: its claim is durable, so
        # not running it would record an attempt that never started, and no peer may run it (semantic 29;
        # the nemesis found one such, claimed as SIGTERM arrived). The stop's grace covers it like any run.
        if attempt_of(occurrence) in self._cancelled:
            result = Result(Outcome.CANCELLED, "a newer occurrence replaced it before it started")
        else:
            try:
                result = self.runner.run(job, occurrence)
            except Exception as error:
                log.exception("the runner failed on %s", occurrence.fire_id)
                result = Result(Outcome.CRASHED, f"the runner failed: {error!r}"[:500])
        self._finished.put((occurrence, result))
        self._notify()

    def _ended(self, occurrence: Occurrence, result: Result, future: Future[None]) -> None:
        """The outcome of an attempt begun without a thread, as `_attempt` gives one, and its future done."""
        self._finished.put((occurrence, result))
        self._notify()
        future.set_result(None)

    def one_look(self) -> contextlib.AbstractContextManager[None]:
        """While the block runs, the attempts started on this thread take one look at their targets'
        files between them (`one_look`, where the runner has it): for a pass, which starts them together."""
        runner = self.runner
        return runner.one_look() if isinstance(runner, LooksOnce) else contextlib.nullcontext()

    # --- waiting for outcomes --------------------------------------------------------------------

    @contextlib.contextmanager
    def pumped(self) -> Iterator[None]:
        """While the block runs, `wait` on the calling thread does the runner's waiting for the python
        calls it began without a thread (`pumping`, where the runner has it): their outcomes come on
        this thread, with no GIL hand-off to a reply thread per run. For a thread that only starts runs
        and waits for them: a `tick`."""
        runner = self.runner
        if not isinstance(runner, Pumps):
            yield
            return
        with runner.pumping() as pump:
            self._pump = pump
            try:
                yield
            finally:
                self._pump = None

    def wait(
        self, futures: Collection[Future[None]], timeout: float, return_when: str = FIRST_COMPLETED
    ) -> None:
        """`concurrent.futures.wait`, pumping the runner's replies where this thread pumps them."""
        pump = self._pump
        if pump is None or pump.owner != threading.get_ident():
            wait(futures, timeout, return_when)
            return
        ended = any if return_when == FIRST_COMPLETED else all
        until = time.monotonic() + timeout
        while not ended(future.done() for future in futures):
            left = until - time.monotonic()
            if left <= 0:
                return
            pump.wait(left)

    def wait_for(self, event: threading.Event, timeout: float) -> bool:
        """`event.wait(timeout)`, pumping the runner's replies meanwhile where this thread pumps them (a
        serving node's loop: the outcomes of its runs come on it). Whoever sets `event` from another
        thread calls `wake_waiter` after, so that a pump's wait ends at once."""
        pump = self._pump
        if pump is None or pump.owner != threading.get_ident():
            return event.wait(timeout)
        until = time.monotonic() + timeout
        while not event.is_set():
            left = until - time.monotonic()
            if left <= 0:
                return False
            if left > EPOLL_STEP:
                # epoll counts whole milliseconds and rounds a wait up: asked for `left`, it would wake up
                # to a millisecond after a due instant, late against Event.wait's precision (a peer on
                # the same store then won every claim of a due occurrence). One step short instead...
                pump.wait(left - EPOLL_STEP)
            else:
                time.sleep(left)  # ...and the rest, under a millisecond, slept to the instant
        return True

    def wake_waiter(self) -> None:
        """From another thread: a pumping thread in `wait` or `wait_for` looks again now."""
        pump = self._pump
        if pump is not None and pump.owner != threading.get_ident():
            pump.wake()

    def _wake_pump(self, _future: Future[None]) -> None:
        """A run's future is done: a pump waiting on another thread looks again."""
        self.wake_waiter()

    # --- what is in flight ----------------------------------------------------------------------

    def in_flight(self) -> int:
        return len(self._running)

    def runs(self, job_id: int) -> bool:
        """Whether any occurrence of the job runs here."""
        return any(key[0] == job_id for key in self._running)

    def started(self, attempt: Attempt) -> bool:
        """Whether this process started that attempt and has not recorded its outcome yet."""
        return attempt in self._started

    def wrote(self, job: Job) -> None:
        """`job` is the row as this node last wrote it: the base for the outcomes of its attempts still
        unrecorded here (overlap allow runs several), not the older copy their own claims wrote."""
        for attempt in self._started:
            if attempt[0] == job.id:
                self._started[attempt] = job

    def claimed(self, occurrence: Occurrence) -> Job | None:
        """The job as this node's claim of `occurrence` wrote it, while its outcome is unrecorded."""
        return self._started.get(attempt_of(occurrence))

    def futures(self, unfinished: bool = False) -> list[Future[None]]:
        running = [future for _, future in self._running.values()]
        return [future for future in running if not future.done()] if unfinished else running

    def cancel(self, attempt: Attempt) -> None:
        """Stops `attempt` if this node runs it (overlap replace): it ends `cancelled`. Asking again, as
        every beat does while the row says so, is harmless."""
        running = self._running.get((attempt[0], attempt[1]))
        if running is None or attempt_of(running[0]) != attempt or running[1].done():
            return
        if attempt not in self._cancelled:
            log.info("stopping %s attempt %d: a newer occurrence replaces it", attempt[1], attempt[2])
        self._cancelled.add(attempt)
        self.runner.cancel(running[0])

    # --- outcomes -------------------------------------------------------------------------------

    def drain(self) -> list[Finished]:
        """Every outcome queued so far."""
        done: list[Finished] = []
        while True:
            try:
                done.append(self._finished.get_nowait())
            except queue.Empty:
                return done

    def requeue(self, finished: list[Finished]) -> None:
        """Puts outcomes back for a later pass: a pass that fails before recording them loses none."""
        for item in finished:
            self._finished.put(item)

    def has_finished(self) -> bool:
        return not self._finished.empty()

    def recorded(self, occurrence: Occurrence) -> None:
        """The attempt's outcome is written (or waits in memory to be): it is no longer in doubt."""
        self._started.pop(attempt_of(occurrence), None)

    def freed(self, finished: list[Finished]) -> None:
        """These attempts are over and recorded: their slots are free."""
        for occurrence, _ in finished:
            self._running.pop((occurrence.job_id, occurrence.fire_id), None)
            self._cancelled.discard(attempt_of(occurrence))

    # --- stopping -------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Stops what runs now: each such attempt ends `interrupted`, and its outcome is queued."""
        self.runner.close()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
