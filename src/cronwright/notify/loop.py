"""When delivery runs: a thread of its own in `serve`, and a bounded drain before `tick` exits.

The thread sleeps until the outbox's next due notification (`Outbox.next_due`), at most a minute, or until
the node wakes it after writing new ones, so an idle serve does not poll (semantic 25). A failed pass (the
store out of reach) is tried again with backoff; a channel's failure is the notification's (plan.py).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from cronwright.clock import Clock
from cronwright.notify.deliver import Deliverer, Report
from cronwright.store.outbox import Outbox

log = logging.getLogger("cronwright.notify")

# An idle loop still looks this often: notifications another node wrote (and could not wake it for).
SAFETY = timedelta(minutes=1)
# Never sooner than this after a pass: notifications left waiting for room on a flooded channel are due
# already, and looking again at once would spin.
FLOOR = timedelta(seconds=1)
WAITING_FLOOR = timedelta(seconds=10)
PRUNE_EVERY = timedelta(hours=1)
RETRY_MAX = 60.0
# `tick` delivers at most this many passes (each at most deliver.BATCH notifications) before it exits.
TICK_PASSES = 5


class DeliveryLoop:
    def __init__(self, deliverer: Deliverer, outbox: Outbox, clock: Clock) -> None:
        self._deliverer = deliverer
        self._outbox = outbox
        self._clock = clock
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._pruned: datetime | None = None

    @property
    def deliverer(self) -> Deliverer:
        return self._deliverer

    def wake(self) -> None:
        """New notifications were written: deliver now rather than at the next due instant."""
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cronwright-notify", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def drain(self) -> Report:
        """What `tick` does before it exits: delivers what is due now, in a few passes at most."""
        total = Report()
        for _ in range(TICK_PASSES):
            report = self._pass()
            total = Report(
                total.delivered + report.delivered,
                total.failed + report.failed,
                total.digests + report.digests,
                report.waiting,
            )
            if not (report.delivered or report.failed or report.digests):
                break
        return total

    def _pass(self) -> Report:
        report = self._deliverer.deliver()
        now = self._clock.now()
        if self._pruned is None or now - self._pruned >= PRUNE_EVERY:
            self._pruned = now
            self._outbox.prune(now)
        return report

    def seconds_until_next(self, report: Report) -> float:
        now = self._clock.now()
        due = self._outbox.next_due()
        floor = WAITING_FLOOR if report.waiting else FLOOR
        until = SAFETY if due is None else min(SAFETY, max(due - now, floor))
        return until.total_seconds()

    def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                self._wake.clear()
                delay = self.seconds_until_next(self._pass())
                failures = 0
            except Exception as error:
                failures += 1
                delay = min(RETRY_MAX, 2.0 ** min(failures, 6))
                if failures == 1:
                    log.exception("a delivery pass failed; trying again in %.0fs", delay)
                else:
                    log.warning("a delivery pass failed again (%d in a row): %s", failures, error)
            self._wake.wait(delay)
