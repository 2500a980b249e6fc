"""A python attempt begun without a thread of its own (TargetRunner.begin, Pool.begin): the pool's one reply
thread waits for it, and its outcomes are those of `run`, on real workers."""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from cronwright.core.model import Outcome, Result
from cronwright.targets import pool as pool_module
from cronwright.targets import registry as registry_module
from cronwright.targets.executor import TargetRunner
from cronwright.targets.pool import Pool
from cronwright.targets.registry import Registry

from .conftest import MakeRunner, job, occurrence, write_module
from .test_python import ACTIONS, HOLD, run, wait_for

ACTS = ACTIONS + HOLD  # `hold` lets `warm` keep every worker busy until all have started


@pytest.fixture
def python(make_runner: MakeRunner, tmp_path: Path) -> tuple[Registry, TargetRunner]:
    write_module(tmp_path / "scripts", "acts", ACTS)
    return make_runner({"acts": {"kind": "python", "module": "acts", "path": ["scripts"]}})


class Begun:
    """An attempt begun without a thread; `result()` waits for the outcome that `done` was given."""

    def __init__(
        self, runner: TargetRunner, action: str, args: dict[str, Any] | None = None, fire: str = "f"
    ) -> None:
        self._done = threading.Event()
        self._results: list[Result] = []
        self.occurrence = occurrence(fire_id=fire)
        self.began = runner.begin(job("acts", action, args), self.occurrence, self._end)

    def _end(self, result: Result) -> None:
        self._results.append(result)
        self._done.set()

    def result(self) -> Result:
        assert self._done.wait(30), "no outcome within 30 s"
        [result] = self._results  # exactly once
        return result


def warm(runner: TargetRunner, workers: int = 1) -> None:
    """Runs `workers` attempts at once the usual way, each held until all have started (a quick action could
    let one worker serve two of them), so that as many warm workers are idle afterwards."""
    with tempfile.TemporaryDirectory() as folder:
        _hold_all(runner, Path(folder) / "gate", workers)


def _hold_all(runner: TargetRunner, gate: Path, workers: int) -> None:
    threads = [
        threading.Thread(target=run, args=(runner, "hold", {"gate": str(gate)})) for _ in range(workers)
    ]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(list(gate.parent.glob(f"{gate.name}.*"))) == workers)
    gate.touch()
    for thread in threads:
        thread.join()


def test_a_begun_action_gets_its_args_and_its_worker_serves_the_next(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    warm(runner)
    first = Begun(runner, "pid")
    pid = first.result().message
    greeted = Begun(runner, "greet", {"name": "ada", "excited": True})

    assert first.began and greeted.began
    result = greeted.result()
    assert (result.outcome, result.message) == (Outcome.OK, "hello, ada!")
    assert "greeting ada" in result.output
    assert Begun(runner, "pid").result().message == pid


def test_a_begun_action_looks_at_its_module_files_once(
    python: tuple[Registry, TargetRunner], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The registry's check of the run takes the files' fingerprint; the worker's own check of the same
    # files, a moment later, is answered by it, with no stat of its own.
    _, runner = python
    warm(runner)
    taken = {"registry": 0, "worker": 0}
    for where in taken:
        module = registry_module if where == "registry" else pool_module
        real = module.fingerprint

        def counted(files: Any, where: str = where, real: Any = real) -> Any:
            taken[where] += 1
            return real(files)

        monkeypatch.setattr(module, "fingerprint", counted)

    begun = Begun(runner, "pid")

    assert begun.began
    assert begun.result().outcome is Outcome.OK
    assert taken == {"registry": 1, "worker": 0}


def test_a_begun_action_after_its_module_changed_never_runs_the_old_code(
    python: tuple[Registry, TargetRunner], tmp_path: Path
) -> None:
    _, runner = python
    warm(runner)
    module = tmp_path / "scripts" / "acts.py"
    module.write_text(module.read_text().replace('f"hello, {name}"', 'f"hi, {name}"'))
    os.utime(module, ns=(5, 5))

    # The only warm worker imported the old code: it is not used, and nothing begins.
    assert not Begun(runner, "greet", {"name": "Ada"}).began
    assert run(runner, "greet", {"name": "Ada"}).message == "hi, Ada"


def test_without_an_idle_warm_worker_nothing_begins(python: tuple[Registry, TargetRunner]) -> None:
    _, runner = python
    begun = Begun(runner, "greet", {"name": "cold"})

    assert not begun.began  # the caller runs it on a thread, which starts a worker
    assert run(runner, "greet", {"name": "cold"}).message == "hello, cold"


def test_a_begun_action_whose_worker_exits_is_crashed_and_the_pool_recovers(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    warm(runner)
    result = Begun(runner, "exit3").result()

    assert (result.outcome, result.message) == (Outcome.CRASHED, "the worker exited with code 3")
    assert "about to exit" in result.output
    assert run(runner, "greet", {"name": "after"}).outcome is Outcome.OK


def test_a_begun_action_past_its_deadline_is_a_timeout_and_its_worker_is_killed(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    warm(runner)
    pid = int(Begun(runner, "pid").result().message)
    result = Begun(runner, "oversleep").result()

    assert (result.outcome, result.message) == (
        Outcome.TIMEOUT,
        "ran past its deadline of 1s; the worker was killed",
    )
    assert "sleeping" in result.output
    assert 1000 <= result.took_ms < 5000
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def a_begun_wait(make_runner: MakeRunner, tmp_path: Path) -> tuple[TargetRunner, Begun]:
    """A runner and an attempt of `wait_for` begun without a thread, once the action has started."""
    write_module(tmp_path / "scripts", "acts", ACTS)
    _, runner = make_runner({"acts": {"kind": "python", "module": "acts", "path": ["scripts"]}})
    warm(runner)
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    begun = Begun(runner, "wait_for", {"fifo": str(fifo)})
    with open(fifo) as pipe:  # returns once the action has started and written to it
        assert pipe.read() == "started"
    return runner, begun


def test_a_begun_action_that_is_cancelled_ends_cancelled(make_runner: MakeRunner, tmp_path: Path) -> None:
    runner, begun = a_begun_wait(make_runner, tmp_path)

    runner.cancel(begun.occurrence)

    result = begun.result()
    assert begun.began and result.outcome is Outcome.CANCELLED
    assert run(runner, "greet", {"name": "after"}).outcome is Outcome.OK


def test_close_interrupts_a_begun_action(make_runner: MakeRunner, tmp_path: Path) -> None:
    runner, begun = a_begun_wait(make_runner, tmp_path)

    runner.close()

    assert begun.result().outcome is Outcome.INTERRUPTED


def test_many_begun_at_once_each_get_a_worker_and_one_outcome(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    write_module(tmp_path / "scripts", "acts", ACTS)
    # As many idle workers may stay warm as are begun (a plain Pool keeps 4, and the fifth would find none
    # idle unless an earlier one had already replied: the race that made this test flaky).
    _, runner = make_runner(
        {"acts": {"kind": "python", "module": "acts", "path": ["scripts"]}}, pool=Pool(max_idle=8)
    )
    warm(runner, 8)
    begun = [Begun(runner, "greet", {"name": str(n)}, fire=f"f{n}") for n in range(8)]

    assert all(b.began for b in begun)
    assert sorted(b.result().message for b in begun) == sorted(f"hello, {n}" for n in range(8))


def test_a_command_action_never_begins_without_a_thread(make_runner: MakeRunner) -> None:
    _, runner = make_runner({"sh": {"kind": "command", "actions": {"true": {"argv": ["/bin/true"]}}}})

    assert not runner.begin(job("sh", "true"), occurrence(), lambda result: None)
