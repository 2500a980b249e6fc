"""Secrets: named in config and code, resolved only at run time, and masked wherever their values echo.

A secret's value is looked up by name in the environment of the node first, then in `node.secrets_file`. The
file is a KEY=VALUE file, the format systemd's `EnvironmentFile=`, `docker --env-file` and `.env` share:

    # comment lines and blank lines are ignored
    SMTP_PASSWORD=hunter2
    export HOOK_SECRET="a value with spaces"

Each line is `NAME=VALUE`, optionally after `export `. A value wrapped in matching single or double quotes
loses them; nothing else is interpreted (no escapes, no `$VAR` expansion, and `#` inside a value is part of
it), so a random secret never needs quoting. The file is read again whenever it changes, so rotating a secret
needs no restart.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from cronwright.errors import CronwrightError

if TYPE_CHECKING:
    from cronwright.config.settings import Config

log = logging.getLogger("cronwright.secrets")

MASK = "***"
_LINE = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")


class SecretMissing(CronwrightError):
    """A declared secret has no value, or the secrets file cannot be read. The message names no value."""


class Secrets:
    """Resolves secret names to values at run time. Thread-safe; values are never logged."""

    def __init__(self, file: Path | str | None = None, environ: Mapping[str, str] | None = None) -> None:
        """`file` is the KEY=VALUE file (None: the environment only); `environ` defaults to os.environ."""
        self._file = Path(file) if file is not None else None
        self._environ = environ
        self._lock = threading.Lock()
        self._cached: tuple[tuple[int, int], dict[str, str]] | None = None
        self._warned = False

    @classmethod
    def from_config(cls, config: Config) -> Secrets:
        """The environment, then `node.secrets_file` (relative to the config file's folder)."""
        from cronwright.targets.registry import config_dir

        named = config.node.secrets_file
        return cls(config_dir(config) / named if named else None)

    @property
    def file(self) -> Path | None:
        return self._file

    def resolve(self, names: Iterable[str]) -> dict[str, str]:
        """The value of every name, or SecretMissing naming each name that has none (and where it looked)."""
        names = list(dict.fromkeys(names))
        found = self.known(names, strict=True)
        missing = [name for name in names if name not in found]
        if missing:
            where = "the environment" + (f" or in {self._file}" if self._file else "")
            plural = len(missing) > 1
            raise SecretMissing(
                f"secret{'s' if plural else ''} {', '.join(missing)} not set in {where}; set "
                f"{'them' if plural else 'it'} there (secrets are resolved at run time and never stored)"
            )
        return found

    def known(self, names: Iterable[str], strict: bool = False) -> dict[str, str]:
        """The values of the names that have one. An unreadable file is skipped unless `strict`."""
        environ = self._environ if self._environ is not None else os.environ
        found: dict[str, str] = {}
        pending: list[str] = []
        for name in names:
            if environ.get(name):
                found[name] = environ[name]
            else:
                pending.append(name)
        if pending and self._file is not None:
            try:
                values = self._read_file()
            except SecretMissing:
                if strict:
                    raise
                values = {}
            found.update({name: values[name] for name in pending if values.get(name)})
        return found

    def _read_file(self) -> dict[str, str]:
        assert self._file is not None
        with self._lock:
            try:
                info = self._file.stat()
            except OSError as error:
                raise SecretMissing(f"secrets_file {self._file} cannot be read: {error.strerror}") from None
            key = (info.st_mtime_ns, info.st_size)
            if self._cached is not None and self._cached[0] == key:
                return self._cached[1]
            if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO) and not self._warned:
                self._warned = True
                log.warning("secrets_file %s is readable by other users; chmod 600 it", self._file)
            try:
                text = self._file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise SecretMissing(f"secrets_file {self._file} cannot be read: {error}") from None
            values = parse_env_file(text, str(self._file))
            self._cached = (key, values)
            return values


def parse_env_file(text: str, where: str = "secrets_file") -> dict[str, str]:
    """Reads KEY=VALUE lines (see the module docstring). A bad line is named by number, never quoted."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise SecretMissing(f"{where}, line {number}: expected NAME=VALUE")
        name, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name] = value
    return values


class Masker:
    """Replaces every occurrence of any secret value with `***`.

    It masks each value as written and as it appears inside a JSON string (quotes and backslashes escaped),
    since a python action's return value reaches the message as JSON. Empty values are ignored: they would
    mask everything. Longer values are masked first, so a secret that contains another is hidden whole.
    """

    def __init__(self, values: Iterable[str]) -> None:
        forms: set[str] = set()
        for value in values:
            if value:
                forms.add(value)
                forms.add(_json_escaped(value))
        self._values = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, self._values))) if self._values else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def mask(self, text: str) -> str:
        return text if self._pattern is None else self._pattern.sub(MASK, text)

    def mask_cut_end(self, text: str) -> str:
        """Masks text that was cut after its end: a trailing start of a secret is dropped too."""
        text = self.mask(text)
        cut = max((_dangling_end(text, value) for value in self._values), default=0)
        return text[: len(text) - cut]

    def mask_cut_start(self, text: str) -> str:
        """Masks text that was cut before its start: a leading end of a secret is dropped too."""
        text = self.mask(text)
        cut = max((_dangling_start(text, value) for value in self._values), default=0)
        return text[cut:]


def _dangling_end(text: str, value: str) -> int:
    """The length of the longest end of `text` that is a start (not the whole) of `value`."""
    for size in range(min(len(text), len(value) - 1), 0, -1):
        if text.endswith(value[:size]):
            return size
    return 0


def _dangling_start(text: str, value: str) -> int:
    """The length of the longest start of `text` that is an end (not the whole) of `value`."""
    for size in range(min(len(text), len(value) - 1), 0, -1):
        if text.startswith(value[-size:]):
            return size
    return 0


def _json_escaped(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)[1:-1]
