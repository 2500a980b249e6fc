"""The SQL each store ships under `sql/<dialect>/`, read once: the schema, the numbered migrations, and
the named statements (`queries.sql`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType

from cronwright.errors import StoreError


@cache
def schema_sql(dialect: str) -> str:
    """The fresh schema, as in `sql/<dialect>/schema.sql`."""
    folder = resources.files("cronwright.store").joinpath("sql", dialect)
    return folder.joinpath("schema.sql").read_text(encoding="utf-8")


_TABLE = re.compile(r"^CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)", re.MULTILINE)


@cache
def schema_tables(dialect: str) -> frozenset[str]:
    """The tables the fresh schema makes: a store that lacks one of them is damaged, refused at open
    rather than found out by the first statement that needs it."""
    return frozenset(_TABLE.findall(schema_sql(dialect)))


_NAME = re.compile(r"^-- name: ([a-z_]+)\s*$")


@cache
def queries(dialect: str) -> Mapping[str, str]:
    """The named statements of `sql/<dialect>/queries.sql`, by name, each on one line without comments.

    A statement starts at a `-- name: NAME` line and runs to the next one; a name given twice is a
    packaging error.
    """
    folder = resources.files("cronwright.store").joinpath("sql", dialect)
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in folder.joinpath("queries.sql").read_text(encoding="utf-8").splitlines():
        named = _NAME.match(line)
        if named is not None:
            if named.group(1) in found:
                raise StoreError(f"the {dialect} query {named.group(1)!r} is defined twice")
            current = found[named.group(1)] = []
        elif current is not None and line.strip() and not line.lstrip().startswith("--"):
            current.append(line.strip())
    return MappingProxyType({name: " ".join(lines) for name, lines in found.items()})


@cache
def migrations(dialect: str) -> tuple[tuple[int, str], ...]:
    """The numbered migrations as (version, sql), from 1 up, with no gap (a gap is a packaging error)."""
    folder = resources.files("cronwright.store").joinpath("sql", dialect, "migrations")
    found = sorted(
        (int(entry.name.split("_", 1)[0]), entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    )
    numbers = [number for number, _ in found]
    if numbers != list(range(1, len(found) + 1)):
        raise StoreError(f"the {dialect} migrations are not numbered 1..n without gaps: {numbers}")
    return tuple(found)
