"""The writers' turnstile (store/turnstile.py): a firing node's SQLite write waits for the write in flight
at most, never for a caller that writes back to back (semantic 42); and the turnstile never fails a
write nor holds one without bound."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cronwright.store import SqliteStore
from cronwright.store.turnstile import CALLER_STEP, NODE_BOUND, NODE_STEP, Turnstile, turnstile_path


class Looks:
    """An injected sleep and monotonic clock: each sleep is a look, and moves the clock by its length."""

    def __init__(self) -> None:
        self.now = 0.0
        self.count = 0
        self.then: list[contextlib.ExitStack] = []  # released at the second look

    def sleep(self, seconds: float) -> None:
        self.count += 1
        self.now += seconds
        if self.count == 2:
            for stack in self.then:
                stack.close()

    def monotonic(self) -> float:
        return self.now


def turnstile(path: Path, first: bool, looks: Looks | None = None, bound: float = 1.0) -> Turnstile:
    if looks is None:
        return Turnstile(path, first, bound)
    return Turnstile(path, first, bound, sleep=looks.sleep, monotonic=looks.monotonic)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return turnstile_path(tmp_path / "cw.db")


def test_a_caller_passes_at_once_when_no_node_waits(path: Path) -> None:
    looks = Looks()
    with turnstile(path, first=False, looks=looks).entering() as passed:
        assert passed
    assert looks.count == 0


def test_a_caller_waits_while_a_node_holds_it_and_goes_once_it_lets_go(path: Path) -> None:
    node, looks = turnstile(path, first=True), Looks()
    held = contextlib.ExitStack()
    assert held.enter_context(node.entering())
    looks.then.append(held)  # the node's write lock is granted at the caller's second look
    with turnstile(path, first=False, looks=looks).entering() as passed:
        assert passed
    assert looks.count == 2


def test_a_caller_goes_on_without_it_once_its_bound_is_spent(path: Path) -> None:
    node, looks = turnstile(path, first=True), Looks()
    with node.entering() as held:
        assert held
        with turnstile(path, first=False, looks=looks, bound=0.01).entering() as passed:
            assert not passed
    assert looks.count == round(0.01 / CALLER_STEP)


def test_a_node_waits_for_another_firing_process_for_its_bound_only(path: Path) -> None:
    looks = Looks()
    with turnstile(path, first=True).entering() as held:
        assert held
        with turnstile(path, first=True, looks=looks).entering() as second:
            assert not second
    assert looks.count == round(NODE_BOUND / NODE_STEP)


def test_a_passing_caller_leaves_nothing_held(path: Path) -> None:
    with turnstile(path, first=False).entering():
        pass
    looks = Looks()
    with turnstile(path, first=True, looks=looks).entering() as held:
        assert held
    assert looks.count == 0


def test_the_file_goes_with_the_last_store_and_comes_back_for_those_still_open(path: Path) -> None:
    """As SQLite's -wal and -shm: a closed store leaves no file; a process that still writes makes it
    again, and the others order their writes on the new one."""
    node, closing = turnstile(path, first=True), turnstile(path, first=False)
    closing.close()
    assert not path.exists()
    looks = Looks()
    with node.entering() as held:
        assert held and path.exists()
        with turnstile(path, first=False, looks=looks, bound=0.01).entering() as passed:
            assert not passed  # a caller that opened the new file waits for the node on it
    node.close()
    assert not path.exists()


def test_a_store_that_closes_while_a_node_waits_leaves_the_file(path: Path) -> None:
    node = turnstile(path, first=True)
    with node.entering() as held:
        assert held
        turnstile(path, first=False).close()
        assert path.exists()
    node.close()


def test_a_turnstile_that_cannot_be_opened_fails_no_write(tmp_path: Path) -> None:
    nowhere = tmp_path / "no such folder" / "cw.db-turnstile"
    with turnstile(nowhere, first=True).entering() as held:
        assert not held
    with turnstile(nowhere, first=False).entering() as passed:
        assert not passed


# --- across processes, on a real store ---------------------------------------------------------------

HAMMER = textwrap.dedent(
    """
    import sys
    from cronwright.store import SqliteStore

    store = SqliteStore(sys.argv[1])  # a caller, as a front's or a CLI's store is
    serial = 0
    print("up", flush=True)
    while True:
        serial += 1
        with store._writing() as connection:
            connection.execute(
                "INSERT INTO nodes (node, beat_at, started_at) VALUES (?, 0, 0)", (f"hammer-{serial}",)
            )
    """
)


@contextlib.contextmanager
def hammering(db: Path) -> Iterator[None]:
    """A process that writes to the store back to back, one transaction after another, until the end."""
    argv = [sys.executable, "-c", HAMMER, str(db)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as hammer:
        try:
            assert hammer.stdout is not None and hammer.stderr is not None
            assert hammer.stdout.readline().strip() == "up", hammer.stderr.read()
            yield
        finally:
            hammer.kill()


def hammered(store: SqliteStore) -> int:
    with store._reading() as connection:
        (count,) = connection.execute("SELECT count(*) FROM nodes WHERE node LIKE 'hammer-%'").fetchone()
    return int(count)


def test_a_nodes_write_waits_for_the_write_in_flight_not_for_a_caller_writing_back_to_back(
    tmp_path: Path,
) -> None:
    """Counted, not timed: how many of the caller's writes commit between the node asking for the write
    lock and getting it. Without the turnstile SQLite's sleeping lock lets the caller in again and
    again (dozens of its writes, often hundreds); with it, the write in flight, and at most one that
    passed the turnstile just before the node took it."""
    db = tmp_path / "cw.db"
    node = SqliteStore(db, first_writer=True)
    SqliteStore(db).close()  # the store exists before the caller opens it
    with hammering(db):
        while hammered(node) < 50:  # the caller is writing back to back
            pass
        overtaken = []
        for _ in range(20):
            before = hammered(node)
            with node._writing() as connection:
                (inside,) = connection.execute(
                    "SELECT count(*) FROM nodes WHERE node LIKE 'hammer-%'"
                ).fetchone()
            overtaken.append(inside - before)
    node.close()
    assert max(overtaken) <= 2, overtaken
