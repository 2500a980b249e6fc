"""The seam between the node and whatever runs an attempt: `Runner`, and the optional capabilities a
runner may have, each a small protocol the dispatcher checks once, never found by probing for names."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from cronwright.core.model import Job, Occurrence, Result


class Runner(Protocol):
    def run(self, job: Job, occurrence: Occurrence) -> Result:
        """Runs one attempt of one occurrence and reports how it went. Never raises: a failure is an outcome.

        It blocks for as long as the attempt lasts; the node calls it from a worker thread.
        """
        ...

    def cancel(self, occurrence: Occurrence) -> None:
        """Stops that attempt if it runs now (overlap replace), from another thread: its `run` then
        returns `cancelled` promptly. Does nothing to an attempt that is not running."""
        ...

    def close(self) -> None:
        """Stops what is still running (its attempts then report `interrupted`) and frees the workers."""
        ...


class Pump(Protocol):
    """A runner's pump (targets/worker_replies.py): `wait` does the runner's waiting on the calling thread."""

    owner: int  # the thread that pumps

    def wait(self, limit: float) -> None: ...

    def wake(self) -> None: ...


@runtime_checkable
class Begins(Protocol):
    """A runner that can start some attempts without a thread of their own (a python action whose
    worker is idle): `begin` returns False, having started nothing, where it cannot."""

    def begin(self, job: Job, occurrence: Occurrence, done: Callable[[Result], None]) -> bool: ...


@runtime_checkable
class LooksOnce(Protocol):
    """A runner whose attempts, begun together in the block, look at their targets' files once."""

    def one_look(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class Pumps(Protocol):
    """A runner whose replies a waiting thread can take itself (a `tick`), with no reply thread between."""

    def pumping(self) -> AbstractContextManager[Pump]: ...


@runtime_checkable
class Warms(Protocol):
    """A runner that can start its workers ahead of the first firing."""

    def warm(self) -> None: ...
