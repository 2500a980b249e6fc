"""The schema and numbered migrations each SQL store ships under `sql/<dialect>/`, read once."""

from __future__ import annotations

from functools import cache
from importlib import resources

from cronwright.errors import StoreError


@cache
def schema_sql(dialect: str) -> str:
    """The fresh schema, as in `sql/<dialect>/schema.sql`."""
    folder = resources.files("cronwright.store").joinpath("sql", dialect)
    return folder.joinpath("schema.sql").read_text(encoding="utf-8")


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
