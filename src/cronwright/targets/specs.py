"""What the registry knows of each allowed target and action, and how to start a python target's worker:
plain values, shared by the registry, the runner and the executors (so that none imports another for them).

Standard library only at its top level: a python target's fork server imports it (forkserver.py), and it
must not import the scheduler's time math.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

# What a worker inherits from the node besides the target's `env` allowlist: enough for Python and programs it
# starts to find themselves, their locale and a temp dir, and nothing that usually holds a secret.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "VIRTUAL_ENV")


Kind = Literal["python", "command", "http", "celery", "nats"]
# The kinds that hand an occurrence to a broker (targets/brokers/): each names its engine module there.
BROKER_KINDS = ("celery", "nats")


@dataclass(frozen=True, slots=True)
class Route:
    """Where a broker action's message goes (docs/celery.md): a celery task, or a nats subject."""

    task: str = ""  # celery
    queue: str | None = None
    routing_key: str | None = None
    priority: int | None = None
    positional: tuple[str, ...] = ()
    wait: bool = False  # result = "wait": the task's own outcome, from the result backend
    subject: str = ""  # nats
    stream: str | None = None

    def row(self) -> dict[str, Any]:
        """What `targets` shows of it: the keys that were given."""
        shown: dict[str, Any] = {"result": "wait" if self.wait else "sent"}
        for key in ("task", "queue", "routing_key", "priority", "subject", "stream"):
            value = getattr(self, key)
            if value not in (None, ""):
                shown[key] = value
        if self.positional:
            shown["positional"] = list(self.positional)
        return shown


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One allowed action. `secrets`: the names the runner resolves for it (http: the signing secret)."""

    target: str
    name: str
    kind: Kind
    args_schema: Mapping[str, Any]
    timeout: timedelta
    secrets: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    placeholders: tuple[tuple[int, str], ...] = ()  # command: (argv index, arg name)
    description: str = ""
    route: Route | None = None  # a broker action's

    def row(self) -> dict[str, Any]:
        from cronwright.timing.durations import format_duration  # here: workers never call it

        row = {
            "action": self.name,
            "args_schema": dict(self.args_schema),
            "timeout": format_duration(self.timeout),
            "secrets": list(self.secrets),
            "description": self.description,
        }
        return row if self.route is None else {**row, "route": self.route.row()}


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """One allowed target: how to reach it, and its actions by name."""

    name: str
    kind: Kind
    actions: Mapping[str, ActionSpec]
    worker: WorkerSpec | None = None  # python
    cwd: str = "."  # command
    env: tuple[str, ...] = ()  # command: the node's variables that pass through
    url: str | None = None  # http
    signing_secret: str | None = None  # http
    broker_secret: str | None = None  # celery, nats: the secret holding the broker's URL
    backend_secret: str | None = None  # celery: the result backend's, for result = "wait"
    # celery, nats: how long after its due instant a message may still be run (node.misfire_grace)
    grace: timedelta = timedelta(seconds=60)

    def row(self) -> dict[str, Any]:
        actions = [self.actions[name].row() for name in sorted(self.actions)]
        return {"target": self.name, "kind": self.kind, "actions": actions}


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """How to start a worker for one python target. Equal specs share workers."""

    module: str
    paths: tuple[str, ...]
    cwd: str
    env: tuple[str, ...] = ()
    python: str = sys.executable

    def argv(self, describe: bool = False) -> list[str]:
        # -P: the worker's cwd is not put on sys.path; only the target's `path` is.
        argv = [self.python, "-P", "-m", "cronwright.targets.worker", *self.worker_args()]
        return [*argv, "--describe"] if describe else argv

    def worker_args(self) -> list[str]:
        """The worker module's own arguments (a fork server's worker gets these, its argv[1:])."""
        args = ["--module", self.module]
        for entry in self.paths:
            args += ["--path", entry]
        return args

    def environ(self) -> dict[str, str]:
        """The node's variables named in BASE_ENV and in the target's `env`; never all of them."""
        environ = {name: os.environ[name] for name in (*BASE_ENV, *self.env) if name in os.environ}
        # The worker must import this very cronwright, installed or not.
        home = str(Path(__file__).resolve().parents[2])
        environ["PYTHONPATH"] = os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH", "")) if p)
        environ["PYTHONIOENCODING"] = "utf-8"
        return environ


# Each file's name, modification time (ns) and size, by name.
Fingerprint = tuple[tuple[str, int, int], ...]


def fingerprint(files: Iterable[str]) -> Fingerprint:
    """What identifies these files' current contents cheaply: their modification times and sizes."""
    marks = []
    for name in sorted(files):
        try:
            info = os.stat(name)
            marks.append((name, info.st_mtime_ns, info.st_size))
        except OSError:
            marks.append((name, -1, -1))
    return tuple(marks)
