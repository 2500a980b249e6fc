"""Helpers for the black-box tests: a config in tmp_path, the real `cronwright` binary run as a subprocess
(under faketime when a test gives the instant), and the files the test commands write.

Every command target runs /bin/sh as its program (cronwright itself never uses a shell). The environment of
a command holds only cronwright's own variables, so the commands run on the real clock: faketime's
LD_PRELOAD does not reach them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import queue
import re
import shlex
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from faketime import faketime_env, needs_faketime

__all__ = ["Cronwright", "Result", "alive", "children", "descendants", "needs_faketime", "utc", "wait_for"]

CRONWRIGHT = Path(sys.executable).with_name("cronwright")
SITE = Path(__file__).parent / "faketime_site"
TIMEOUT = 60.0  # seconds any one command may take before the test fails (a hang, not slowness)


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        """stdout as exactly one JSON object (the protocol reply), and nothing else."""
        lines = self.stdout.splitlines()
        assert len(lines) == 1, f"expected one line of JSON from {self.args}, got {self.stdout!r}"
        reply = json.loads(lines[0])
        assert isinstance(reply, dict)
        return reply


def utc(instant: str) -> datetime:
    """An ISO-8601 instant with its offset, as UTC."""
    parsed = datetime.fromisoformat(instant)
    assert parsed.tzinfo is not None, "give instants with their offset"
    return parsed.astimezone(UTC)


def faketime_spec(instant: datetime) -> str:
    """libfaketime's "start at" form: the clock starts at `instant` (read in UTC: TZ=UTC) and then runs."""
    return "@" + instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


class Cronwright:
    """One node's world in a folder: its config, its SQLite store, and the files its commands write."""

    def __init__(self, folder: Path, **node: Any) -> None:
        self.folder = folder
        self.config = folder / "cronwright.toml"
        self.store = folder / "cw.db"
        self.log = folder / "fires.log"  # "FIRE_ID ATTEMPT" per run of sh.log, sh.fail and sh.slow
        self.started = folder / "slow.started"  # sh.slow writes its fire_id here as it starts
        self.release = folder / "slow.release"  # ... and waits (at most 30 s) until this file exists
        settings = {
            "zone": "Europe/Berlin",
            "store": f"sqlite:///{self.store}",
            "listen": "127.0.0.1:0",
            **node,
        }
        log, started, release = (shlex.quote(str(path)) for path in (self.log, self.started, self.release))
        record = f'echo "$CRONWRIGHT_FIRE_ID $CRONWRIGHT_ATTEMPT" >> {log}'
        actions = {
            "log": _sh(record),
            "fail": _sh(f"{record}; echo failing on purpose; exit 1"),
            "slow": _sh(
                f'echo "$CRONWRIGHT_FIRE_ID" >> {started}; i=0; '
                f"while [ ! -e {release} ] && [ $i -lt 600 ]; do /bin/sleep 0.05; i=$((i+1)); done; "
                f"{record}"
            ),
        }
        lines = ["[node]", *(f"{key} = {_toml(value)}" for key, value in settings.items())]
        lines += ["", "[targets.sh]", 'kind = "command"']
        for action, argv in actions.items():
            lines += ["", f"[targets.sh.actions.{action}]", f"argv = {_toml(argv)}", 'timeout = "1m"']
        self.config.write_text("\n".join(lines) + "\n", encoding="utf-8")

    # --- running the binary ----------------------------------------------------------------------

    def command(self, *args: str, at: str | None = None) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that run `cronwright --config ... ARGS`, at the instant `at` if given."""
        argv = [str(CRONWRIGHT), "--config", str(self.config), *args]
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("FAKETIME") and key != "LD_PRELOAD"
        }
        env.pop("CRONWRIGHT_CONFIG", None)
        env.pop("COLUMNS", None)  # `list` fits $COLUMNS: the tests that need a width give it themselves
        if at is not None:
            env.update(
                faketime_env(faketime_spec(utc(at))),
                TZ="UTC",
                FAKETIME_DONT_FAKE_MONOTONIC="1",
                PYTHONPATH=os.pathsep.join(filter(None, [str(SITE), env.get("PYTHONPATH")])),
            )
        return argv, env

    def run(self, *args: str, at: str | None = None, stdin: str | None = None) -> Result:
        argv, env = self.command(*args, at=at)
        done = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=self.folder,
            timeout=TIMEOUT,
            check=False,
        )
        return Result(tuple(args), done.returncode, done.stdout, done.stderr)

    def at_terminal(self, *args: str, columns: int = 80, at: str | None = None) -> Result:
        """Runs a verb with its stdout on a real terminal (a pty) `columns` wide, as an operator sees it:
        stdout is what the terminal showed, with the pty's CRLF made LF and colours and styles left out."""
        argv, env = self.command(*args, at=at)
        env["TERM"] = "xterm-256color"
        main, terminal = pty.openpty()
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        chunks: list[bytes] = []
        with tempfile.TemporaryFile() as stderr:
            try:
                with subprocess.Popen(
                    argv, stdin=terminal, stdout=terminal, stderr=stderr, env=env, cwd=self.folder
                ) as process:
                    os.close(terminal)
                    terminal = -1
                    while True:
                        try:
                            chunk = os.read(main, 65536)
                        except OSError:  # EIO: the process ended and the terminal closed
                            break
                        if not chunk:
                            break
                        chunks.append(chunk)
                    rc = process.wait(timeout=TIMEOUT)
            finally:
                os.close(main)
                if terminal >= 0:
                    os.close(terminal)
            stderr.seek(0)
            said = stderr.read().decode("utf-8", "replace")
        shown = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
        return Result(tuple(args), rc, _ANSI.sub("", shown), said)

    def ok(self, *args: str, at: str | None = None) -> Result:
        result = self.run(*args, at=at)
        assert result.rc == 0, result
        return result

    def json(self, *args: str, at: str | None = None, rc: int = 0) -> dict[str, Any]:
        """Runs a verb with --json and returns its reply; the exit status must be `rc`."""
        result = self.run(*args, "--json", at=at)
        assert result.rc == rc, result
        reply = result.json()
        assert reply["ok"] is (rc == 0), reply
        return reply

    def popen(self, *args: str, at: str | None = None) -> subprocess.Popen[str]:
        argv, env = self.command(*args, at=at)
        return subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=self.folder,
        )

    def add_python_target(self, source: str, module: str = "tick_acts") -> None:
        """A python target `py`: `source` as module `module` in this folder, added to the config."""
        (self.folder / f"{module}.py").write_text(source, encoding="utf-8")
        extra = f'\n[targets.py]\nkind = "python"\nmodule = "{module}"\npath = ["{self.folder}"]\n'
        self.config.write_text(self.config.read_text(encoding="utf-8") + extra, encoding="utf-8")

    # --- the verbs the scenarios use most ------------------------------------------------------------

    def add(self, name: str, *options: str, action: str = "log", at: str) -> dict[str, Any]:
        reply = self.json("add", name, "--target", "sh", "--action", action, *options, at=at)
        job = reply["job"]
        assert isinstance(job, dict)
        return job

    def tick(self, at: str) -> dict[str, Any]:
        return self.json("tick", at=at)

    def show(self, name: str, at: str) -> dict[str, Any]:
        return self.json("show", name, at=at)

    # --- what the commands wrote ------------------------------------------------------------------

    def fires(self) -> list[str]:
        """The "FIRE_ID ATTEMPT" lines the commands appended, in order."""
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []


# What a terminal takes as colour and style (CSI sequences) or a link (OSC 8), not as text.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def _toml(value: object) -> str:
    """A TOML value: JSON's strings, numbers and arrays are TOML too."""
    return json.dumps(value)


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Polls a condition on a real subprocess (a file it writes, a line it prints), up to `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def children(pid: int) -> list[int]:
    """The processes `pid` started (its commands, its python workers' fork server), read from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, ended and waiting for its parent to reap it, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def descendants(pid: int) -> list[int]:
    """Its children, theirs, and so on: the python workers are the children of their fork server."""
    found: list[int] = []
    for child in children(pid):
        found.append(child)
        with contextlib.suppress(OSError):  # it ended meanwhile
            found += descendants(child)
    return found


class Lines:
    """Drains a pipe on a thread (so the child never blocks on it) and keeps every line it read."""

    def __init__(self, pipe: IO[str] | None) -> None:
        self.seen: list[str] = []
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[str] | None) -> None:
        assert pipe is not None
        for line in pipe:
            self._queue.put(line)

    def join(self) -> None:
        """Waits for the end of the pipe (the child has exited)."""
        self._thread.join(10)

    def saw(self, text: str) -> bool:
        while not self._queue.empty():
            self.seen.append(self._queue.get())
        return any(text in line for line in self.seen)


@contextmanager
def slow_tick(cw: Cronwright, at: str) -> Iterator[subprocess.Popen[str]]:
    """A `cronwright tick --json` at `at` whose `sh.slow` run has started (it waits for `cw.release`);
    killed after the block if it still runs, so a failing test never leaves it behind."""
    tick = cw.popen("tick", "--json", at=at)
    try:
        wait_for("the tick's slow run to start", cw.started.exists)
        yield tick
    finally:
        if tick.poll() is None:
            tick.kill()
            tick.communicate()


@contextmanager
def serving(cw: Cronwright) -> Iterator[subprocess.Popen[str]]:
    """A real `cronwright serve` of `cw`, listening; stopped with SIGTERM (killed if it lingers) after."""
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            yield serve
        finally:
            if serve.poll() is None:
                serve.send_signal(signal.SIGTERM)
                try:
                    serve.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    serve.kill()
            stderr.join()
