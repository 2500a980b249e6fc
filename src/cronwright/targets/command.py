"""Command targets: one argv per action, run without a shell, under a deadline.

Placeholders. `{name}` is a placeholder when `name` is a property of the action's args_schema; any other
braces are plain text (a `python -c` script's f-string, an awk program). An argv element that is exactly a
placeholder is replaced by the arg, as one whole element: whatever the value holds (spaces, `;`, `$(...)`,
quotes) reaches the program literally, because no shell ever reads it. A placeholder inside a longer element
(`--dest={dest}`) is refused when the config loads, with the fix (`"--dest", "{dest}"`), so that each element
is either fixed text or exactly one value, and nothing is ever split or joined. A placeholder's property
must be required, so every run has a value, and the program itself (`argv[0]`) cannot be one. A string goes
in as it is, a number as JSON writes it, a boolean as `true` or `false`; any other value is refused at run
time. A value may still begin with `-`, and a program may read it as an option: put `"--"` before positional
placeholders, or give the property a `pattern`.

The run. The environment holds only the variables the target's `env` lists, then its declared secrets, then
CRONWRIGHT_FIRE_ID, CRONWRIGHT_ATTEMPT, CRONWRIGHT_SCHEDULED_FOR and CRONWRIGHT_JOB (which nothing can
override). The envelope arrives as JSON on stdin. The command runs in its own process group: at the deadline
the group gets SIGTERM, then SIGKILL after a grace. Exit 0 is `ok`, a non-zero exit `error`, death by a signal
`crashed`. The last non-empty line of stdout is the message; stdout and stderr are kept, bounded.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cronwright.targets.attempt import OUTPUT_LIMIT, Call, Capture, Finished, Output, kill_group, why_exited
from cronwright.targets.specs import ActionSpec, TargetSpec

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ArgvRefused(ValueError):
    """An arg cannot fill its placeholder (a list, an object, a null, or a NUL byte)."""


def placeholders(argv: Sequence[str], properties: Iterable[str]) -> tuple[tuple[int, str], ...]:
    """Where argv's placeholders are, as (index, name); ValueError for one in argv[0] or inside an element."""
    known = set(properties)
    found = []
    for index, element in enumerate(argv):
        whole = _PLACEHOLDER.fullmatch(element)
        if whole is not None and whole.group(1) in known:
            if index == 0:
                raise ValueError("argv[0] is the program and must be fixed text, not a placeholder")
            found.append((index, whole.group(1)))
        elif whole is None and any(name in known for name in _PLACEHOLDER.findall(element)):
            parts = _PLACEHOLDER.split(element)
            # "--dest={dest}" becomes "--dest", "{dest}": the form option parsers read the same way.
            pieces = [
                part.removesuffix("=") if i % 2 == 0 else "{" + part + "}" for i, part in enumerate(parts)
            ]
            fix = ", ".join(json.dumps(piece) for piece in pieces if piece)
            raise ValueError(
                f"argv element {element!r} embeds a placeholder; a placeholder must be a whole element, "
                f"so split it: {fix}"
            )
    return tuple(found)


def build_argv(argv: Sequence[str], slots: Iterable[tuple[int, str]], args: Mapping[str, Any]) -> list[str]:
    """argv with each placeholder slot replaced by its arg, whole; ArgvRefused if a value cannot be one."""
    built = list(argv)
    for index, name in slots:
        built[index] = _as_element(name, args.get(name))
    return built


def _as_element(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        if "\0" in value:
            raise ArgvRefused(f"arg {name!r} holds a NUL byte, which no program argument can")
        return value
    kind = "missing" if value is None else f"a {type(value).__name__}"
    raise ArgvRefused(f"arg {name!r} is {kind}; its placeholder takes a string, a number or a boolean")


def program_problem(target: TargetSpec, action: ActionSpec) -> str | None:
    """Why `argv[0]` of a command action cannot be started, or None: what `cronwright check` verifies.

    It is found as Popen finds it: a path with a slash from the target's cwd, a bare name on the PATH of
    the command's own environment (the node's PATH only if `env` passes it through, else the default path).
    """
    program = action.argv[0]
    label = f"[targets.{target.name}.actions.{action.name}]"
    if "/" in program:
        found = Path(target.cwd, program)
        if not found.is_file():
            return f"{label}: argv[0] {program!r} does not exist (read from {target.cwd})"
        if not os.access(found, os.X_OK):
            return f"{label}: argv[0] {program!r} is not executable: chmod +x {found}"
        return None
    path = os.environ.get("PATH") if "PATH" in target.env else None
    search = path if path is not None else os.defpath
    if shutil.which(program, path=search) is None:
        return (
            f"{label}: argv[0] {program!r} is not found on the command's PATH ({search}); "
            'give its full path, or pass PATH through with env = ["PATH"]'
        )
    return None


def environment(target: TargetSpec, call: Call) -> dict[str, str]:
    """The command's whole environment: allowlisted variables, declared secrets, then cronwright's own."""
    environ = {name: os.environ[name] for name in target.env if name in os.environ}
    environ.update(call.secrets)
    cron = call.envelope["cron"]
    environ.update(
        CRONWRIGHT_FIRE_ID=str(cron["fire_id"]),
        CRONWRIGHT_ATTEMPT=str(cron["attempt"]),
        CRONWRIGHT_SCHEDULED_FOR=str(cron["scheduled_for"]),
        CRONWRIGHT_NOMINAL=str(cron.get("nominal", cron["scheduled_for"])),
        CRONWRIGHT_JOB=str(call.envelope["schedule"]),
    )
    return environ


class CommandExecutor:
    """Runs command actions. Thread-safe; `close()` kills what runs, and those runs end `interrupted`."""

    def __init__(self, kill_grace: float = 2.0) -> None:
        self.kill_grace = kill_grace
        self._running: set[subprocess.Popen[bytes]] = set()
        self._interrupted: set[int] = set()
        self._lock = threading.Lock()
        self._closed = False

    def run(self, target: TargetSpec, action: ActionSpec, call: Call) -> Finished:
        """Runs one attempt. Never raises: every failure is a Finished."""
        try:
            argv = build_argv(action.argv, action.placeholders, call.envelope["args"])
        except ArgvRefused as refused:
            return Finished("refused", str(refused))
        stdout, stderr = Capture(), Capture()
        try:
            return self._run(argv, target, call, stdout, stderr)
        finally:
            stdout.close()
            stderr.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            running = list(self._running)
            self._interrupted.update(proc.pid for proc in running)
        for proc in running:
            kill_group(proc)

    def _run(
        self, argv: list[str], target: TargetSpec, call: Call, stdout: Capture, stderr: Capture
    ) -> Finished:
        stdin = _stdin_holding(json.dumps(call.envelope, ensure_ascii=False).encode())
        try:
            if self._closed:
                return Finished("interrupted", "the node is shutting down")
            # Started outside the lock, so that many runs start side by side; one that `close` missed
            # while it started is killed here, and ends interrupted.
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=stdin,
                    stdout=stdout.child_fd,
                    stderr=stderr.child_fd,
                    cwd=target.cwd,
                    env=environment(target, call),
                    start_new_session=True,
                )
            except OSError as error:
                return Finished("error", f"cannot start {argv[0]}: {error.strerror or error}")
            with self._lock:
                self._running.add(proc)
                if self._closed:
                    self._interrupted.add(proc.pid)
                    kill_group(proc)
        finally:
            os.close(stdin)
        # Overlap replace stops the whole group, as the deadline does, and the attempt ends cancelled.
        call.stop.hook(lambda: kill_group(proc))
        try:
            late = self._wait(proc, call)
        finally:
            with self._lock:
                self._running.discard(proc)
                interrupted = proc.pid in self._interrupted
                self._interrupted.discard(proc.pid)
        return _finished(proc.returncode, late, interrupted, call.timeout, stdout, stderr)

    def _wait(self, proc: subprocess.Popen[bytes], call: Call) -> bool:
        """Waits for the command; at the deadline stops its whole group. Returns whether it ran late.

        The stop is unhooked before the leader is reaped: after that its pid may be another's."""
        if _exited_within(proc, call.timeout):
            call.stop.hook(None)
            proc.wait()
            return False
        kill_group(proc, signal.SIGTERM)
        _exited_unreaped(proc, self.kill_grace)
        # The leader is not reaped yet, so its pid (the group's id) is still ours: SIGKILL what is left of the
        # group, the leader if it ignored SIGTERM and any child it started, before reaping it.
        kill_group(proc)
        call.stop.hook(None)
        proc.wait()
        return True


def _stdin_holding(data: bytes) -> int:
    """A file holding `data`, read from its start: the command's stdin.

    A file, not a pipe: a command that never reads stdin cannot block the write of the envelope. In memory
    (memfd) where Linux has it: the envelope is small and already in memory, and a temp file on disk cost
    several times as much to make, write and drop, for every run.
    """
    try:
        fd = os.memfd_create("cronwright-envelope", os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # not Linux
        fd, path = tempfile.mkstemp(prefix="cronwright-envelope-")
        os.unlink(path)
    try:
        written = 0
        while written < len(data):
            written += os.pwrite(fd, data[written:], written)
    except OSError:
        os.close(fd)
        raise
    return fd


def _exited_within(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether the process exits within `timeout` seconds (it is not reaped). It sleeps until the exit
    or the deadline, on a pidfd where Linux has them: Popen.wait(timeout) would poll, waking up to 20
    times a second and up to 50 ms late, for every command in flight."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return False
            if poller.poll(min(left, 3600.0) * 1000):
                return True
    finally:
        os.close(pidfd)


def _exited_unreaped(proc: subprocess.Popen[bytes], grace: float) -> None:
    """Waits up to `grace` seconds for the process to exit, without reaping it."""
    end = time.monotonic() + grace
    while time.monotonic() < end:
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
            return
        time.sleep(0.01)


def _finished(
    code: int, late: bool, interrupted: bool, timeout: float, stdout: Capture, stderr: Capture
) -> Finished:
    half = OUTPUT_LIMIT // 2
    out, err = stdout.take(half), stderr.take(half)
    outputs = (out,) if not (err.head or err.tail) else (_labelled(out, "stdout"), _labelled(err, "stderr"))
    if interrupted:
        return Finished("interrupted", "the node stopped while this ran; the command was killed", outputs)
    if late:
        return Finished(
            "timeout", f"ran past its deadline of {timeout:g}s; its process group was stopped", outputs
        )
    if code < 0:
        return Finished("crashed", f"the command {why_exited(code)}", outputs)
    if code == 0:
        return Finished("ok", _last_line(out), outputs)
    said = _last_line(err) or _last_line(out)
    return Finished("error", f"exited with code {code}" + (f": {said}" if said else ""), outputs)


def _labelled(output: Output, label: str) -> Output:
    return Output(output.head, output.tail, output.omitted, label)


def _last_line(output: Output) -> str:
    lines = (output.tail or output.head).splitlines()
    if output.omitted:
        lines = lines[1:]  # the tail's first line was cut in two: it is not a line the command wrote
    lines = [line for line in lines if line.strip()]
    return lines[-1].strip() if lines else ""
