"""What a process keeps on disk between runs, to start faster: python targets' descriptions (registry.py)
and the worker specs each config file made (`SpecCache`). Only an optimization: a file that is missing,
unreadable, of another version or of the wrong shape reads as empty, and one that cannot be written is let be.

Standard library only: a `tick` reads the spec cache before it has imported the config's models.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cronwright._version import __version__
from cronwright.targets.specs import WorkerSpec

log = logging.getLogger("cronwright.targets")

# A file keeps the entries last put, up to this many: as many configs and targets as one user runs.
ENTRIES = 64


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/cronwright, else ~/.cache/cronwright."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cronwright"


class CacheFile:
    """One JSON file of entries by key. Thread-safe; written whole and replaced atomically, so a process
    reading it while another writes sees the old file or the new one."""

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self._version = version
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        """The entry put under `key`, or None."""
        return self._load().get(key)

    def put(self, key: str, value: Any) -> None:
        """Puts `value` under `key`, the newest entry; the file is not written when it holds it already."""
        with self._lock:
            entries = self._load()
            if key in entries and entries[key] == value and list(entries)[-1] == key:
                return
            entries.pop(key, None)
            entries[key] = value
            kept = dict(list(entries.items())[-ENTRIES:])
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                text = json.dumps({"version": self._version, "entries": kept})
                temporary.write_text(text, encoding="utf-8")
                os.replace(temporary, self.path)
            except OSError as error:
                with contextlib.suppress(OSError):
                    temporary.unlink()
                log.info("cannot write the cache %s: %s", self.path, error)

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != self._version:
            return {}
        entries = data.get("entries")
        return entries if isinstance(entries, dict) else {}


class SpecCache:
    """The worker specs of the python targets each config file made, by the file (its absolute path, size
    and modification time), this interpreter and this cronwright.

    Why: a `tick` reads it before it parses its config, and starts those specs' fork servers at once,
    instead of after pydantic's import and the parse (about 80 ms): its first python runs then find their
    server up. A spec that the config no longer makes (an entry that is stale for a reason the key does not
    see, a path that now resolves elsewhere) only costs a server that no run uses: servers are by spec,
    and it ends with the pool.
    """

    def __init__(self, folder: Path) -> None:
        self._file = CacheFile(folder / "specs.json", version=1)

    def get(self, config: Path) -> list[WorkerSpec]:
        """The specs `config` made when it was last parsed as it is now; none if it was not, or changed."""
        key = _config_key(config)
        entry = self._file.get(key) if key is not None else None
        if not isinstance(entry, list):
            return []
        try:
            return [_spec(row) for row in entry]
        except (TypeError, KeyError):
            return []

    def put(self, config: Path, specs: Sequence[WorkerSpec]) -> None:
        key = _config_key(config)
        if key is not None:
            self._file.put(key, [_row(spec) for spec in specs])


def _row(spec: WorkerSpec) -> dict[str, Any]:
    return {
        "module": spec.module,
        "paths": list(spec.paths),
        "cwd": spec.cwd,
        "env": list(spec.env),
        "python": spec.python,
    }


def _spec(row: dict[str, Any]) -> WorkerSpec:
    return WorkerSpec(
        str(row["module"]), tuple(row["paths"]), str(row["cwd"]), tuple(row["env"]), str(row["python"])
    )


def _config_key(config: Path) -> str | None:
    """What identifies a config file's content cheaply, with what else decides its specs; None if it cannot
    be read."""
    try:
        where = config.absolute()
        info = where.stat()
    except OSError:
        return None
    identity = [str(where), info.st_mtime_ns, info.st_size, sys.executable, __version__]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()
