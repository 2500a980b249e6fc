"""What a node knows of its own attempts that the store may not hold yet (semantic 29), so that a
reconcile never guesses.

Two records, both in the node's memory (a new process is a new node, whose old rows its peers recover):
- the claims it made whose write was not durable, and that it has not started since: the only attempts
  it may ever give back, should such a write have landed unheard;
- the outcomes of attempts it ran whose finishing write is not durable yet (kept while the store fails,
  or lost to another writer): if the row moves on meanwhile, they are decided again on the row as it is.
"""

from __future__ import annotations

from collections.abc import Collection

from cronwright.core.model import Finished
from cronwright.node.dispatch import Attempt, attempt_of


class Ledger:
    def __init__(self, forget_claims_after: float) -> None:
        self._forget_after = forget_claims_after  # seconds: a claim not seen landed by then never will
        # With the monotonic second of the claim, and the version its write gave the row.
        self._unstarted: dict[Attempt, tuple[float, int]] = {}
        self._unwritten: dict[Attempt, Finished] = {}

    # --- claims never started -----------------------------------------------------------------------

    def not_won(self, attempt: Attempt, at: float, version: int) -> None:
        """A claim of `attempt` whose write was not durable: not started, whatever became of the write.
        `version` is the row's version had the write landed."""
        self._unstarted[attempt] = (at, version)

    def started(self, attempt: Attempt) -> None:
        """`attempt` starts now (a later claim of it won): whatever an earlier claim did, it ran."""
        self._unstarted.pop(attempt, None)

    def never_started(self, attempt: Attempt) -> bool:
        return attempt in self._unstarted

    def claimed_version(self, attempt: Attempt) -> int:
        """The row's version as the claim of `attempt` (never started) wrote it."""
        return self._unstarted[attempt][1]

    def given_back(self, attempt: Attempt) -> None:
        self._unstarted.pop(attempt, None)

    def forget_old_claims(self, now: float) -> None:
        oldest = now - self._forget_after
        for attempt in [attempt for attempt, (at, _) in self._unstarted.items() if at < oldest]:
            del self._unstarted[attempt]

    # --- outcomes not yet durable -------------------------------------------------------------------

    def kept(self, finished: Finished) -> None:
        self._unwritten[attempt_of(finished[0])] = finished

    def outcome(self, attempt: Attempt) -> Finished | None:
        return self._unwritten.get(attempt)

    def written(self, job_ids: Collection[int]) -> None:
        """A durable write of these jobs holds every outcome kept for them."""
        for attempt in [attempt for attempt in self._unwritten if attempt[0] in job_ids]:
            del self._unwritten[attempt]

    def outcomes_of(self, job_ids: Collection[int]) -> list[Finished]:
        return [item for attempt, item in self._unwritten.items() if attempt[0] in job_ids]

    def concluded(self, attempt: Attempt) -> None:
        """Its row no longer holds `attempt`: its own write had landed unheard, or a peer recorded it."""
        self._unwritten.pop(attempt, None)
