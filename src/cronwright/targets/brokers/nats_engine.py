"""The nats engine: publish the envelope to a JetStream subject, `ok` on the stream's acknowledgement.

nats-py is asyncio: each broker owns an event loop on a thread of its own, where its one connection lives;
the runner's threads hand it their publishes and wait on the answers. `Nats-Msg-Id` is the message's
deterministic id, so the stream drops a second publish of one attempt within its duplicate window (two
minutes by default), and the acknowledgement says so: the run's message records it.

Every message's headers carry the fire_id, attempt and instants, and `Cronwright-Expires`: JetStream keeps a
message until its stream's limits drop it, so it is the consumer that skips a message past its expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext

from cronwright.targets.attempt import Finished, Stop
from cronwright.targets.brokers.message import Message, scrub, url_of
from cronwright.targets.specs import Route, TargetSpec

CONNECT_TIMEOUT = 4  # seconds
T = TypeVar("T")


def open_broker(target: TargetSpec, secrets: Mapping[str, str]) -> NatsBroker:
    return NatsBroker(target.name, url_of(target, secrets))


def headers_of(message: Message) -> dict[str, str]:
    """`Cronwright-Fire-Id` and its kin (HTTP-style names, as NATS headers are), and `Nats-Msg-Id`."""
    named = {"Nats-Msg-Id": message.id, "Cronwright-Expires": message.expires.isoformat()}
    for key, value in message.headers.items():
        named["-".join(part.capitalize() for part in key.split("_"))] = value
    return named


class NatsBroker:
    def __init__(self, name: str, url: str) -> None:
        self._url = url
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"cronwright-nats-{name}", daemon=True
        )
        self._thread.start()
        self._client: Client | None = None
        self._js: JetStreamContext | None = None
        self._connecting: asyncio.Lock | None = None

    def send(self, route: Route, message: Message, timeout: float, stop: Stop) -> Finished:
        body = json.dumps(message.envelope, ensure_ascii=False, separators=(",", ":")).encode()
        try:
            ack = self._run(self._publish(route, body, headers_of(message), timeout), timeout)
        except TimeoutError:
            client = self._client
            if client is None or not client.is_connected:  # nats-py retries a refused connect until cut off
                return Finished("error", f"could not connect to the NATS server within {timeout:g}s")
            said = f"no acknowledgement from a stream for {route.subject} within {timeout:g}s"
            return Finished("timeout", said)
        except Exception as error:
            return Finished("error", f"the publish to {route.subject} failed: {self._said(error)}")
        said = f"published {message.id} to {route.subject}: stream {ack.stream}, sequence {ack.seq}"
        if ack.duplicate:
            said += "; a duplicate: the stream had it already and kept one"
        return Finished("ok", said)

    def probe(self, route: Route, timeout: float) -> str | None:
        try:
            found = self._run(self._stream_of(route.subject, timeout), timeout)
        except TimeoutError:
            return f"cannot reach the NATS server, or JetStream, within {timeout:g}s"
        except Exception as error:
            if type(error).__name__ == "NotFoundError":
                return f"no JetStream stream takes subject {route.subject}: add it to a stream's subjects"
            return f"cannot reach the NATS server: {self._said(error)}"
        if route.stream and found != route.stream:
            return f"subject {route.subject} goes to stream {found}, not {route.stream}"
        return None

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):  # a connection already gone needs no closing
                self._run(self._client.close(), 5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def _run(self, work: Coroutine[Any, Any, T], timeout: float) -> T:
        """Runs `work` on the broker's loop; TimeoutError (and the work cancelled) after `timeout` s."""
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(work, timeout), self._loop)
        return future.result(timeout + 1)

    async def _jetstream(self, seconds: float) -> JetStreamContext:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._client is None or self._client.is_closed:
                self._client = await nats.connect(
                    self._url,
                    connect_timeout=max(1, min(int(seconds), CONNECT_TIMEOUT)),
                    max_reconnect_attempts=-1,  # once connected, keep trying: publishes fail meanwhile
                    error_cb=_quiet,
                    disconnected_cb=_nothing,
                    reconnected_cb=_nothing,
                    closed_cb=_nothing,
                )
                self._js = self._client.jetstream()
            assert self._js is not None
            return self._js

    async def _publish(self, route: Route, body: bytes, headers: dict[str, str], seconds: float) -> Any:
        js = await self._jetstream(seconds)
        return await js.publish(route.subject, body, timeout=seconds, stream=route.stream, headers=headers)

    async def _stream_of(self, subject: str, seconds: float) -> str:
        js = await self._jetstream(seconds)
        return await js.find_stream_name_by_subject(subject)

    def _said(self, error: BaseException) -> str:
        return scrub(f"{type(error).__name__}: {error}", self._url)


async def _quiet(error: Exception) -> None:
    """nats-py's default prints every connection error; a failed publish is reported by its run instead."""


async def _nothing() -> None:
    pass
