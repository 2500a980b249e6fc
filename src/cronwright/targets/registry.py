"""The target registry: every allowed target.action, with its args schema, timeout and secret names.

Built from `[targets]` at boot, it is the node's Allowlist. Command and http actions come straight from the
config. A python target's actions come from its module, which the node never imports: a one-off worker
imports it and reports the actions as JSON (`worker.describe`). Descriptions are cached on disk, keyed by the
target's settings and checked against the module's files (modification times and sizes), so a boot with
unchanged code does not start a worker at all. When the files change while the node runs, the next `check`
describes the module again, so the schemas and the code the workers run stay in step.

Relative paths in a target (`path`, `cwd`) are read from the directory of the config file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from cronwright._version import __version__
from cronwright.config.settings import ActionConfig, Config, TargetConfig
from cronwright.errors import ConfigError, Invalid, TargetNotAllowed
from cronwright.targets import decorator
from cronwright.targets.allowlist import check_args
from cronwright.targets.cache import CacheFile
from cronwright.targets.cache import cache_dir as default_cache_dir
from cronwright.targets.command import placeholders
from cronwright.targets.plainschema import is_plain_schema
from cronwright.targets.pool import DescribeFailed, describe
from cronwright.targets.specs import (
    BROKER_KINDS,
    ActionSpec,
    Fingerprint,
    Route,
    TargetSpec,
    WorkerSpec,
    fingerprint,
)
from cronwright.timing.durations import parse_duration

log = logging.getLogger("cronwright.targets")

NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")  # no dots: "target.action" must split one way
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
CACHE_VERSION = 1
DESCRIBE_TIMEOUT = 30.0


@dataclass
class _Python:
    """What the registry knows about a python target's module, to notice when it changes."""

    config: TargetConfig
    worker: WorkerSpec
    files: list[str] = field(default_factory=list)
    stamp: Fingerprint = ()
    broken: str | None = None


class Registry:
    """The Allowlist of DESIGN semantic 22, and what the runner needs to reach each target. Thread-safe."""

    def __init__(self, targets: Mapping[str, TargetSpec], cache: DescriptionCache | None = None) -> None:
        self._targets = dict(targets)
        self._python: dict[str, _Python] = {}
        self._cache = cache
        self._lock = threading.Lock()
        # While `one_look` runs on a thread: the python targets whose files that thread has looked at.
        self._looking = threading.local()

    def check(self, target: str, action: str, args: Mapping[str, Any]) -> None:
        """TargetNotAllowed for an unknown target or action; ArgsInvalid (with JSON paths) for bad args."""
        self.checked(target, action, args)

    def checked(self, target: str, action: str, args: Mapping[str, Any]) -> tuple[TargetSpec, ActionSpec]:
        """`check`, answering the target and action as they are now: what a run needs, found with one
        look at a python module's files (each look is a stat per file, on every run)."""
        spec = self.target(target)
        found = _action_of(spec, target, action)
        check_args(target, action, found.args_schema, args)
        return spec, found

    def describe(self) -> list[dict[str, Any]]:
        """Every target (name, kind) with its actions: args schema, timeout, secret names, description."""
        rows = []
        for name in sorted(self._targets):
            try:
                rows.append(self.target(name).row())
            except TargetNotAllowed:
                continue  # its module broke since boot; `check` says why
        return rows

    def target(self, name: str) -> TargetSpec:
        """The target as it is now (a python target's module is described again if it changed on disk)."""
        if name not in self._targets:
            known = ", ".join(sorted(self._targets)) or "none are configured"
            raise TargetNotAllowed(
                f"target {name!r} is not allowed: it is not in [targets] ({known}); see `targets`"
            )
        if name in self._python:
            self._refresh(name)
        return self._targets[name]

    def action(self, target: str, action: str) -> ActionSpec:
        return _action_of(self.target(target), target, action)

    def secret_names(self) -> set[str]:
        """Every secret name any target declares: the runner masks all of them in every run's output."""
        return {name for spec in self._targets.values() for a in spec.actions.values() for name in a.secrets}

    def python_workers(self) -> list[WorkerSpec]:
        return [entry.worker for entry in self._python.values()]

    def stamp(self, target: str) -> Fingerprint | None:
        """The fingerprint of a python target's module files as `checked` (or `target`) last took it: what
        a run that was just checked hands its worker, whose own check of the same files then takes no
        stat of its own. None for any other target."""
        entry = self._python.get(target)
        return None if entry is None else entry.stamp

    @contextlib.contextmanager
    def one_look(self) -> Iterator[None]:
        """While the block runs, this thread looks at each python target's module files once, at the
        first run that needs it, and the runs after it in the block take that look as theirs.

        For a scheduling pass, which starts its runs within a moment of each other: a look is a stat per
        file, and a pass of 16 runs took 16 of them (a tenth of a python firing's cost in the node). A
        module edited during the pass is described again by the next pass's first run, as it is today
        by the next run; a pass is where one run and the next are told apart. Outside a block (a
        `run-now`, a run on a thread of its own) every run looks, as before.
        """
        outer = getattr(self._looking, "names", None)
        self._looking.names = set() if outer is None else outer
        try:
            yield
        finally:
            self._looking.names = outer

    # --- python targets ---------------------------------------------------------------------------

    def _track(
        self, name: str, config: TargetConfig, worker: WorkerSpec, described: Mapping[str, Any]
    ) -> None:
        self._python[name] = _Python(
            config, worker, list(described["files"]), fingerprint(described["files"])
        )

    def _refresh(self, name: str) -> None:
        entry = self._python[name]
        looked: set[str] | None = getattr(self._looking, "names", None)
        if looked is not None and name in looked and entry.broken is None:
            return  # looked at already in this `one_look`, and found unchanged (or described afresh)
        # The common case, the module unchanged, takes no lock: the stat calls release the GIL, and a lock
        # held across them would queue every run's thread behind the one that waits to get the GIL back.
        if entry.broken is None and fingerprint(entry.files) == entry.stamp:
            if looked is not None:
                looked.add(name)
            return
        with self._lock:
            stamp = fingerprint(entry.files)
            if stamp != entry.stamp:
                entry.stamp = stamp
                try:
                    described = _describe(name, entry.worker, self._cache)
                    self._targets[name] = _python_target(name, entry.config, entry.worker, described)
                    entry.files = list(described["files"])
                    entry.stamp = fingerprint(entry.files)
                    entry.broken = None
                except ConfigError as error:
                    entry.broken = str(error)
                    log.warning("%s", error)
            if entry.broken is not None:
                raise TargetNotAllowed(
                    f"target {name!r} cannot be used until its module is fixed: {entry.broken}"
                )
        if looked is not None:
            looked.add(name)


def build_registry(config: Config, cache_dir: Path | None = None, base_dir: Path | None = None) -> Registry:
    """The registry for `config.targets`; ConfigError naming the target (and action) for anything wrong.

    `cache_dir` holds python targets' descriptions (default: $XDG_CACHE_HOME/cronwright); `base_dir` is where
    relative paths start (default: the config file's directory, else the working directory).
    """
    base = base_dir or config_dir(config)
    cache = DescriptionCache(cache_dir or default_cache_dir())
    targets: dict[str, TargetSpec] = {}
    python: dict[str, tuple[TargetConfig, WorkerSpec]] = {}
    for name, target in config.targets.items():
        where = f"[targets.{name}]"
        if not NAME.fullmatch(name):
            raise ConfigError(f"{where}: a target name takes letters, digits, '_' and '-' only (no dots)")
        _check_common(where, target, base)
        if target.kind == "python":
            python[name] = (target, _worker_spec(where, target, base))
        elif target.kind == "command":
            targets[name] = _command_target(name, where, target, base)
        elif target.kind in BROKER_KINDS:
            targets[name] = _broker_target(name, where, target, config.node.misfire_grace)
        else:
            targets[name] = _http_target(name, where, target)
    registry = Registry(targets, cache)
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="cronwright-describe") as pool:
        described = dict(
            zip(python, pool.map(lambda n: _describe(n, python[n][1], cache), python), strict=True)
        )
    for name, (target, worker) in python.items():
        registry._targets[name] = _python_target(name, target, worker, described[name])
        registry._track(name, target, worker, described[name])
    return registry


def worker_specs(config: Config, base_dir: Path | None = None) -> list[WorkerSpec]:
    """How the workers of each python target start, as `build_registry` makes them, without describing
    any module: what a process that boots needs to start their fork servers at once. ConfigError as
    `build_registry` raises it for a bad module or path."""
    base = base_dir or config_dir(config)
    return [
        _worker_spec(f"[targets.{name}]", target, base)
        for name, target in config.targets.items()
        if target.kind == "python"
    ]


def config_dir(config: Config) -> Path:
    """Where relative paths in the config start: the config file's directory, else the working directory."""
    return config.folder


# --- reading each kind of target ------------------------------------------------------------------


def _check_common(where: str, target: TargetConfig, base: Path) -> None:
    for label, names in (("env", target.env), ("secrets", target.secrets)):
        bad = [n for n in names if not ENV_NAME.fullmatch(n)]
        if bad:
            raise ConfigError(f"{where}: {label} {bad[0]!r} is not a variable name (letters, digits and '_')")
    broker = ("module", "cwd", "url", "signing_secret")
    misplaced = {
        "python": ("url", "signing_secret", "broker_secret", "backend_secret"),
        "command": ("module", "url", "signing_secret", "broker_secret", "backend_secret"),
        "http": ("module", "cwd", "broker_secret", "backend_secret"),
        "celery": broker,
        "nats": (*broker, "backend_secret"),
    }[target.kind]
    for key in misplaced:
        if getattr(target, key):
            raise ConfigError(f"{where}: {key} does not apply to a {target.kind} target; remove it")
    if target.kind != "python" and target.path:
        raise ConfigError(f"{where}: path applies to python targets only; remove it")
    if target.cwd is not None and not (base / target.cwd).is_dir():
        raise ConfigError(f"{where}: cwd {target.cwd!r} is not a directory (read from {base})")


def _worker_spec(where: str, target: TargetConfig, base: Path) -> WorkerSpec:
    if not target.module or not MODULE.fullmatch(target.module):
        raise ConfigError(f'{where}: a python target needs module = "name", a dotted Python module name')
    if target.actions:
        raise ConfigError(
            f"{where}: a python target's actions are its @cronwright.action functions; remove [actions] here"
        )
    paths = []
    for entry in target.path:
        resolved = (base / entry).resolve()
        if not resolved.is_dir():
            raise ConfigError(f"{where}: path {entry!r} is not a directory (read from {base})")
        paths.append(str(resolved))
    cwd = str((base / target.cwd).resolve()) if target.cwd else str(base)
    return WorkerSpec(target.module, tuple(paths), cwd, tuple(target.env))


def _python_target(
    name: str, target: TargetConfig, worker: WorkerSpec, described: Mapping[str, Any]
) -> TargetSpec:
    actions = {}
    for entry in described["actions"]:
        where = f"[targets.{name}] action {entry['name']!r} in module {target.module!r}"
        timeout = _timeout(where, entry["timeout"]) if entry["timeout"] else target.timeout
        secrets = tuple(dict.fromkeys([*target.secrets, *entry["secrets"]]))
        schema = _schema(where, entry["args_schema"])
        actions[entry["name"]] = ActionSpec(
            name, entry["name"], "python", schema, timeout, secrets, description=entry["description"]
        )
    return TargetSpec(name, "python", actions, worker=worker, env=tuple(target.env))


def _command_target(name: str, where: str, target: TargetConfig, base: Path) -> TargetSpec:
    if not target.actions:
        raise ConfigError(
            f"{where}: a command target needs at least one [targets.{name}.actions.NAME] with argv"
        )
    actions = {}
    for action_name, action in target.actions.items():
        label = f"[targets.{name}.actions.{action_name}]"
        _check_action_name(label, action_name)
        if not action.argv:
            raise ConfigError(f'{label}: argv is required, e.g. argv = ["/usr/local/bin/backup", "{{dest}}"]')
        schema = _schema(label, action.args_schema)
        try:
            slots = placeholders(action.argv, schema.get("properties", {}))
        except ValueError as error:
            raise ConfigError(f"{label}: {error}") from None
        required = set(schema.get("required", []))
        for _, placeholder in slots:
            if placeholder not in required:
                raise ConfigError(
                    f"{label}: placeholder {{{placeholder}}} must be a required property of args_schema, "
                    f'so that every run has a value for it: add it to "required"'
                )
        actions[action_name] = ActionSpec(
            name,
            action_name,
            "command",
            schema,
            _action_timeout(action, target),
            _secrets(label, target, action),
            tuple(action.argv),
            slots,
        )
    cwd = str((base / target.cwd).resolve()) if target.cwd else str(base)
    return TargetSpec(name, "command", actions, cwd=cwd, env=tuple(target.env))


def _http_target(name: str, where: str, target: TargetConfig) -> TargetSpec:
    if not target.url or not re.match(r"https?://[^/\s]+", target.url):
        raise ConfigError(f'{where}: an http target needs url = "https://..."')
    if not target.signing_secret or not ENV_NAME.fullmatch(target.signing_secret):
        raise ConfigError(
            f'{where}: an http target needs signing_secret = "NAME", the secret whose value signs each body'
        )
    if target.env or target.secrets:
        raise ConfigError(f"{where}: an http target sends only the signed envelope; remove env and secrets")
    if not target.actions:
        raise ConfigError(f"{where}: an http target needs at least one [targets.{name}.actions.NAME]")
    actions = {}
    for action_name, action in target.actions.items():
        label = f"[targets.{name}.actions.{action_name}]"
        _check_action_name(label, action_name)
        if action.argv is not None or action.secrets:
            raise ConfigError(f"{label}: argv and secrets do not apply to an http action; remove them")
        actions[action_name] = ActionSpec(
            name,
            action_name,
            "http",
            _schema(label, action.args_schema),
            _action_timeout(action, target),
            (target.signing_secret,),
        )
    return TargetSpec(name, "http", actions, url=target.url, signing_secret=target.signing_secret)


# The action keys of each kind of broker target; every other action key is refused on it.
_ROUTE_KEYS = {
    "celery": {"task", "queue", "routing_key", "priority", "positional", "result", "args_schema", "timeout"},
    "nats": {"subject", "stream", "args_schema", "timeout"},
}


def _broker_target(name: str, where: str, target: TargetConfig, grace: timedelta) -> TargetSpec:
    """A celery or nats target (docs/celery.md). Its secrets are the broker's (and the result backend's)."""
    kind = target.kind
    for key in ("broker_secret", "backend_secret"):
        value = getattr(target, key)
        if value is not None and not ENV_NAME.fullmatch(value):
            raise ConfigError(f'{where}: {key} names a secret (letters, digits and "_"), not a URL: "NAME"')
    if not target.broker_secret:
        raise ConfigError(f'{where}: a {kind} target needs broker_secret = "NAME", the secret with its URL')
    if target.env or target.secrets:
        raise ConfigError(f"{where}: a {kind} target sends only its message; remove env and secrets")
    if not target.actions:
        raise ConfigError(f"{where}: a {kind} target needs at least one [targets.{name}.actions.NAME]")
    actions = {}
    for action_name, action in target.actions.items():
        label = f"[targets.{name}.actions.{action_name}]"
        _check_action_name(label, action_name)
        wrong = sorted(action.model_fields_set - _ROUTE_KEYS[kind])
        if wrong:
            raise ConfigError(f"{label}: {', '.join(wrong)} does not apply to a {kind} action; remove it")
        schema = _schema(label, action.args_schema)
        route = _route(label, kind, action, schema)
        if route.wait and not target.backend_secret:
            raise ConfigError(
                f'{label}: result = "wait" reads the task\'s outcome from the result backend: set'
                f' backend_secret = "NAME" on [targets.{name}], the secret holding its URL'
            )
        secrets = tuple(s for s in (target.broker_secret, target.backend_secret) if s)
        actions[action_name] = ActionSpec(
            name, action_name, kind, schema, _action_timeout(action, target), secrets, route=route
        )
    return TargetSpec(
        name,
        kind,
        actions,
        broker_secret=target.broker_secret,
        backend_secret=target.backend_secret,
        grace=grace,
    )


def _route(label: str, kind: str, action: ActionConfig, schema: Mapping[str, Any]) -> Route:
    if kind == "nats":
        if not action.subject or not re.fullmatch(r"[^\s*>]+", action.subject):
            raise ConfigError(f'{label}: a nats action needs subject = "a.subject" (no spaces, no wildcards)')
        return Route(subject=action.subject, stream=action.stream)
    if not action.task:
        raise ConfigError(f'{label}: a celery action needs task = "app.tasks.name", the registered task name')
    required = set(schema.get("required", []))
    for arg in action.positional:
        if arg not in required:
            raise ConfigError(
                f"{label}: positional arg {arg!r} must be a required property of args_schema, so that every"
                f' run has a value for it: add it to "required"'
            )
    return Route(
        task=action.task,
        queue=action.queue,
        routing_key=action.routing_key,
        priority=action.priority,
        positional=tuple(action.positional),
        wait=action.result == "wait",
    )


def _check_action_name(label: str, name: str) -> None:
    if not NAME.fullmatch(name):
        raise ConfigError(f"{label}: an action name takes letters, digits, '_' and '-' only (no dots)")


def _action_timeout(action: ActionConfig, target: TargetConfig) -> timedelta:
    # An action's own timeout wins only when it was written: its default must not hide the target's.
    return action.timeout if "timeout" in action.model_fields_set else target.timeout


def _secrets(label: str, target: TargetConfig, action: ActionConfig) -> tuple[str, ...]:
    bad = [n for n in action.secrets if not ENV_NAME.fullmatch(n)]
    if bad:
        raise ConfigError(f"{label}: secret {bad[0]!r} is not a variable name (letters, digits and '_')")
    return tuple(dict.fromkeys([*target.secrets, *action.secrets]))


def _timeout(where: str, text: str) -> timedelta:
    try:
        return parse_duration(text, "timeout")
    except Invalid as error:
        raise ConfigError(f"{where}: {error.message}") from None


def _schema(where: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    # A plain schema (plainschema.py: what the decorator derives, a command's default) is valid as it is:
    # checking it takes no jsonschema, which a boot with only such schemas never imports.
    if not is_plain_schema(schema):
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            raise ConfigError(f"{where}: args_schema is not a valid JSON Schema: {error.message}") from None
    if schema.get("type", "object") != "object":
        raise ConfigError(f'{where}: args_schema must describe an object (args are one): "type" = "object"')
    return dict(schema)


# --- describing python modules, with a cache --------------------------------------------------------


def _describe(name: str, worker: WorkerSpec, cache: DescriptionCache | None) -> dict[str, Any]:
    if cache is not None:
        cached = cache.get(worker)
        if cached is not None:
            return cached
    try:
        described = describe(worker, DESCRIBE_TIMEOUT)
    except DescribeFailed as error:
        raise ConfigError(f"[targets.{name}]: module {worker.module!r} cannot be loaded: {error}") from None
    if cache is not None:
        cache.put(worker, described)
    return described


def _action_of(spec: TargetSpec, target: str, action: str) -> ActionSpec:
    found = spec.actions.get(action)
    if found is None:
        known = ", ".join(sorted(spec.actions)) or "none"
        raise TargetNotAllowed(
            f"{target}.{action} is not allowed: target {target!r} has no action {action!r} "
            f"(its actions: {known}); see `targets`"
        )
    return found


class DescriptionCache:
    """Python targets' descriptions on disk. Only an optimization: any problem reading it means a miss."""

    def __init__(self, folder: Path) -> None:
        self._file = CacheFile(folder / "targets.json", CACHE_VERSION)

    def get(self, worker: WorkerSpec) -> dict[str, Any] | None:
        entry = self._file.get(_key(worker))
        if not isinstance(entry, dict):
            return None
        files = entry.get("files")
        stamp = entry.get("stamp")
        if not isinstance(files, list) or [list(mark) for mark in fingerprint(files)] != stamp:
            return None
        return {"files": files, "actions": entry.get("actions", [])}

    def put(self, worker: WorkerSpec, described: Mapping[str, Any]) -> None:
        stamp = [list(mark) for mark in fingerprint(described["files"])]
        self._file.put(_key(worker), {**described, "stamp": stamp})


def _key(worker: WorkerSpec) -> str:
    # Everything that could change what the module reports, except its files, which are checked separately.
    # The decorator's own file is in it too: it derives the schemas, so a new version of it means new schemas.
    derivation = fingerprint([decorator.__file__])
    identity = [
        __version__,
        derivation,
        worker.python,
        worker.module,
        worker.paths,
        worker.cwd,
        worker.env,
    ]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()
