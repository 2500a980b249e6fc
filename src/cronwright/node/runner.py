"""The seam between the node and whatever runs an attempt."""

from __future__ import annotations

from typing import Protocol

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
