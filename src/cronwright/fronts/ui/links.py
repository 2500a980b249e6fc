"""The operator's one-time login links, which `cronwright dashboard` prints.

A link carries `EXPIRES.NONCE.MAC`: MAC is HMAC-SHA256, under a key the serving process made at random
when it started, of `EXPIRES.NONCE`. `serve` writes that key (and its URL) to a file only its user can
read, in the data folder (`$XDG_DATA_HOME/cronwright/dashboard/`, named after the store and node.listen):
whoever can read that file is the local operator, as whoever can run the CLI against the store is. The
serving process alone checks a link: it must be within its minute and never used before (the nonces used
are remembered until they expire). A restart makes a new key, so no link outlives the process it was for.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

VALID_FOR = timedelta(minutes=1)


class Links:
    """Makes and redeems one-time links under one key."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key or secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._used: dict[str, int] = {}  # nonce -> expiry (epoch seconds)

    def redeem(self, token: str, now: datetime) -> bool:
        """True once for a genuine token within its minute; False for any other, and ever after."""
        parts = token.split(".")
        if len(parts) != 3 or not parts[0].isdigit() or len(parts[0]) > 12:
            return False
        expires, nonce, mac = parts
        if not hmac.compare_digest(mac.encode(), sign(self.key, expires, nonce).encode()):
            return False
        instant = int(now.timestamp())
        with self._lock:
            for used in [n for n, until in self._used.items() if until < instant]:
                del self._used[used]
            if int(expires) < instant or nonce in self._used:
                return False
            self._used[nonce] = int(expires)
        return True


def sign(key: bytes, expires: str, nonce: str) -> str:
    return hmac.new(key, f"{expires}.{nonce}".encode(), hashlib.sha256).hexdigest()


def issue(key: bytes, now: datetime) -> str:
    """A token valid from `now` for VALID_FOR, under `key`."""
    expires = str(int((now + VALID_FOR).timestamp()))
    nonce = secrets.token_urlsafe(16)
    return f"{expires}.{nonce}.{sign(key, expires, nonce)}"


# --- the key file that `serve` writes and `cronwright dashboard` reads -----------------------------------


@dataclass(frozen=True, slots=True)
class Published:
    url: str
    key: bytes
    pid: int


def data_folder() -> Path:
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "cronwright" / "dashboard"


def key_file(store_url: str, listen: str, folder: Path | None = None) -> Path:
    """Where the serve of this store and listen address keeps its link key."""
    digest = hashlib.sha256(f"{store_url}\n{listen}".encode()).hexdigest()[:20]
    return (folder or data_folder()) / f"{digest}.json"


def publish(path: Path, url: str, key: bytes) -> None:
    """Writes the key file, readable by this user alone (0600 in a 0700 folder), in one rename."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"url": url, "key": key.hex(), "pid": os.getpid()}, out)
    os.replace(temporary, path)


def withdraw(path: Path, key: bytes) -> None:
    """Removes the key file if it is still this key's (a newer serve may have replaced it)."""
    found = read(path)
    if found is not None and found.key == key:
        with contextlib.suppress(OSError):
            path.unlink()


def read(path: Path) -> Published | None:
    try:
        data = json.loads(path.read_text())
        return Published(str(data["url"]), bytes.fromhex(data["key"]), int(data["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
