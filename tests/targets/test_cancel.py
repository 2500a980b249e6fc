"""Runner.cancel (overlap replace, semantic 34): a python worker is stopped and the pool stays usable, a
command's whole process group is killed, an http call is abandoned; each attempt ends `cancelled`."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cronwright.core.model import Outcome
from cronwright.targets.secrets import Secrets

from .conftest import MakeRunner, job, occurrence
from .test_command import command, with_a_child
from .test_http import SECRET, Hook, hook, target
from .test_python import acts_and_a_fifo

__all__ = ["hook"]  # the fixture, used by name


def test_cancel_stops_a_python_worker_mid_run_and_the_pool_stays_usable(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    runner, fifo = acts_and_a_fifo(make_runner, tmp_path)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(runner.run, job("acts", "wait_for", {"fifo": str(fifo)}), occurrence())
        with open(fifo) as pipe:  # returns once the action has started and written to it
            assert pipe.read() == "started"
        runner.cancel(occurrence())
        result = future.result(timeout=10)  # the action sleeps 60 s: only the stop ends it this soon
    assert result.outcome is Outcome.CANCELLED
    assert result.message == "a newer occurrence replaced it (overlap replace): its worker was stopped"
    follow = runner.run(job("acts", "greet", {"name": "next"}), occurrence(fire_id="fire-2"))
    assert (follow.outcome, follow.message) == (Outcome.OK, "hello, next")


def test_cancel_kills_a_commands_whole_process_group(make_runner: MakeRunner, tmp_path: Path) -> None:
    fifo = tmp_path / "child"
    script = with_a_child(fifo)  # a child that would outlive the command, until its group is killed
    _, runner = make_runner({"cmd": command(script, timeout="2m")})
    with ThreadPoolExecutor(2) as pool:
        future = pool.submit(runner.run, job("cmd", "go"), occurrence())
        with open(fifo) as pipe:
            assert pipe.read(5) == "alive"  # the child runs
            runner.cancel(occurrence())
            assert pipe.read() == ""  # end of file: the child is gone with its parent
        result = future.result(timeout=10)
    assert result.outcome is Outcome.CANCELLED
    assert result.message == "a newer occurrence replaced it (overlap replace): its process group was killed"
    assert "started" in result.output


def test_cancel_abandons_an_http_call_that_never_answers(hook: Hook, make_runner: MakeRunner) -> None:
    hook.hang = True  # the receiver never answers until the test ends
    _, runner = make_runner(
        {"hook": target(hook, timeout="1m")}, secrets=Secrets(environ={"HOOK_SECRET": SECRET})
    )
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(runner.run, job("hook", "ping"), occurrence())
        deadline = time.monotonic() + 10
        while not hook.received and time.monotonic() < deadline:  # a bounded poll for the request
            time.sleep(0.01)
        assert hook.received, "the request never reached the receiver"
        runner.cancel(occurrence())
        result = future.result(timeout=5)  # its timeout is a minute: only abandoning returns this soon
    assert result.outcome is Outcome.CANCELLED
    assert result.message == "a newer occurrence replaced it (overlap replace): the request was abandoned"


def test_cancel_of_an_attempt_that_is_not_running_does_nothing(make_runner: MakeRunner) -> None:
    _, runner = make_runner({"cmd": command("print('done')")})
    runner.cancel(occurrence())  # nothing runs under that fire_id: no error, nothing remembered
    result = runner.run(job("cmd", "go"), occurrence())
    assert (result.outcome, result.message) == (Outcome.OK, "done")
