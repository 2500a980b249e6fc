"""The celery engine: `send_task` by name through kombu (AMQP, Redis, ...); the task's code is never imported.

One Celery app per target, whose producer pool keeps its broker connections open between sends. On AMQP the
channel is in publisher-confirm mode (`confirm_publish`), so a send returns once the broker took the
message, and raises if it refused it. `result = "wait"` then reads the task's state from the result backend,
polling (a backend's get is stateless and thread-safe, where Celery's result consumer is neither).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from celery import Celery

from cronwright.targets.attempt import Finished, Stop
from cronwright.targets.brokers.message import Message, scrub, url_of
from cronwright.targets.specs import Route, TargetSpec

CONNECT_TIMEOUT = 4.0  # seconds to open a connection to the broker (the action's timeout bounds it too)
RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
POLL_FIRST, POLL_MAX = 0.05, 0.5  # seconds between two reads of a waited task's state


def open_broker(target: TargetSpec, secrets: Mapping[str, str]) -> CeleryBroker:
    backend = url_of(target, secrets, backend=True) if target.backend_secret else None
    return CeleryBroker(target.name, url_of(target, secrets), backend)


class CeleryBroker:
    def __init__(self, name: str, url: str, backend: str | None) -> None:
        self._urls = (url, backend)
        self._app = Celery(f"cronwright-{name}", broker=url, backend=backend, set_as_current=False)
        self._app.conf.update(
            broker_transport_options={"confirm_publish": True},
            broker_connection_timeout=CONNECT_TIMEOUT,
            task_serializer="json",
            accept_content=["json"],
            result_serializer="json",
        )

    def send(self, route: Route, message: Message, timeout: float, stop: Stop) -> Finished:
        deadline = time.monotonic() + timeout
        where = f"task {route.task}" + (f" on queue {route.queue}" if route.queue else "")
        try:
            self._app.send_task(
                route.task,
                args=list(message.args),
                kwargs=dict(message.kwargs),
                task_id=message.id,
                expires=message.expires,
                queue=route.queue,
                routing_key=route.routing_key,
                priority=route.priority,
                headers=dict(message.headers),
                # A pooled connection the broker dropped is opened again, once; a broker that stays away
                # fails this attempt, and the job's retries (with a new attempt) take it from there.
                retry=True,
                retry_policy=RETRY_POLICY,
                confirm_timeout=max(0.1, min(timeout, CONNECT_TIMEOUT * 2)),
            )
        except Exception as error:
            return Finished("error", f"the broker did not take {where}: {self._said(error)}")
        if not route.wait:
            return Finished("ok", f"sent {where} as {message.id}; the broker confirmed it")
        return self._wait(route, message.id, deadline, stop)

    def _wait(self, route: Route, task_id: str, deadline: float, stop: Stop) -> Finished:
        pause = POLL_FIRST
        while True:
            try:
                meta = self._app.backend.get_task_meta(task_id)
            except Exception as error:
                return Finished("error", f"task {route.task} was sent as {task_id}, but its result backend"
                                f" cannot be read: {self._said(error)}")  # fmt: skip
            state = meta.get("status")
            if state in ("SUCCESS", "FAILURE", "REVOKED"):
                return _outcome(route.task, task_id, state, meta.get("result"))
            if stop.requested:
                self._revoke(task_id)
                return Finished("cancelled", f"a newer occurrence replaced it: task {task_id} was revoked")
            left = deadline - time.monotonic()
            if left <= 0:
                return Finished("timeout", f"task {route.task} ({task_id}) had not finished by the timeout;"
                                f" its last state was {state}")  # fmt: skip
            time.sleep(min(pause, left))  # real time: the task runs on a worker elsewhere
            pause = min(POLL_MAX, pause * 2)

    def _revoke(self, task_id: str) -> None:
        # The attempt ends cancelled either way; a worker that took the task already may still run it.
        with contextlib.suppress(Exception):
            self._app.control.revoke(task_id)

    def probe(self, route: Route, timeout: float) -> str | None:
        try:
            with self._app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1, timeout=min(timeout, CONNECT_TIMEOUT))
        except Exception as error:
            return f"cannot reach the broker: {self._said(error)}"
        if route.wait:
            try:
                self._app.backend.get_task_meta("cronwright-check")
            except Exception as error:
                return f"cannot read the result backend: {self._said(error)}"
        return None

    def close(self) -> None:
        # Celery's own close() forgets its pools without closing their connections.
        closing = [self._app.amqp.producer_pool.force_close_all, self._app.pool.force_close_all]
        if self._urls[1]:
            closing.append(lambda: self._app.backend.client.connection_pool.disconnect())
        for close in closing:
            with contextlib.suppress(Exception):  # a connection already gone needs no closing
                close()
        self._app.close()

    def _said(self, error: BaseException) -> str:
        return scrub(f"{type(error).__name__}: {error}", *self._urls)


def _outcome(task: str, task_id: str, state: str, result: Any) -> Finished:
    if state == "SUCCESS":
        shown = repr(result)
        return Finished("ok", f"task {task} ({task_id}) succeeded: {shown[:500]}", cut=len(shown) > 500)
    if state == "REVOKED":
        return Finished("error", f"task {task} ({task_id}) was revoked (expired, or revoked by an operator)")
    said = f"{type(result).__name__}: {result}" if isinstance(result, BaseException) else str(result)
    return Finished("error", f"task {task} ({task_id}) failed: {said}")
