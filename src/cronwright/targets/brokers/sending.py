"""Runs broker actions: one open `Broker` per target, made at its first send and kept (never one per firing).

The engine's module, and with it its library (celery, nats-py), is imported at that first send: a node with
no broker target imports none of them. A rotated secret (a new broker URL) opens a new connection and
closes the old one.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping

from cronwright.targets.attempt import Call, Finished
from cronwright.targets.brokers.message import Broker, message_of, scrub
from cronwright.targets.specs import ActionSpec, TargetSpec

log = logging.getLogger("cronwright.brokers")

# Each broker kind's engine module, and the extra that installs its library.
ENGINES = {
    "celery": ("cronwright.targets.brokers.celery_engine", "celery"),
    "nats": ("cronwright.targets.brokers.nats_engine", "nats"),
}


class BrokerUnavailable(Exception):
    """The engine's library is not installed, or the broker could not be opened; the message says which."""


def open_broker(target: TargetSpec, secrets: Mapping[str, str]) -> Broker:
    """A new Broker for `target`, its URLs read from `secrets`; BrokerUnavailable if it cannot be made."""
    module_name, extra = ENGINES[target.kind]
    try:
        engine = importlib.import_module(module_name)
    except ImportError as error:
        raise BrokerUnavailable(
            f"the {target.kind} target {target.name} needs the {error.name or extra} package:"
            f" pip install 'cronwright[{extra}]'"
        ) from None
    try:
        broker: Broker = engine.open_broker(target, secrets)
    except Exception as error:
        urls = [secrets.get(name) for name in (target.broker_secret, target.backend_secret) if name]
        said = scrub(f"{type(error).__name__}: {error}", *urls)
        raise BrokerUnavailable(f"the {target.kind} target {target.name} cannot be opened: {said}") from None
    return broker


class BrokerExecutor:
    """Runs celery and nats actions over one Broker per target. Thread-safe."""

    def __init__(self) -> None:
        # Per target: the URLs it was opened with, and the broker.
        self._open: dict[str, tuple[tuple[str, ...], Broker]] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def run(self, target: TargetSpec, action: ActionSpec, call: Call) -> Finished:
        """Sends one attempt. Never raises: every failure is a Finished."""
        assert action.route is not None
        if self._closed.is_set():
            return Finished("interrupted", "the node is shutting down")
        try:
            broker = self._broker(target, call.secrets)
        except BrokerUnavailable as error:
            return Finished("error", str(error))
        message = message_of(call, target, action.route)
        return broker.send(action.route, message, call.timeout, call.stop)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for _, broker in opened:
            _close(broker)

    def _broker(self, target: TargetSpec, secrets: Mapping[str, str]) -> Broker:
        urls = tuple(secrets[name] for name in (target.broker_secret, target.backend_secret) if name)
        with self._lock:
            found = self._open.get(target.name)
            if found is not None and found[0] == urls:
                return found[1]
            if self._closed.is_set():
                raise BrokerUnavailable("the node is shutting down")
            # Opening makes no connection yet (each engine connects at its first send, outside this
            # lock), so a slow broker never holds up the sends to another.
            broker = open_broker(target, secrets)
            self._open[target.name] = (urls, broker)
        if found is not None:
            log.info("the secrets of target %s changed: its broker connection is opened again", target.name)
            _close(found[1])
        return broker


def probe(target: TargetSpec, secrets: Mapping[str, str], timeout: float) -> list[str]:
    """What is wrong with each action of a broker target, found by connecting without sending (`check`)."""
    try:
        broker = open_broker(target, secrets)
    except BrokerUnavailable as error:
        return [str(error)]
    try:
        problems = []
        for name in sorted(target.actions):
            route = target.actions[name].route
            assert route is not None
            problem = broker.probe(route, timeout)
            if problem is not None:
                problems.append(f"{target.name}.{name}: {problem}")
                if "cannot reach" in problem:
                    break  # the same for every action
        return problems
    finally:
        _close(broker)


def _close(broker: Broker) -> None:
    try:
        broker.close()
    except Exception:  # closing a broken connection must not fail the node's shutdown
        log.debug("closing a broker connection failed", exc_info=True)
