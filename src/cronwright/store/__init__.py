"""Stores: the Store the node writes with, the Backend protocol (both `Storage`, store/base.py), the
`WriteSet` a save writes, its backends, and `open_store` to pick a backend from the config's URL."""

from __future__ import annotations

from pathlib import Path

from cronwright.errors import ConfigError
from cronwright.store.base import Backend, Saved, Storage, Store, Write, WriteSet
from cronwright.store.memory import MemoryStore
from cronwright.store.resilient import ResilientStore
from cronwright.store.sqlite import SqliteStore

__all__ = [
    "Backend",
    "MemoryStore",
    "ResilientStore",
    "Saved",
    "SqliteStore",
    "Storage",
    "Store",
    "Write",
    "WriteSet",
    "open_store",
]

_FORMS = (
    "use 'memory:', 'sqlite:///relative/path.db', 'sqlite:////absolute/path.db'"
    " or 'postgresql://user@host:5432/database[?schema=NAME]'"
)


def open_store(url: str, run_history: int = 100, first_writer: bool = False) -> Backend:
    """The store that `url` names. A URL that names none is a ConfigError saying which forms work.
    `first_writer` for a firing node's store: on SQLite its writes go before any caller's write that has
    not begun (store/turnstile.py); PostgreSQL locks rows, not the whole store, and needs no such order.

    The URL is never echoed whole: a database URL may carry a password.
    """
    if url == "memory:":
        return MemoryStore(run_history)
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme in ("postgresql", "postgres"):
        return _postgres(url, run_history)
    if scheme == "sqlite":
        return SqliteStore(_sqlite_path(url), run_history, first_writer=first_writer)
    shown = f"a URL with scheme '{scheme}'" if scheme else f"'{url}'"
    raise ConfigError(f"the store {shown} is not understood; {_FORMS}")


def _postgres(url: str, run_history: int) -> Backend:
    # Imported here: psycopg is the optional `postgres` extra, which SQLite users need not install.
    try:
        from cronwright.store.postgres import PostgresStore
    except ImportError as error:
        raise ConfigError(
            f"the PostgreSQL store needs psycopg ({error.name} is missing): "
            "pip install 'cronwright[postgres]'"
        ) from None
    return PostgresStore(url, run_history)


def sqlite_file(url: str) -> Path | None:
    """The database file a `sqlite:` store URL names; None for a URL of another kind."""
    return _sqlite_path(url) if url.split(":", 1)[0].lower() == "sqlite" else None


def _sqlite_path(url: str) -> Path:
    # "sqlite:///" then the path: relative to the working folder, or absolute when it starts with "/".
    prefix = "sqlite:///"
    path = url[len(prefix) :] if url.startswith(prefix) else ""
    if not path or path.endswith("/"):
        raise ConfigError(f"the store '{url}' names no database file; {_FORMS}")
    if "?" in path or "#" in path:
        raise ConfigError(f"the store '{url}' has options, which SQLite stores do not take; {_FORMS}")
    return Path(path).expanduser()
