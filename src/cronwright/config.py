"""`cronwright.toml` as typed settings. Loaded whole or not at all: any error names the key and the file."""

from __future__ import annotations

import os
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cronwright.errors import ConfigError, Invalid
from cronwright.sources import Source
from cronwright.store.base import LEASE_BEAT, LEASE_TTL
from cronwright.timing.durations import parse_duration
from cronwright.timing.zones import system_zone_name, zone

ENV_VAR = "CRONWRIGHT_CONFIG"
DEFAULT_NAME = "cronwright.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


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
    # Leases over runs in flight (see cronwright.store.base): a node beats every `lease_beat` while it
    # runs something, and one silent for `lease_ttl` is taken for dead. Shorter only for tests.
    lease_beat: Duration = LEASE_BEAT
    lease_ttl: Duration = LEASE_TTL

    @field_validator(
        "max_lifetime",
        "min_period",
        "misfire_grace",
        "shutdown_grace",
        "lease_beat",
        "lease_ttl",
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

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: object) -> timedelta:
        return _duration(value)


class TargetConfig(_Strict):
    kind: Literal["python", "command", "http"]
    # python
    module: str | None = None
    path: list[str] = Field(default_factory=list)
    # command
    cwd: str | None = None
    env: list[str] = Field(default_factory=list)
    # http
    url: str | None = None
    signing_secret: str | None = None
    timeout: Duration = timedelta(minutes=5)
    secrets: list[str] = Field(default_factory=list)
    actions: dict[str, ActionConfig] = Field(default_factory=dict)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: object) -> timedelta:
        return _duration(value)


_Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class SourceConfig(_Strict):
    # One digest, or a list of them so that a token can be rotated without downtime.
    token_sha256: _Sha256 | list[_Sha256] | None = None
    targets: list[str] = Field(default_factory=list)
    max_schedules: int | None = Field(default=None, ge=0)
    min_period: Duration | None = None
    max_lifetime: Duration | None = None
    max_mutations_per_minute: int | None = Field(default=None, ge=1)

    @property
    def tokens(self) -> tuple[str, ...]:
        if self.token_sha256 is None:
            return ()
        return (self.token_sha256,) if isinstance(self.token_sha256, str) else tuple(self.token_sha256)

    @field_validator("min_period", "max_lifetime", mode="before")
    @classmethod
    def _durations(cls, value: object) -> timedelta | None:
        return None if value is None else _duration(value)


class Config(_Strict):
    node: NodeConfig = Field(default_factory=NodeConfig)
    targets: dict[str, TargetConfig] = Field(default_factory=dict)
    sources: dict[str, SourceConfig] = Field(default_factory=dict)
    seed: list[dict[str, Any]] = Field(default_factory=list)
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
        )


def locate(explicit: str | None) -> Path | None:
    """`--config`, else $CRONWRIGHT_CONFIG, else ./cronwright.toml, else none (built-in defaults)."""
    if explicit:
        return Path(explicit)
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    local = Path(DEFAULT_NAME)
    return local if local.exists() else None


def load(explicit: str | None = None) -> Config:
    path = locate(explicit)
    if path is None:
        return Config()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
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
        first = error.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        problem = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        raise ConfigError(f"{where}: {key}: {problem}{more}") from None
    return config
