"""How a node is driven: `serve` runs passes until stopped, sleeping until the next due instant or a
wake-up; `tick` runs one pass, then waits for every run it started and records it.

Both drive the passes of node/scheduler.py and own nothing of their own but the timing: when the next
pass comes (semantic 25: an idle node wakes at most once a minute), and how runs ending together share
one pass and one durable write (group commit).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED
from datetime import timedelta

from cronwright.errors import StoreError
from cronwright.node.scheduler import Node, PassReport
from cronwright.node.systemd import LoopWatch
from cronwright.store.base import Watches

log = logging.getLogger("cronwright.node")

# How long a tick lingers after a run ends, so that runs ending together are recorded together.
GROUP_COMMIT_WINDOW = 0.005
# The least a node sleeps when a peer's lease is due, so that an overdue one never spins the loop.
PEER_LEASE_FLOOR = timedelta(seconds=1)
# A failed pass is tried again after 1 s, then 2, 4, ... up to this many seconds.
RETRY_MAX = 30.0


def seconds_until_next_pass(node: Node) -> float:
    """When the next pass is due: the next due instant, a beat while runs are in flight, a peer's
    lease running out, a claim to reconcile, and the safety interval at the latest."""
    now = node.clock.now()
    settings = node.settings
    deadlines = [now + settings.safety_interval]
    if node.runs.in_flight() < settings.max_concurrency:
        # With every slot busy a due job waits for a slot, and the run that frees one wakes the node:
        # looking sooner would only find it still waiting, over and over.
        next_wake = node.store.next_wake()
        if next_wake is not None and node.left_to_peer:
            next_wake = max(next_wake, now + PEER_LEASE_FLOOR)  # rather than spin on a peer's job
        if next_wake is not None:
            deadlines.append(next_wake)
    if node.runs.in_flight():
        deadlines.append(now + settings.lease_beat)
    if node.unsettled:
        deadlines.append(now + PEER_LEASE_FLOOR)  # a claim may have landed unbeknown: reconcile soon
    left = node.store.lease_left(now, settings.lease_ttl, node.id)
    if left is not None:
        # A peer's runs are in flight: look again when its lease could run out, so a dead peer's runs
        # are found within a lease. Not sooner than a second: an overdue lease whose runs a pass could
        # not recover (a clock skew, say) must not spin the loop.
        deadlines.append(now + max(left, PEER_LEASE_FLOOR))
    # From the clock read again: the reads above took a moment, which the wait must not add to a due
    # instant (on a real clock the pass would wake that much late).
    return max(0.0, (min(deadlines) - node.clock.now()).total_seconds())


def until_next_pass(node: Node) -> float:
    """What the loop does before it sleeps: the seconds until the next pass, having taken ahead the
    lease beat that would fall due before that pass, when the pass comes within a beat.

    Why: a pass whose beat is due beats first, and a beat is a durable write (an fsync on SQLite). On a
    node that passes every second, the firing of every tenth pass would wait for two commits, the beat's
    and then its claim's. Taken now, the beat is a moment early, the lease only fresher, and the pass
    claims at once. A node that sleeps longer than a beat (an idle one) beats as its next pass starts,
    as before, so it writes no more often than it did (semantic 25). A beat that fails here is left to
    the pass, which beats as it starts since its beat is still due.
    """
    sleep = seconds_until_next_pass(node)
    if node.runs.in_flight():
        # The keeper beats on its own timer while runs are in flight (semantic 30), and the wait is
        # capped by the beat itself: taken ahead here, a beat (a durable write, then a reconcile read)
        # came before every pass of a busy node, one per finished run, not one per beat.
        return sleep
    lease = node.lease
    if sleep >= node.settings.lease_beat.total_seconds() or lease.seconds_to_next_beat() > sleep:
        return sleep
    with node.lock:
        try:
            lease.beat_if_due(force=True)
        except StoreError as error:
            log.debug("a beat taken ahead of the next pass failed (that pass beats): %s", error)
            return sleep
        if lease.took_beat():
            try:
                node.reconcile()  # what a pass does after a beat (semantic 29), done here too
            except StoreError as error:
                log.debug("reconciling after a beat failed (the next pass does): %s", error)
                node.unsettled = True
    return seconds_until_next_pass(node)


def serve_forever(
    node: Node, watch: LoopWatch | None = None, after_pass: Callable[[], None] | None = None
) -> None:
    """Runs passes until `node.stop()`. Between passes it sleeps until the next due instant or a wake-up.
    `after_pass` is called after each pass that ended well (serve tells its fronts' process how it stands).

    A store that can announce changes (`watch`, as PostgreSQL's LISTEN/NOTIFY) wakes the node when
    another node or process changes a job; without it, such changes land at the next safety wake-up.
    `watch` hears of the loop's boot, rounds and failures (systemd's readiness and watchdog, systemd.py).
    """
    inner = node.store.inner
    stop_watching = inner.watch(node.wake) if isinstance(inner, Watches) else None
    try:
        # The loop does the replies' waiting for the python calls it began: their outcomes come on the
        # thread that records them, with no GIL hand-off to a reply thread per run (the hand-offs cost
        # serve about a fifth of a python firing's CPU). It pumps while it waits; a pass delays them by
        # the pass's length, as in a tick. Out of the loop (stopping), the reply thread takes over.
        with node.runs.pumped():
            _serve(node, watch or LoopWatch(), after_pass or _nothing)
    finally:
        if stop_watching is not None:
            stop_watching()


def _nothing() -> None:
    pass


def _serve(node: Node, watch: LoopWatch, after_pass: Callable[[], None]) -> None:
    booted, failures = False, 0
    while not node.stopping.is_set():
        watch.alive()  # only a loop that comes round pets the watchdog: a pass that hangs stops it
        try:
            if booted:
                woken = _wait(node, node.woken, until_next_pass(node), watch)
                node.woken.clear()
                if node.stopping.is_set():
                    break
                if woken and not node.poked.is_set() and not node.runs.has_finished():
                    continue  # a run finished whose outcome the last pass already recorded
                node.poked.clear()
                _linger(node)
                node.run_pass()
            else:
                node.boot()
                booted = True
                watch.booted()
            if failures:
                watch.recovered()
            after_pass()
            failures = 0
        except Exception as error:
            # A pass that failed (the store was unreachable, say) is tried again, with backoff; the node
            # lives on. Nothing fired on what it read: a claim is a write the store must accept.
            failures += 1
            delay = min(RETRY_MAX, 2.0 ** min(failures - 1, 8))
            if failures == 1:
                log.exception("a scheduling pass failed; trying again in %.0fs", delay)
            else:
                log.warning("a scheduling pass failed again (%d in a row): %s", failures, error)
            watch.failed(error)
            _wait(node, node.stopping, delay, watch)
            node.poked.set()
            node.woken.set()


def _wait(node: Node, event: threading.Event, seconds: float, watch: LoopWatch) -> bool:
    """`event.wait(seconds)` (pumping the node's runs' replies meanwhile), in steps of at most
    `watch.interval`, telling `watch` the loop is alive after each: with no interval (no watchdog), one
    wait, so an idle node wakes no more (semantic 25)."""
    while watch.interval is not None and seconds > watch.interval:
        if node.runs.wait_for(event, watch.interval):
            return True
        seconds -= watch.interval
        watch.alive()
    return node.runs.wait_for(event, seconds)


def _linger(node: Node) -> None:
    """Woken by a run that finished while others run: waits a moment for them (group commit).

    Runs that end together then share one pass and one durable write, and the slots they free are
    claimed together, instead of a pass (and a commit) per run while the other slots sit idle.
    """
    if not node.runs.has_finished():
        return
    with node.lock:
        running = node.runs.futures(unfinished=True)
    if running:
        node.runs.wait(running, GROUP_COMMIT_WINDOW, ALL_COMPLETED)


def tick(node: Node) -> PassReport:
    """What `cronwright tick` does: a pass that fires what is due and, as slots free up, what waits for
    one; then it waits for every run it started and records it."""
    with node.runs.pumped():  # this thread waits for nothing else: the replies come on it
        report = node.run_pass()  # its first beat announces the node, as boot's does
        while node.runs.in_flight():
            _await_a_run(node)
            passes = [node.run_pass()]  # records what finished, and claims the freed slots
            if not node.runs.in_flight():
                # What was just recorded may have left an occurrence waiting for it (overlap
                # buffer_one, or replace's successor), due now: this tick starts it rather than leaving
                # it to the next.
                passes.append(node.run_pass())
            for more in passes:
                report.fired += more.fired
                report.skipped += more.skipped
                report.recovered += more.recovered
        return report


def _await_a_run(node: Node) -> None:
    """Waits until a run finishes, or a lease beat's time has passed."""
    with node.lock:
        futures = node.runs.futures()
    if futures:
        node.runs.wait(futures, node.settings.lease_beat.total_seconds(), FIRST_COMPLETED)
        running = [future for future in futures if not future.done()]
        if len(running) < len(futures) and running:
            # Group commit: runs that end within a moment of each other share one durable write.
            node.runs.wait(running, GROUP_COMMIT_WINDOW, ALL_COMPLETED)
