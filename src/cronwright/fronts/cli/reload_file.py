"""Where a serve says how its last reload went, for `cronwright reload` (issue 38).

`serve` writes `$XDG_DATA_HOME/cronwright/serve/<digest of the config file's path>.json`: its pid, and a
count of the reloads it did with the last one's outcome. Found by the config file's path, not by its store
or listen address: the reload that changes either must still find the serve to be refused by it. Readable
by its user alone (0600 in a 0700 folder), written in one rename, as the dashboard's key file is.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cronwright.service.reloading import ReloadReport


@dataclass(frozen=True, slots=True)
class Published:
    pid: int
    seq: int  # how many reloads the serve has done
    ok: bool
    message: str


def folder() -> Path:
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "cronwright" / "serve"


def path_for(config_path: str) -> Path:
    """The file of the serve of this config file (the same file, by whichever path it was named)."""
    digest = hashlib.sha256(str(Path(config_path).resolve()).encode()).hexdigest()[:20]
    return folder() / f"{digest}.json"


def fronts_path_for(config_path: str) -> Path:
    """The file where the fronts' process of that serve says how its part of a reload went."""
    node = path_for(config_path)
    return node.with_name(node.stem + ".fronts.json")


def publish(path: Path, seq: int, report: ReloadReport | None) -> None:
    """Never fails the serve: a folder it cannot write leaves `cronwright reload` without an answer."""
    ok, message = (True, "started") if report is None else (report.ok, report.message)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump({"pid": os.getpid(), "seq": seq, "ok": ok, "message": message}, out)
        os.replace(temporary, path)
    except OSError:
        return


def read(path: Path) -> Published | None:
    try:
        data = json.loads(path.read_text())
        return Published(int(data["pid"]), int(data["seq"]), bool(data["ok"]), str(data["message"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def withdraw(path: Path) -> None:
    """Removes the file if it is still this process's (a newer serve of the config may have replaced it)."""
    found = read(path)
    if found is not None and found.pid == os.getpid():
        with contextlib.suppress(OSError):
            path.unlink()
