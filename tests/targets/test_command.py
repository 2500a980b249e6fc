"""Command targets: argv without a shell, args kept literal, an env allowlist, the envelope on stdin."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronwright.core.model import Occurrence, Outcome
from cronwright.targets.command import build_argv, placeholders

from .conftest import PYTHON, T0, MakeRunner, job, occurrence

# Each script is run as `python -c SCRIPT ARGS...`: a real program, with no shell anywhere.
RECORD = """
import json, os, sys
record = {"argv": sys.argv[1:], "stdin": json.load(sys.stdin), "cwd": os.getcwd(),
          "env": {k: v for k, v in os.environ.items() if k != "LC_CTYPE"}}
with open(os.environ["RECORD_TO"], "w") as file:
    json.dump(record, file)
print("first line")
print("recorded")
"""


def command(script: str, *args: str, schema: dict[str, Any] | None = None, **target: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"argv": [PYTHON, "-c", script, *args]}
    if schema is not None:
        action["args_schema"] = schema
    for key in ("timeout", "secrets"):
        if key in target:
            action[key] = target.pop(key)
    return {"kind": "command", **target, "actions": {"go": action}}


WORDS = {
    "type": "object",
    "properties": {"word": {"type": "string"}, "n": {"type": "integer"}},
    "required": ["word"],
}


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "record.json"
    monkeypatch.setenv("RECORD_TO", str(path))
    return path


def test_scheduled_for_is_the_exact_due_instant_with_its_fraction_of_a_second(
    make_runner: MakeRunner, record: Path
) -> None:
    # An `every` grid made before its anchor was whole seconds, say, is due at 09:00:00.4817: an action that
    # measures its lag must read it whole, not truncated to 09:00:00 (the envelope, DESIGN).
    _, runner = make_runner({"cmd": command(RECORD, env=["RECORD_TO"])})
    due = T0 + timedelta(microseconds=481_700)
    result = runner.run(job("cmd", "go"), Occurrence(7, "fire-1", due, 1, due + timedelta(milliseconds=3)))
    assert result.outcome is Outcome.OK, result
    seen = json.loads(record.read_text())
    assert seen["stdin"]["cron"]["scheduled_for"] == "2026-03-02T09:00:00.481700+01:00"
    assert seen["env"]["CRONWRIGHT_SCHEDULED_FOR"] == "2026-03-02T09:00:00.481700+01:00"


def test_the_envelope_tells_apart_the_two_copies_of_a_repeated_hour(make_runner: MakeRunner) -> None:
    # 02:30 on 25 October 2026 happens twice in Berlin. As datetimes of that zone the two copies, fold 0
    # and fold 1, compare equal; the envelope (whose renderings a busy node remembers) must give each its
    # own offset, whichever comes first.
    _, runner = make_runner({"cmd": command(RECORD)})
    berlin = ZoneInfo("Europe/Berlin")
    first = datetime(2026, 10, 25, 2, 30, tzinfo=berlin, fold=0)
    second = datetime(2026, 10, 25, 2, 30, tzinfo=berlin, fold=1)
    for due, shown in ((first, "02:30:00+02:00"), (second, "02:30:00+01:00"), (first, "02:30:00+02:00")):
        cron = runner.envelope(job("cmd", "go"), Occurrence(7, "f", due, 1, due))["cron"]
        assert cron["scheduled_for"] == cron["nominal"] == cron["fired_at"] == f"2026-10-25T{shown}"


def test_args_reach_the_command_literally_never_through_a_shell(
    make_runner: MakeRunner, record: Path, tmp_path: Path
) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}},
        "required": ["a", "b", "c"],
    }
    target = command(RECORD, "--first", "{a}", "{b}", "{c}", schema=schema, env=["RECORD_TO"])
    _, runner = make_runner({"cmd": target})
    pwned = Path("/tmp/pwned")
    pwned.unlink(missing_ok=True)
    args = {"a": "; rm -rf /", "b": "$(touch /tmp/pwned)", "c": "`touch /tmp/pwned` && echo 'quoted' \"x\" *"}
    result = runner.run(job("cmd", "go", args), occurrence())
    assert result.outcome is Outcome.OK, result
    seen = json.loads(record.read_text())
    assert seen["argv"] == [
        "--first",
        "; rm -rf /",
        "$(touch /tmp/pwned)",
        "`touch /tmp/pwned` && echo 'quoted' \"x\" *",
    ]
    assert not pwned.exists()


def test_the_envelope_arrives_on_stdin_and_the_environment_holds_only_the_allowlist(
    make_runner: MakeRunner, record: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALLOWED_VAR", "yes")
    monkeypatch.setenv("NOT_ALLOWED_VAR", "no")
    monkeypatch.setenv("BACKUP_KEY", "k-123")
    (tmp_path / "work").mkdir()
    target = command(RECORD, env=["RECORD_TO", "ALLOWED_VAR"], cwd="work", secrets=["BACKUP_KEY"])
    _, runner = make_runner({"cmd": target})
    result = runner.run(job("cmd", "go", {"word": "hi"}, name="nightly-backup"), occurrence(attempt=2))
    assert (result.outcome, result.message) == (Outcome.OK, "recorded")
    seen = json.loads(record.read_text())
    assert seen["stdin"] == {
        "schedule": "nightly-backup",
        "job_id": 7,
        "target": "cmd",
        "action": "go",
        "args": {"word": "hi"},
        "cron": {
            "fire_id": "fire-1",
            "attempt": 2,
            "scheduled_for": "2026-03-02T09:00:00+01:00",
            "nominal": "2026-03-02T09:00:00+01:00",
            "fired_at": "2026-03-02T09:00:01+01:00",
        },
    }
    assert seen["env"] == {
        "RECORD_TO": str(record),
        "ALLOWED_VAR": "yes",
        "BACKUP_KEY": "k-123",
        "CRONWRIGHT_FIRE_ID": "fire-1",
        "CRONWRIGHT_ATTEMPT": "2",
        "CRONWRIGHT_SCHEDULED_FOR": "2026-03-02T09:00:00+01:00",
        "CRONWRIGHT_NOMINAL": "2026-03-02T09:00:00+01:00",
        "CRONWRIGHT_JOB": "nightly-backup",
    }
    assert seen["cwd"] == str(tmp_path / "work")
    assert "k-123" not in result.output


def test_a_non_zero_exit_is_an_error_with_the_code_and_what_the_command_said(make_runner: MakeRunner) -> None:
    script = "import sys; print('working'); print('disk full', file=sys.stderr); sys.exit(4)"
    _, runner = make_runner({"cmd": command(script)})
    result = runner.run(job("cmd", "go"), occurrence())
    assert (result.outcome, result.message) == (Outcome.ERROR, "exited with code 4: disk full")
    assert result.output == "[stdout]\nworking\n\n[stderr]\ndisk full\n"


def test_death_by_a_signal_is_crashed(make_runner: MakeRunner) -> None:
    _, runner = make_runner({"cmd": command("import os, signal; os.kill(os.getpid(), signal.SIGABRT)")})
    result = runner.run(job("cmd", "go"), occurrence())
    assert (result.outcome, result.message) == (Outcome.CRASHED, "the command was killed by SIGABRT")


def with_a_child(fifo: Path) -> str:
    """A command that starts a child which would outlive it, and sleeps. The child holds the FIFO `fifo`
    open for writing (it writes 'alive' first), so a read of it ends exactly when the child dies: no
    polling, no sleep."""
    os.mkfifo(fifo)
    child = f"import time; pipe = open({str(fifo)!r}, 'w'); pipe.write('alive'); pipe.flush(); time.sleep(60)"
    return (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}])\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )


def test_the_deadline_stops_the_whole_process_group(make_runner: MakeRunner, tmp_path: Path) -> None:
    fifo = tmp_path / "grandchild"
    script = with_a_child(fifo)
    _, runner = make_runner({"cmd": command(script, timeout="1s")})
    with ThreadPoolExecutor(1) as pool:
        heard = pool.submit(lambda: fifo.read_text())
        result = runner.run(job("cmd", "go"), occurrence())
        assert heard.result(timeout=10) == "alive"  # end of file: the grandchild is gone too
    assert result.outcome is Outcome.TIMEOUT
    assert result.message == "ran past its deadline of 1s; its process group was stopped"
    assert "started" in result.output


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(make_runner: MakeRunner) -> None:
    script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"
    from cronwright.targets.command import CommandExecutor

    _, runner = make_runner({"cmd": command(script, timeout="1s")}, commands=CommandExecutor(kill_grace=0.2))
    result = runner.run(job("cmd", "go"), occurrence())
    assert result.outcome is Outcome.TIMEOUT
    assert result.took_ms < 5000


def test_output_is_bounded_and_the_message_is_the_last_line(make_runner: MakeRunner) -> None:
    script = (
        "import sys\nfor i in range(200_000): sys.stdout.write(f'line {i}\\n')\nprint('done: 200000 lines')"
    )
    _, runner = make_runner({"cmd": command(script)})
    result = runner.run(job("cmd", "go"), occurrence())
    assert (result.outcome, result.message) == (Outcome.OK, "done: 200000 lines")
    assert len(result.output) < 33 * 1024
    assert result.output.startswith("line 0\nline 1\n")
    assert "bytes omitted …]" in result.output


def test_a_program_that_does_not_exist_is_an_error(make_runner: MakeRunner, tmp_path: Path) -> None:
    target = {"kind": "command", "actions": {"go": {"argv": [str(tmp_path / "no-such-program")]}}}
    _, runner = make_runner({"cmd": target})
    result = runner.run(job("cmd", "go"), occurrence())
    assert result.outcome is Outcome.ERROR
    assert result.message.startswith("cannot start ") and "No such file or directory" in result.message


def test_close_interrupts_a_running_command(make_runner: MakeRunner, tmp_path: Path) -> None:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    script = f"import time\nopen({str(fifo)!r}, 'w').write('started')\ntime.sleep(60)"
    _, runner = make_runner({"cmd": command(script)})
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(runner.run, job("cmd", "go"), occurrence())
        with open(fifo) as pipe:
            assert pipe.read() == "started"
        runner.close()
        result = future.result(timeout=10)
    assert result.outcome is Outcome.INTERRUPTED


def test_placeholders_take_whole_elements_and_typed_values_and_other_braces_are_text() -> None:
    argv = ["/bin/tool", "--n", "{n}", "--flag", "{flag}", "{word}", "{print}", "f'{i}' {braces: kept}"]
    args = {"n": 3, "flag": True, "word": "a b", "i": "not a placeholder"}
    slots = placeholders(argv, ["n", "flag", "word"])
    assert slots == ((2, "n"), (4, "flag"), (5, "word"))
    built = build_argv(argv, slots, args)
    assert built == ["/bin/tool", "--n", "3", "--flag", "true", "a b", "{print}", "f'{i}' {braces: kept}"]


def test_a_value_no_argument_can_hold_is_refused(make_runner: MakeRunner) -> None:
    schema = {"type": "object", "properties": {"word": {}}, "required": ["word"]}
    _, runner = make_runner({"cmd": command("print(1)", "{word}", schema=schema)})
    listed = runner.run(job("cmd", "go", {"word": ["a", "b"]}), occurrence())
    assert (listed.outcome, listed.message) == (
        Outcome.REFUSED,
        "arg 'word' is a list; its placeholder takes a string, a number or a boolean",
    )
    nul = runner.run(job("cmd", "go", {"word": "a\0b"}), occurrence())
    assert nul.outcome is Outcome.REFUSED


def test_args_that_no_longer_validate_are_refused(make_runner: MakeRunner) -> None:
    _, runner = make_runner({"cmd": command("print(1)", "{word}", schema=WORDS)})
    result = runner.run(job("cmd", "go", {"n": 1}), occurrence())
    assert result.outcome is Outcome.REFUSED
    assert "'word' is a required property" in result.message
