"""The optional capabilities are declared, not probed for (issue 33): each is a small protocol in
node/runner.py or store/base.py, and the parts that have them are checked to have them here, so renaming
a method can never silently turn a fast path off (a python run begun without a thread, one look at a
target's files per pass, replies pumped on a tick's own thread, LISTEN/NOTIFY wake-ups)."""

from __future__ import annotations

from cronwright.node.runner import Begins, LooksOnce, Pumps, Warms
from cronwright.store.base import Troubled, Watches
from cronwright.store.memory import MemoryStore
from cronwright.store.postgres import PostgresStore
from cronwright.store.sqlite import SqliteStore
from cronwright.targets.executor import TargetRunner


def test_the_target_runner_has_every_runner_capability() -> None:
    for capability in (Begins, LooksOnce, Pumps, Warms):
        assert issubclass(TargetRunner, capability), capability.__name__


def says_how_it_fares(store: PostgresStore) -> Troubled:
    return store  # mypy --strict (over tests too) checks that a PostgresStore is a Troubled


def test_postgres_announces_changes_and_says_how_it_fares() -> None:
    assert issubclass(PostgresStore, Watches)
    assert isinstance(PostgresStore.state, property)  # Troubled has a property: issubclass cannot tell


def test_the_local_stores_announce_nothing() -> None:
    # A node on them learns of another process's change at its safety pass, or when the CLI wakes it.
    assert not issubclass(SqliteStore, Watches)
    assert not issubclass(MemoryStore, Watches)
