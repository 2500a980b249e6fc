"""What an upgrade of a store's schema would do, found out without changing anything (`cronwright migrate
--check`), and the rule that keeps rolling upgrades possible: every migration after the first is additive.

Additive means that code of the previous release keeps working on the migrated schema: a migration adds
tables, columns (with a default, or nullable) and indexes, and may fill a new column; it never drops,
renames or retypes what an older node reads or writes. So, on PostgreSQL, nodes are upgraded one at a
time: the first node of the new release migrates the schema as it boots, and the nodes still running the
previous release go on beside it. A node refuses (with both versions named) a schema newer than it knows,
so an old node that restarts after the migration waits for its own upgrade rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cronwright._version import __version__
from cronwright.errors import ConfigError, StoreError
from cronwright.store import sql_files

# What a migration may not do to a table an older node uses.
_NOT_ADDITIVE = (
    (re.compile(r"\bDROP\s+(TABLE|COLUMN|INDEX|VIEW|TYPE|SCHEMA)\b", re.I), "drops"),
    (re.compile(r"\bRENAME\b", re.I), "renames"),
    (re.compile(r"\bALTER\s+COLUMN\b[^;]*\b(TYPE|SET\s+NOT\s+NULL)\b", re.I), "alters a column"),
    (re.compile(r"\bADD\s+COLUMN\b[^;]*\bNOT\s+NULL\b(?![^;]*\bDEFAULT\b)", re.I), "adds a NOT NULL column"),
    (re.compile(r"\bDELETE\s+FROM\b", re.I), "deletes rows"),
)


def not_additive(script: str) -> list[str]:
    """What in a migration would break a node of the previous release (nothing: an empty list)."""
    body = "\n".join(line.split("--", 1)[0] for line in script.splitlines())
    return [why for pattern, why in _NOT_ADDITIVE if pattern.search(body)]


@dataclass(frozen=True, slots=True)
class Plan:
    where: str  # the store, with any password masked
    stored: int | None  # its schema version; None: no store there yet
    known: int  # the version this cronwright writes
    pending: tuple[tuple[int, str], ...]  # (version, what it adds) of each migration an upgrade applies

    @property
    def newer(self) -> bool:
        return self.stored is not None and self.stored > self.known

    def describe(self) -> str:
        here = f"this cronwright ({__version__}) writes schema version {self.known}"
        if self.stored is None:
            return f"{self.where} holds no store yet: the first node creates it at version {self.known}"
        if self.newer:
            return (
                f"{self.where} has schema version {self.stored}, newer than {here}: it was written by a later"
                f" release, and this one refuses it. Upgrade cronwright on this host to use it"
            )
        if not self.pending:
            return f"{self.where} is at schema version {self.stored}, as {here}: nothing to do"
        steps = "; ".join(f"{number}: {what}" for number, what in self.pending)
        return (
            f"{self.where} is at schema version {self.stored}; {here}, so the first node of this release to"
            f" boot applies {len(self.pending)} migration{'s' if len(self.pending) > 1 else ''} ({steps})."
            " Each is additive: nodes of the previous release that are running keep running beside it; one"
            " restarted after the upgrade refuses the newer schema until it is upgraded too"
        )


def plan(store_url: str) -> Plan:
    """The plan for the store `store_url` names (a `memory:` store has none to upgrade)."""
    scheme = store_url.split(":", 1)[0].lower() if ":" in store_url else ""
    if scheme in ("postgresql", "postgres"):
        dialect, (where, stored) = "postgres", _postgres(store_url)
    elif scheme == "sqlite":
        from cronwright.store import sqlite_file

        path = sqlite_file(store_url)
        assert path is not None
        dialect, where, stored = "sqlite", str(path), _sqlite(path)
    else:
        raise ConfigError(f"the store {store_url.split(':', 1)[0]}: has no schema to migrate")
    migrations = sql_files.migrations(dialect)
    known = len(migrations)
    start = stored or 0
    pending = tuple((number, _summary(script)) for number, script in migrations[start:])
    return Plan(where, stored, known, pending)


def _summary(script: str) -> str:
    """A migration's first comment, past its "Version N to M:" prefix: what it adds, in a few words."""
    lines = [line[2:].strip() for line in script.splitlines() if line.startswith("--")]
    text = " ".join(lines).split(". ")[0]
    return re.sub(r"^Version \d+ to \d+:\s*", "", text).rstrip(".")


def _sqlite(path: Path) -> int | None:
    """The file's user_version, read from its header, without opening it as a database."""
    try:
        with path.open("rb") as file:
            header = file.read(100)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StoreError(f"cannot read {path}: {error}") from error
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise StoreError(f"{path} is not a SQLite database")
    return int.from_bytes(header[60:64], "big", signed=True)


def _postgres(url: str) -> tuple[str, int | None]:
    try:
        import psycopg
        from psycopg import sql

        from cronwright.store.postgres import DEFAULT_SCHEMA, masked, split_url
    except ImportError as error:
        raise ConfigError(
            f"the PostgreSQL store needs psycopg: pip install 'cronwright[postgres]' ({error})"
        ) from None
    conninfo, named = split_url(url)
    schema, where = named or DEFAULT_SCHEMA, masked(url)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as connection:
            found: Any = connection.execute(
                "SELECT EXISTS (SELECT 1 FROM information_schema.tables"
                " WHERE table_schema = %s AND table_name = 'schema_migrations')",
                (schema,),
            ).fetchone()
            if not found or not found[0]:
                return f"{where} (schema {schema})", None
            query = sql.SQL("SELECT coalesce(max(version), 0) FROM {}.schema_migrations")
            row: Any = connection.execute(query.format(sql.Identifier(schema))).fetchone()
    except psycopg.Error as error:
        raise StoreError(
            f"cannot reach the PostgreSQL store {where}: {' '.join(str(error).split())}"
        ) from None
    return f"{where} (schema {schema})", int(row[0]) if row else 0
