"""Python actions in the warm worker pool: each failure becomes the right outcome, and the pool recovers."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cronwright.core.model import Outcome, Result
from cronwright.fronts.cli.runtime import Runtime
from cronwright.targets.attempt import OUTPUT_LIMIT
from cronwright.targets.executor import TargetRunner
from cronwright.targets.pool import Pool
from cronwright.targets.registry import Registry
from cronwright.targets.secrets import Secrets

from .conftest import MakeRunner, job, occurrence, write_module

ACTIONS = """
    import json, os, signal, sys, time
    from typing import Literal
    import cronwright

    @cronwright.action
    def greet(ctx: cronwright.Context, name: str, excited: bool = False) -> str:
        print("greeting", name)
        ctx.log.info("fire %s attempt %d", ctx.fire_id, ctx.attempt)
        return f"hello, {name}" + ("!" if excited else "")

    @cronwright.action
    def context(ctx: cronwright.Context) -> dict:
        return {
            "fire_id": ctx.fire_id, "attempt": ctx.attempt, "schedule": ctx.schedule, "job_id": ctx.job_id,
            "scheduled_for": ctx.scheduled_for.isoformat(), "fired_at": ctx.fired_at.isoformat(),
            "deadline_aware": ctx.deadline.tzinfo is not None, "remaining_positive": ctx.remaining() > 0,
            "cwd": os.getcwd(), "pid": os.getpid(), "stdin": sys.stdin.read(),
        }

    @cronwright.action
    def echo(value: int) -> str:
        return str(value)

    @cronwright.action
    def fail(reason: str = "the report database is down") -> None:
        raise RuntimeError(reason)

    @cronwright.action
    def exit3() -> None:
        print("about to exit", flush=True)
        os._exit(3)

    @cronwright.action
    def segfault() -> None:
        os.kill(os.getpid(), signal.SIGSEGV)

    @cronwright.action(timeout="1s")
    def oversleep() -> None:
        print("sleeping", flush=True)
        time.sleep(60)

    @cronwright.action(timeout="1s")
    def stubborn() -> None:
        # A hung worker that ignores polite signals: only SIGKILL ends it.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            time.sleep(0.05)

    @cronwright.action
    def flood() -> str:
        for _ in range(10 * 1024):
            sys.stdout.write("x" * 1023 + "\\n")
        print("the very end")
        return "flooded"

    @cronwright.action
    def pid() -> int:
        return os.getpid()

    @cronwright.action
    def exits_cleanly() -> None:
        sys.exit(2)

    @cronwright.action
    def chdir() -> str:
        os.chdir("/")
        return "moved"

    @cronwright.action
    def wait_for(fifo: str) -> None:
        with open(fifo, "w") as pipe:
            pipe.write("started")
        time.sleep(60)

    @cronwright.action
    def mode(level: Literal["low", "high"]) -> str:
        return level
"""


@pytest.fixture
def python(make_runner: MakeRunner, tmp_path: Path) -> tuple[Registry, TargetRunner]:
    write_module(tmp_path / "scripts", "acts", ACTIONS)
    return make_runner({"acts": {"kind": "python", "module": "acts", "path": ["scripts"]}})


def run(runner: TargetRunner, action: str, args: dict[str, Any] | None = None, attempt: int = 1) -> Result:
    return runner.run(job("acts", action, args), occurrence(attempt))


def test_a_python_action_gets_its_args_and_its_return_value_is_the_message(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    result = run(runner, "greet", {"name": "Ada", "excited": True})
    assert (result.outcome, result.message) == (Outcome.OK, "hello, Ada!")
    assert "greeting Ada\n" in result.output
    assert "INFO cronwright.action.greet: fire fire-1 attempt 1" in result.output
    assert result.took_ms >= 0


def test_an_integer_past_64_bits_reaches_the_action_whole(python: tuple[Registry, TargetRunner]) -> None:
    """The call's line is written by orjson, which refuses such an integer: the standard library writes it."""
    _, runner = python
    result = run(runner, "echo", {"value": 2**70 + 1})
    assert (result.outcome, result.message) == (Outcome.OK, str(2**70 + 1))


def test_the_context_carries_the_occurrence_and_the_worker_is_isolated(
    python: tuple[Registry, TargetRunner], tmp_path: Path
) -> None:
    _, runner = python
    result = run(runner, "context", attempt=2)
    assert result.outcome is Outcome.OK, result
    import json

    seen = json.loads(result.message)
    assert seen == {
        "fire_id": "fire-1",
        "attempt": 2,
        "schedule": "job",
        "job_id": 7,
        "scheduled_for": "2026-03-02T09:00:00+01:00",
        "fired_at": "2026-03-02T09:00:01+01:00",
        "deadline_aware": True,
        "remaining_positive": True,
        "cwd": str(tmp_path),
        "pid": seen["pid"],
        "stdin": "",  # the protocol is not on stdin: an action that reads it gets end of file
    }
    assert seen["pid"] != os.getpid()


def test_an_exception_is_an_error_with_its_type_and_message_and_its_traceback_in_the_output(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    result = run(runner, "fail")
    assert (result.outcome, result.message) == (Outcome.ERROR, "RuntimeError: the report database is down")
    assert "in fail\n    raise RuntimeError(reason)" in result.output
    assert "cronwright/targets/worker.py" not in result.output
    assert run(runner, "greet", {"name": "again"}).outcome is Outcome.OK


def test_sys_exit_in_an_action_is_an_error_and_the_worker_lives_on(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    first = run(runner, "pid").message
    assert run(runner, "exits_cleanly").message == "SystemExit: 2"
    assert run(runner, "pid").message == first


def test_os_exit_is_crashed_with_the_exit_code_and_the_pool_recovers(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    before = run(runner, "pid").message
    result = run(runner, "exit3")
    assert (result.outcome, result.message) == (Outcome.CRASHED, "the worker exited with code 3")
    assert "about to exit" in result.output
    after = run(runner, "pid")
    assert after.outcome is Outcome.OK
    assert after.message != before


def test_a_segfault_is_crashed_with_the_signal(python: tuple[Registry, TargetRunner]) -> None:
    _, runner = python
    result = run(runner, "segfault")
    assert (result.outcome, result.message) == (Outcome.CRASHED, "the worker was killed by SIGSEGV")
    assert run(runner, "greet", {"name": "after"}).outcome is Outcome.OK


def test_an_action_past_its_deadline_is_a_timeout_its_worker_killed_and_the_pool_recovers(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    before = int(run(runner, "pid").message)
    result = run(runner, "oversleep")
    assert result.outcome is Outcome.TIMEOUT
    assert result.message == "ran past its deadline of 1s; the worker was killed"
    assert "sleeping" in result.output
    assert 1000 <= result.took_ms < 5000
    assert not _alive(before)
    assert run(runner, "greet", {"name": "after"}).message == "hello, after"


def test_a_hung_worker_that_ignores_sigterm_is_killed_and_the_pool_recovers(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    hung = int(run(runner, "pid").message)
    result = run(runner, "stubborn")
    assert result.outcome is Outcome.TIMEOUT
    assert not _alive(hung)
    assert run(runner, "greet", {"name": "after"}).outcome is Outcome.OK


def test_ten_megabytes_of_output_are_bounded_with_a_marker_and_keep_their_end(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    result = run(runner, "flood")
    assert (result.outcome, result.message) == (Outcome.OK, "flooded")
    assert len(result.output.encode()) <= OUTPUT_LIMIT + 100
    assert "bytes omitted …]" in result.output
    assert result.output.endswith("the very end\n")
    assert run(runner, "greet", {"name": "after"}).outcome is Outcome.OK


def test_a_worker_that_dies_while_idle_is_replaced_before_the_next_run(
    python: tuple[Registry, TargetRunner],
) -> None:
    _, runner = python
    idle = int(run(runner, "pid").message)
    os.kill(idle, signal.SIGKILL)
    result = run(runner, "pid")
    assert result.outcome is Outcome.OK
    assert int(result.message) != idle


def test_a_worker_is_reused_and_an_action_cannot_move_the_next_ones_directory(
    python: tuple[Registry, TargetRunner], tmp_path: Path
) -> None:
    _, runner = python
    assert run(runner, "pid").message == run(runner, "pid").message
    assert run(runner, "chdir").message == "moved"
    assert f'"cwd": "{tmp_path}"' in run(runner, "context").message


def test_edited_code_is_picked_up_by_a_fresh_worker(
    python: tuple[Registry, TargetRunner], tmp_path: Path
) -> None:
    _, runner = python
    assert run(runner, "greet", {"name": "Ada"}).message == "hello, Ada"
    module = tmp_path / "scripts" / "acts.py"
    module.write_text(module.read_text().replace('f"hello, {name}"', 'f"hi, {name}"'))
    os.utime(module, ns=(5, 5))
    assert run(runner, "greet", {"name": "Ada"}).message == "hi, Ada"


def test_a_worker_that_hangs_while_starting_is_killed_and_the_pool_recovers(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    flag = tmp_path / "hang-on-import"
    source = f"""
        import os, time
        import cronwright
        while os.path.exists({str(flag)!r}):
            time.sleep(0.05)

        @cronwright.action
        def ping() -> str:
            return "pong"
    """
    write_module(tmp_path / "scripts", "slow", source)
    _, runner = make_runner(
        {"slow": {"kind": "python", "module": "slow", "path": ["scripts"]}}, pool=Pool(startup_timeout=1.0)
    )
    flag.touch()
    result = runner.run(job("slow", "ping"), occurrence())
    assert result.outcome is Outcome.TIMEOUT
    assert result.message == "the worker hung for 1s importing 'slow'; it was killed"
    flag.unlink()
    assert runner.run(job("slow", "ping"), occurrence()).message == "pong"


def test_args_that_no_longer_validate_are_refused_at_run_time(python: tuple[Registry, TargetRunner]) -> None:
    _, runner = python
    result = run(runner, "mode", {"level": "medium"})
    assert result.outcome is Outcome.REFUSED
    assert "$.level: 'medium' is not one of ['low', 'high']" in result.message
    assert "checked again when it ran" in result.message
    gone = run(runner, "vanished")
    assert gone.outcome is Outcome.REFUSED
    assert "acts.vanished is not allowed" in gone.message


def acts_and_a_fifo(make_runner: MakeRunner, tmp_path: Path) -> tuple[TargetRunner, Path]:
    """A runner over the `acts` module, and a FIFO that `wait_for` writes 'started' to as it begins."""
    write_module(tmp_path / "scripts", "acts", ACTIONS)
    _, runner = make_runner({"acts": {"kind": "python", "module": "acts", "path": ["scripts"]}})
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    return runner, fifo


def test_close_interrupts_a_running_action_and_frees_its_worker(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    runner, fifo = acts_and_a_fifo(make_runner, tmp_path)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run, runner, "wait_for", {"fifo": str(fifo)})
        with open(fifo) as pipe:  # returns once the action has started and written to it
            assert pipe.read() == "started"
        runner.close()
        result = future.result(timeout=10)
    assert result.outcome is Outcome.INTERRUPTED
    assert run(runner, "greet", {"name": "late"}).outcome is Outcome.INTERRUPTED


def test_many_runs_at_once_each_get_a_worker(python: tuple[Registry, TargetRunner]) -> None:
    _, runner = python
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda n: run(runner, "greet", {"name": str(n)}), range(8)))
    assert sorted(r.message for r in results) == sorted(f"hello, {n}" for n in range(8))


def test_warm_starts_a_worker_before_the_first_firing(make_runner: MakeRunner, tmp_path: Path) -> None:
    write_module(tmp_path / "scripts", "acts", ACTIONS)
    pool = Pool()
    registry, runner = make_runner(
        {"acts": {"kind": "python", "module": "acts", "path": ["scripts"]}}, pool=pool
    )
    runner.warm()
    pool.wait_warm()
    [spec] = registry.python_workers()
    assert pool.idle(spec) == 1
    assert run(runner, "greet", {"name": "warm"}).outcome is Outcome.OK


def test_a_spare_pool_starts_a_worker_beside_the_one_taken(make_runner: MakeRunner, tmp_path: Path) -> None:
    """serve's pool (spare=True): taking the last warm worker starts another in the background, so a firing
    that comes while the first runs finds one warm; a plain pool (tick, the CLI) starts none."""
    write_module(tmp_path / "scripts", "acts", ACTIONS)
    for spare, idle_after in ((True, 2), (False, 1)):
        pool = Pool(spare=spare)
        registry, runner = make_runner(
            {"acts": {"kind": "python", "module": "acts", "path": ["scripts"]}}, pool=pool
        )
        [spec] = registry.python_workers()
        runner.warm()
        pool.wait_warm()
        assert run(runner, "greet", {"name": "one"}).outcome is Outcome.OK
        pool.wait_warm()
        assert pool.idle(spec) == idle_after, spare
        runner.close()


def test_a_spare_pool_keeps_its_spare_through_bursts_that_take_every_idle_worker(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    """The spare is one beyond `max_idle`: a burst that takes the last idle worker starts it, and its end
    keeps it. Counted in `max_idle`, each such burst forked a spare and killed a worker as it ended (serve
    with 16 slots did both at every pass of 16 firings); the calls then run on the same two workers."""
    write_module(tmp_path / "scripts", "acts", ACTIONS)
    pool = Pool(spare=True, max_idle=1)
    registry, runner = make_runner(
        {"acts": {"kind": "python", "module": "acts", "path": ["scripts"]}}, pool=pool
    )
    [spec] = registry.python_workers()
    runner.warm()
    pool.wait_warm()
    pids: set[int] = set()
    for _ in range(6):
        result = run(runner, "context")
        assert result.outcome is Outcome.OK
        pids.add(json.loads(result.message)["pid"])
        pool.wait_warm()
    assert len(pids) <= 2
    assert pool.idle(spec) == 2
    runner.close()


def test_the_worker_environment_holds_only_the_allowlist(
    make_runner: MakeRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = """
        import os
        import cronwright

        @cronwright.action
        def env() -> list:
            return sorted(k for k in os.environ if k.startswith("CW_"))
    """
    write_module(tmp_path / "scripts", "envy", source)
    monkeypatch.setenv("CW_ALLOWED", "1")
    monkeypatch.setenv("CW_SECRET_TOKEN", "do-not-leak")
    target = {"kind": "python", "module": "envy", "path": ["scripts"], "env": ["CW_ALLOWED"]}
    _, runner = make_runner({"envy": target}, secrets=Secrets())
    assert runner.run(job("envy", "env"), occurrence()).message == '["CW_ALLOWED"]'


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


HOLD = """
    import os, time
    from pathlib import Path
    import cronwright

    @cronwright.action
    def hold(gate: str) -> str:
        Path(f"{gate}.{os.getpid()}").write_text("")
        while not Path(gate).exists():
            time.sleep(0.005)
        return str(os.getpid())
"""


def test_the_workers_of_a_burst_that_ends_together_all_stay_warm(tmp_path: Path) -> None:
    # `serve` and `tick` keep as many idle workers as runs may be in flight (max_concurrency): when a burst
    # of runs ends together, no worker is killed only to be started again for the next firings.
    write_module(tmp_path / "scripts", "holder", HOLD)
    (tmp_path / "cronwright.toml").write_text(
        f'[node]\nmax_concurrency = 6\nstore = "sqlite:///{tmp_path}/cw.db"\n\n'
        f'[targets.h]\nkind = "python"\nmodule = "holder"\npath = ["{tmp_path}/scripts"]\n'
    )
    runtime = Runtime(str(tmp_path / "cronwright.toml"))
    runner = runtime.app().node.runs.runner
    assert isinstance(runner, TargetRunner)
    gate = tmp_path / "gate"

    def burst() -> set[str]:
        gate.unlink(missing_ok=True)
        for marker in tmp_path.glob("gate.*"):
            marker.unlink()
        with ThreadPoolExecutor(6) as threads:
            futures = [
                threads.submit(runner.run, job("h", "hold", {"gate": str(gate)}), occurrence())
                for _ in range(6)
            ]
            wait_for(lambda: len(list(tmp_path.glob("gate.*"))) == 6)  # six workers hold a run each
            gate.touch()
            results = [future.result(timeout=30) for future in futures]
        assert {result.outcome for result in results} == {Outcome.OK}, results
        return {result.message for result in results}

    try:
        first = burst()
        assert len(first) == 6
        assert burst() == first, "the second burst found every worker of the first one warm"
    finally:
        runtime.close()


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
