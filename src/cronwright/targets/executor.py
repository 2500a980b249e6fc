"""The node's Runner for real targets: one attempt of one occurrence, isolated, under a deadline.

For each attempt it checks again that target.action is still allowed and the args still validate (a config
change since the job was created gives `refused`), resolves the action's secrets, builds the envelope, and
hands it to the executor of the target's kind. Whatever comes back is masked (no secret value survives in
the message or the output), bounded, and timed.

The deadline is real time, not the node's clock: the operating system enforces it on a real process, so a
test that moves a manual clock never makes a run late.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from cronwright.core.model import Job, Occurrence, Outcome, Result
from cronwright.errors import Refusal
from cronwright.targets.attempt import MESSAGE_LIMIT, Call, Finished, Stop, render_output
from cronwright.targets.brokers.sending import BrokerExecutor
from cronwright.targets.command import CommandExecutor
from cronwright.targets.http import HttpExecutor
from cronwright.targets.pool import Pool
from cronwright.targets.registry import Registry
from cronwright.targets.secrets import Masker, SecretMissing, Secrets
from cronwright.targets.specs import BROKER_KINDS, ActionSpec, TargetSpec
from cronwright.targets.worker_replies import Pump
from cronwright.timing.iso import render, render_exact

log = logging.getLogger("cronwright.runner")


class TargetRunner:
    """Implements `cronwright.runner.Runner` over the registry's python, command, http and broker targets.

    Thread-safe: the node calls `run` from many threads at once. `run` never raises.
    """

    def __init__(
        self,
        registry: Registry,
        secrets: Secrets,
        *,
        zone: ZoneInfo | None = None,
        pool: Pool | None = None,
        commands: CommandExecutor | None = None,
        http: HttpExecutor | None = None,
        brokers: BrokerExecutor | None = None,
    ) -> None:
        """`zone` is the node zone, in which the envelope's instants are written (default UTC)."""
        self.registry = registry
        self.secrets = secrets
        self.zone = zone or ZoneInfo("UTC")
        self.pool = pool or Pool()
        self.commands = commands or CommandExecutor()
        self.http = http or HttpExecutor()
        self.brokers = brokers or BrokerExecutor()
        self._closed = threading.Event()
        # The stop of each attempt that runs now, by (fire_id, attempt), for `cancel`.
        self._stops: dict[tuple[str, int], Stop] = {}
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Starts one worker per python target in the background, so that the first firing finds it warm."""
        for worker in self.registry.python_workers():
            self.pool.warm(worker)

    def run(self, job: Job, occurrence: Occurrence) -> Result:
        started = time.monotonic()
        masker = Masker(())
        key, stop = self._stop_of(occurrence)
        try:
            # Every secret any target declares is masked, not only this action's: an allowlisted variable or
            # a careless script could echo another one.
            known = list(self.secrets.known(self.registry.secret_names()).values())
            masker = Masker(known)
            finished, masker = self._attempt(job, occurrence, known, stop)
        except Exception as error:  # a bug here must become an outcome, not kill the node's thread
            log.exception("the runner failed on %s", occurrence.fire_id)
            finished = Finished("crashed", f"the runner failed: {type(error).__name__}: {error}")
        return self._result(job, key, stop, finished, masker, started)

    def begin(self, job: Job, occurrence: Occurrence, done: Callable[[Result], None]) -> bool:
        """Starts the attempt without a thread of its own where it can, a python action with a warm
        worker idle, and calls `done` with its outcome, from another thread (`Pool.begin`). False, with
        nothing started, where it cannot: the caller then `run`s it on a thread, which checks it again
        and says why it refused, or starts a worker."""
        if self._closed.is_set():
            return False
        started = time.monotonic()
        try:
            target, action = self.registry.checked(job.target, job.action, job.args)
            values = self.secrets.resolve(action.secrets)
        except (Refusal, SecretMissing):
            return False
        if target.worker is None:
            return False  # a command or http action: its executor waits on a thread
        known = list(self.secrets.known(self.registry.secret_names()).values())
        masker = Masker([*values.values(), *known])
        key, stop = self._stop_of(occurrence)
        call = Call(
            self.envelope(job, occurrence), values, action.timeout.total_seconds(), _deadline(action), stop
        )

        def ended(finished: Finished) -> None:
            done(self._result(job, key, stop, finished, masker, started))

        if self.pool.begin(target.worker, action.name, call, ended, self.registry.stamp(job.target)):
            return True
        with self._lock:
            self._stops.pop(key, None)
        return False

    def _stop_of(self, occurrence: Occurrence) -> tuple[tuple[str, int], Stop]:
        """The stop of an attempt that begins now, where `cancel` finds it until its outcome is made."""
        key, stop = (occurrence.fire_id, occurrence.attempt), Stop()
        with self._lock:
            self._stops[key] = stop
        return key, stop

    def _result(
        self, job: Job, key: tuple[str, int], stop: Stop, finished: Finished, masker: Masker, started: float
    ) -> Result:
        """The outcome of an attempt that ended as `finished`: masked, bounded and timed."""
        with self._lock:
            self._stops.pop(key, None)
        if stop.requested and finished.kind != "ok":
            # Whatever the stop left behind (a killed worker, a dead process group, no answer) is the
            # policy's doing, not the action's: an attempt that finished ok first keeps its ok.
            said = _CANCELLED.get(self._kind(job), "a newer occurrence replaced it (overlap replace)")
            finished = Finished("cancelled", said, finished.output)
        took_ms = int((time.monotonic() - started) * 1000)
        message = masker.mask_cut_end(finished.message) if finished.cut else masker.mask(finished.message)
        if finished.cut or len(message) > MESSAGE_LIMIT:
            message = masker.mask_cut_end(message[: MESSAGE_LIMIT - 1]) + "…"
        return Result(Outcome(finished.kind), message, took_ms, render_output(finished.output, masker))

    def one_look(self) -> AbstractContextManager[None]:
        """The attempts begun on this thread in the block look at a python target's files once between
        them (`Registry.one_look`)."""
        return self.registry.one_look()

    def pumping(self) -> AbstractContextManager[Pump]:
        """While the block runs, the python calls `begin` started end on the calling thread, in its
        `Pump.wait`s, instead of on the pool's reply thread (a `tick`: see targets/replies.py)."""
        return self.pool.pumping()

    def cancel(self, occurrence: Occurrence) -> None:
        """Stops that attempt if it runs now: its worker is killed (the pool replaces it), its command's
        process group is killed, or its http call is abandoned; it then ends `cancelled`."""
        with self._lock:
            stop = self._stops.get((occurrence.fire_id, occurrence.attempt))
        if stop is not None:
            stop.request()

    def _kind(self, job: Job) -> str:
        try:
            return self.registry.target(job.target).kind
        except Refusal:
            return "unknown"

    def close(self) -> None:
        """Stops what runs (those attempts end `interrupted`), and frees every worker and connection."""
        self._closed.set()
        self.pool.close()
        self.commands.close()
        self.http.close()
        self.brokers.close()

    def _attempt(
        self, job: Job, occurrence: Occurrence, known: list[str], stop: Stop
    ) -> tuple[Finished, Masker]:
        masker = Masker(known)
        if self._closed.is_set():
            return Finished("interrupted", "the node is shutting down"), masker
        if stop.requested:
            return Finished("cancelled", "a newer occurrence replaced it before it started"), masker
        try:
            target, action = self.registry.checked(job.target, job.action, job.args)
        except Refusal as refusal:
            return Finished("refused", f"{refusal.message} (checked again when it ran)"), masker
        try:
            values = self.secrets.resolve(action.secrets)
        except SecretMissing as missing:
            return Finished("error", str(missing)), masker
        masker = Masker([*values.values(), *known])
        envelope = self.envelope(job, occurrence)
        timeout = action.timeout.total_seconds()
        call = Call(envelope, values, timeout, _deadline(action), stop, _created(job))
        return self._dispatch(target, action, call), masker

    def envelope(self, job: Job, occurrence: Occurrence) -> dict[str, Any]:
        """What the target receives (DESIGN, "The envelope a target receives"); instants in the node zone."""
        return {
            "schedule": job.name,
            "job_id": job.id,
            "target": job.target,
            "action": job.action,
            "args": dict(job.args),
            "cron": {
                "fire_id": occurrence.fire_id,
                "attempt": occurrence.attempt,
                "scheduled_for": _exact(occurrence.scheduled_for, self.zone),
                # The timetable's instant before jitter (semantic 32): scheduled_for itself without one.
                "nominal": _exact(occurrence.nominal_for, self.zone),
                "fired_at": _to_the_second(occurrence.fired_at, self.zone),
            },
        }

    def _dispatch(self, target: TargetSpec, action: ActionSpec, call: Call) -> Finished:
        if target.kind == "python":
            assert target.worker is not None
            return self.pool.run(target.worker, action.name, call)
        if target.kind == "command":
            return self.commands.run(target, action, call)
        if target.kind in BROKER_KINDS:
            return self.brokers.run(target, action, call)
        return self.http.run(target, action, call)


# What a cancelled attempt's message says was stopped, by target kind (overlap replace).
_CANCELLED = {
    "python": "a newer occurrence replaced it (overlap replace): its worker was stopped",
    "command": "a newer occurrence replaced it (overlap replace): its process group was killed",
    "http": "a newer occurrence replaced it (overlap replace): the request was abandoned",
    "celery": "a newer occurrence replaced it (overlap replace): its task was revoked",
}


# The envelope's instants, remembered: the occurrences that fire together (a burst of one-shots, the cron
# jobs of one minute) share their due instant, and a pass's firings their `fired_at`, so a busy node renders
# each once instead of converting it to the node zone again for every firing. Keyed by the instant in UTC:
# two datetimes of one zone that differ only by `fold` (an hour the clocks repeat) compare equal, and
# would share an entry.
_render_exact = functools.lru_cache(maxsize=256)(render_exact)
_render = functools.lru_cache(maxsize=256)(render)


def _exact(instant: datetime, zone: ZoneInfo) -> str:
    return _render_exact(instant if instant.tzinfo is UTC else instant.astimezone(UTC), zone)


def _to_the_second(instant: datetime, zone: ZoneInfo) -> str:
    return _render(instant if instant.tzinfo is UTC else instant.astimezone(UTC), zone)


def _created(job: Job) -> str:
    return job.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _deadline(action: ActionSpec) -> datetime:
    return datetime.now(UTC) + action.timeout
