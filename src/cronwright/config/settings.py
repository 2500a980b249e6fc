"""`cronwright.toml` as typed settings. Loaded whole or not at all: any error names the key and the file."""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import tomllib
import types
import typing
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cronwright.config.calendar_tables import CalendarConfig
from cronwright.config.path import locate
from cronwright.core.leases import LEASE_BEAT, LEASE_TTL
from cronwright.core.notifications import Transition
from cronwright.core.sources import Source
from cronwright.errors import ConfigError, Invalid
from cronwright.timing.durations import parse_duration
from cronwright.timing.zones import system_zone_name, zone


class _Strict(BaseModel):
    # defer_build: a model's validator is built when it first validates, not when this module is imported;
    # the nested models are then built once, inside Config's, not also each on its own (~20 ms of CPU at each
    # CLI start, `tick` included).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


def _duration(value: object) -> timedelta:
    if isinstance(value, timedelta):
        return value
    try:
        return parse_duration(value)
    except Invalid as error:
        raise ValueError(error.message) from None


Duration = Annotated[timedelta, Field()]


def default_store() -> str:
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'cronwright' / 'cronwright.db'}"


class NodeConfig(_Strict):
    zone: str = Field(default_factory=system_zone_name)
    store: str = Field(default_factory=default_store)
    max_lifetime: Duration = timedelta(days=90)
    min_period: Duration = timedelta(seconds=60)
    misfire_grace: Duration = timedelta(seconds=60)
    max_concurrency: int = Field(default=16, ge=1, le=1024)
    max_message_bytes: int = Field(default=65536, ge=1024, le=16 * 1024 * 1024)
    run_history: int = Field(default=100, ge=1, le=100_000)
    listen: str = "127.0.0.1:8765"
    shutdown_grace: Duration = timedelta(seconds=30)
    secrets_file: str | None = None
    # Audit entries older than this are dropped (semantic 36).
    audit_retention: Duration = timedelta(days=90)
    # Leases over runs in flight (see cronwright.store.base): a node beats every `lease_beat` while it
    # runs something, and one silent for `lease_ttl` is taken for dead. Shorter only for tests.
    lease_beat: Duration = LEASE_BEAT
    lease_ttl: Duration = LEASE_TTL
    # Per-job Prometheus series (semantic 39) for at most this many jobs; 0 turns them off.
    per_job_metrics: int = Field(default=10_000, ge=0, le=1_000_000)

    @field_validator(
        "max_lifetime",
        "min_period",
        "misfire_grace",
        "shutdown_grace",
        "lease_beat",
        "lease_ttl",
        "audit_retention",
        mode="before",
    )
    @classmethod
    def _durations(cls, value: object) -> timedelta:
        return _duration(value)

    @model_validator(mode="after")
    def _lease(self) -> NodeConfig:
        if self.lease_ttl < 3 * self.lease_beat:
            raise ValueError(
                "lease_ttl must be at least 3 times lease_beat, so that a late beat or two never"
                " makes a live node look dead"
            )
        return self

    @field_validator("zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            return zone(value).key
        except Invalid as error:
            raise ValueError(error.message) from None

    @property
    def tz(self) -> ZoneInfo:
        return zone(self.zone)


class ActionConfig(_Strict):
    argv: list[str] | None = None
    args_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    timeout: Duration = timedelta(minutes=5)
    secrets: list[str] = Field(default_factory=list)
    # broker targets (docs/celery.md): celery's task and routing, nats' subject and stream
    task: str | None = None
    queue: str | None = None
    routing_key: str | None = None
    priority: int | None = Field(default=None, ge=0, le=255)
    positional: list[str] = Field(default_factory=list)
    result: Literal["sent", "wait"] = "sent"
    subject: str | None = None
    stream: str | None = None

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: object) -> timedelta:
        return _duration(value)

    @field_validator("argv", mode="before")
    @classmethod
    def _argv(cls, value: object) -> object:
        if isinstance(value, str):  # a command line, as a shell would take it: say how to write it
            raise ValueError(f"must be a list of strings, one per argument: argv = {_toml_list(value)}")
        return value


def _toml_list(line: str) -> str:
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    return json.dumps(words)


class TargetConfig(_Strict):
    kind: Literal["python", "command", "http", "celery", "nats"]
    # python
    module: str | None = None
    path: list[str] = Field(default_factory=list)
    # command
    cwd: str | None = None
    env: list[str] = Field(default_factory=list)
    # http
    url: str | None = None
    signing_secret: str | None = None
    # broker targets: the names of the secrets holding the broker's URL and (celery, result = "wait") the
    # result backend's, never the URLs themselves (semantic 23)
    broker_secret: str | None = None
    backend_secret: str | None = None
    timeout: Duration = timedelta(minutes=5)
    secrets: list[str] = Field(default_factory=list)
    actions: dict[str, ActionConfig] = Field(default_factory=dict)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: object) -> timedelta:
        return _duration(value)


_Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
_SHA256 = re.compile(r"[0-9a-f]{64}")


class SourceConfig(_Strict):
    # One digest, or a list of them so that a token can be rotated without downtime.
    token_sha256: _Sha256 | list[_Sha256] | None = None
    targets: list[str] = Field(default_factory=list)
    max_schedules: int | None = Field(default=None, ge=0)
    min_period: Duration | None = None
    max_lifetime: Duration | None = None
    max_mutations_per_minute: int | None = Field(default=None, ge=1)
    approval: Literal["operator"] | None = None

    @property
    def tokens(self) -> tuple[str, ...]:
        if self.token_sha256 is None:
            return ()
        return (self.token_sha256,) if isinstance(self.token_sha256, str) else tuple(self.token_sha256)

    @field_validator("token_sha256", mode="before")
    @classmethod
    def _digests(cls, value: object) -> object:
        digests = value if isinstance(value, list) else [value]
        if value is not None and not all(isinstance(d, str) and _SHA256.fullmatch(d) for d in digests):
            raise ValueError(
                "must be the SHA-256 digest of a token (64 lowercase hex digits), or a list of them; "
                "`cronwright token new SOURCE` prints a fresh token and its digest"
            )
        return value

    @field_validator("min_period", "max_lifetime", mode="before")
    @classmethod
    def _durations(cls, value: object) -> timedelta | None:
        return None if value is None else _duration(value)


# --- alerts: [notify.NAME] channels and [[alert]] rules (semantic 38; built by cronwright.notify.setup) ---


class NotifyConfig(_Strict):
    kind: Literal["webhook", "email", "apprise"]
    timeout: Duration = timedelta(seconds=10)
    # webhook (url, signing_secret) and apprise (url and urls, or url_secrets: secrets holding Apprise URLs)
    url: str | None = None
    signing_secret: str | None = None
    urls: list[str] = Field(default_factory=list)
    url_secrets: list[str] = Field(default_factory=list)
    # email; username and password name secrets
    smtp: str | None = None
    sender: str | None = Field(default=None, alias="from")
    to: list[str] = Field(default_factory=list)
    username: str | None = None
    password: str | None = None

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: object) -> timedelta:
        return _duration(value)

    @model_validator(mode="after")
    def _complete(self) -> NotifyConfig:
        if self.kind == "webhook" and not (self.url and self.signing_secret):
            raise ValueError("a webhook channel needs url and signing_secret (the name of a secret)")
        if self.kind == "apprise" and not (self.url or self.urls or self.url_secrets):
            raise ValueError("an apprise channel needs url, urls or url_secrets")
        if self.kind == "email":
            if not (self.smtp and self.sender and self.to):
                raise ValueError("an email channel needs smtp, from and to")
            problem = smtp_url_problem(self.smtp)
            if problem:
                raise ValueError(problem)
        return self


class AlertMatch(_Strict):
    target: str | None = None  # a target.action pattern
    source: str | None = None
    name: str | None = None


class AlertConfig(_Strict):
    on: list[Transition] = Field(min_length=1)
    match: AlertMatch = Field(default_factory=AlertMatch)
    notify: list[str] = Field(min_length=1)


class Config(_Strict):
    node: NodeConfig = Field(default_factory=NodeConfig)
    targets: dict[str, TargetConfig] = Field(default_factory=dict)
    sources: dict[str, SourceConfig] = Field(default_factory=dict)
    seed: list[dict[str, Any]] = Field(default_factory=list)
    notify: dict[str, NotifyConfig] = Field(default_factory=dict)
    alert: list[AlertConfig] = Field(default_factory=list)
    # Named exclusion calendars (semantic 33), built by cronwright.calendars.from_config.
    calendars: dict[str, CalendarConfig] = Field(default_factory=dict)
    path: str | None = None  # the file it was read from (absolute), set by `load`, never by the file

    @property
    def folder(self) -> Path:
        """Where every relative path in the config starts: the config file's folder (DESIGN, config).

        Never the working folder of the process, unless no file was read (the built-in defaults, whose
        store is absolute anyway): an MCP client or a crontab may start cronwright from anywhere.
        """
        if self.path and Path(self.path).is_file():
            return Path(self.path).resolve().parent
        return Path.cwd()

    def beside(self, relative: str) -> Path:
        """A path from the config, read beside the config file; an absolute (or ~) path as it is."""
        return self.folder / Path(relative).expanduser()

    @property
    def store_url(self) -> str:
        """`node.store` with a relative SQLite file read beside the config file: every process started
        with this config, from whatever folder, opens the same database."""
        url, prefix = self.node.store, "sqlite:///"
        file = url[len(prefix) :] if url.startswith(prefix) else ""
        if not file or file.endswith("/"):
            return url  # not a file: memory:, PostgreSQL, or a URL that open_store refuses by its form
        return prefix + str(self.beside(file))

    @model_validator(mode="after")
    def _alert_channels(self) -> Config:
        for index, rule in enumerate(self.alert):
            unknown = [name for name in rule.notify if name not in self.notify]
            if unknown:
                raise ValueError(
                    f"[[alert]] #{index + 1} notifies {', '.join(unknown)}, not a [notify.NAME] channel; "
                    f"configured: {', '.join(self.notify) or 'none'}"
                )
        return self

    @model_validator(mode="after")
    def _seed_keys(self) -> Config:
        # Here, not at the seed's upsert: a typo is told with the file, before the node starts. The keys are
        # checked against SEED_KEYS first: only a seed with a stranger pays for the request models (a tick
        # at every minute of a crontab imports none of them).
        for index, seed in enumerate(self.seed):
            schedule = seed.get("schedule")
            inner = set(schedule) if isinstance(schedule, dict) else set()
            if set(seed) <= SEED_KEYS and inner <= SEED_SCHEDULE_KEYS:
                continue
            from cronwright.declare.job_fields import JobSpec
            from cronwright.declare.refusals import misspelled

            try:
                JobSpec.model_validate(seed)
            except ValidationError as error:
                label = seed_label(index, seed)
                typo = misspelled(error, JobSpec, label)
                if typo is not None:
                    said = typo.message
                    raise ValueError(said if said.startswith(label) else f"{label}: {said}") from None
        return self

    def source(self, name: str) -> Source:
        found = self.sources.get(name)
        if found is None:
            raise ConfigError(
                f"no source named '{name}' in [sources]; configured: {', '.join(self.sources) or 'none'}"
            )
        return Source(
            name,
            tuple(found.targets),
            found.max_schedules,
            found.min_period,
            found.max_lifetime,
            found.tokens,
            max_mutations_per_minute=found.max_mutations_per_minute,
            needs_approval=found.approval == "operator",
        )


def load(explicit: str | None = None) -> Config:
    path = locate(explicit)
    if path is None:
        return Config()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"config file {path} does not exist (`cronwright init` writes a starter one)"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"config file {path} cannot be read: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from error
    # Absolute, so that relative paths in it are read beside it whatever the process does later.
    return parse(raw, str(path.absolute()))


def parse(raw: dict[str, Any], where: str = "config") -> Config:
    try:
        config = Config.model_validate({**raw, "path": where}, strict=False)
    except ValidationError as error:
        raise ConfigError(f"{where}: {_problem(error)}") from None
    return config


def _problem(error: ValidationError) -> str:
    """The first problem, as the file's keys and plain words say it: never pydantic's names of its types
    (a union's branch, `constrained-str`), nor an empty key for a check of the whole file."""
    details = error.errors(include_url=False)
    first = details[0]
    path = _keys_of(first["loc"])
    if first["type"] == "extra_forbidden":
        problem = _unknown_key(first["loc"])
    else:
        # One key may fail once per branch of its union ("a digest, or a list of them"): say each once.
        said = [_words(d["msg"]) for d in details if _keys_of(d["loc"]) == path]
        problem = " or ".join(dict.fromkeys(said))
    others = len({_keys_of(d["loc"]) for d in details} - {path})
    more = f" (and {others} more)" if others else ""
    return f"{'.'.join(path)}: {problem}{more}" if path else f"{problem}{more}"


def _words(message: str) -> str:
    # pydantic puts "Value error, " before the message of a validator's ValueError: the key says enough.
    message = message.removeprefix("Value error, ")
    if message == "Field required":
        return "is required"
    return message.replace("Input should be", "must be", 1).replace("String should", "must", 1)


def _keys_of(loc: tuple[int | str, ...]) -> tuple[str, ...]:
    """The location as the file's keys: without the tags pydantic gives a union's branches
    (`token_sha256.constrained-str`), which name its types, not a key."""
    kind: Any = Config
    keys: list[str] = []
    for part in loc:
        origin = typing.get_origin(kind)
        if origin in (typing.Union, types.UnionType):
            kind = None  # `part` names the branch: no key of the file
            continue
        keys.append(str(part))
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            field = kind.model_fields.get(str(part))
            kind = field.annotation if field is not None else None
        elif origin in (dict, list):
            kind = typing.get_args(kind)[-1]
        else:
            kind = None
    return tuple(keys)


# A seed's keys, and its schedule's: declare.job_fields.JobSpec's fields (tests/cli/test_config_refusals.py
# keeps them equal), written out so that reading a config imports no request model.
SEED_KEYS = frozenset({
    "name", "target", "action", "args", "schedule", "run_at", "lifetime", "misfire", "max_attempts",
    "retry_backoff_ms", "breaker_threshold", "dedupe_key", "once", "origin", "overlap",
})  # fmt: skip
SEED_SCHEDULE_KEYS = frozenset({"cron", "tz", "every", "every_ms", "at", "jitter", "exclude"})


def seed_label(index: int, seed: dict[str, Any]) -> str:
    """A seed as its file shows it: `[[seed]] #2 (nightly)`, by its place and its dedupe_key or name."""
    return f"[[seed]] #{index + 1} ({seed.get('dedupe_key') or seed.get('name') or 'unnamed'})"


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    """The words "unknown key", with the nearest key the table has (`node.stroe`: did you mean store?)."""
    known = _keys_at(Config, loc[:-1])
    meant = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    return f"unknown key; did you mean '{meant[0]}'?" if meant else "unknown key"


def _keys_at(model: type[BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """The keys of the table at `path` inside `model`: through fields, then a dict's key or a list's index
    to the model they hold. Empty where the path leaves the models (a seed's free-form table)."""
    kind: Any = model
    for part in path:
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            field = kind.model_fields.get(str(part))
            if field is None:
                return []
            kind = field.annotation
        elif typing.get_origin(kind) in (dict, list):
            kind = typing.get_args(kind)[-1]  # dict[str, M] and list[M] both hold M last
        else:
            return []
    if not (isinstance(kind, type) and issubclass(kind, BaseModel)):
        return []
    return [field.alias or name for name, field in kind.model_fields.items() if name != "path"]


def smtp_url_problem(url: str) -> str | None:
    """Why `url` is not an smtp:// or smtps:// URL naming a host, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        return "smtp must be smtp://HOST[:PORT] or smtps://HOST[:PORT]"
    if parts.username or parts.password:
        return "smtp must not carry credentials; name username and password as secrets instead"
    return None
