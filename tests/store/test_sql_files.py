"""The named statements each SQL store ships (sql/<dialect>/queries.sql) are read whole, and used."""

from __future__ import annotations

from pathlib import Path

import pytest

import cronwright.store
from cronwright.store import sql_files

STORE = Path(cronwright.store.__file__).parent
CODE = {
    "sqlite": ("sqlite.py", "sql_reads.py", "sql_outbox.py"),
    "postgres": ("postgres.py", "sql_reads.py", "sql_outbox.py"),
}


@pytest.mark.parametrize("dialect", sorted(CODE))
def test_every_named_statement_is_read_without_its_comments_and_used_by_its_store(dialect: str) -> None:
    queries = sql_files.queries(dialect)
    code = "".join((STORE / name).read_text() for name in CODE[dialect])

    assert queries, "no statements were read"
    for name, statement in queries.items():
        assert statement and "--" not in statement and "\n" not in statement, name
        assert f'"{name}"' in code, f"{dialect} query {name!r} is never used"


def test_the_shared_reads_find_their_statements_in_both_dialects() -> None:
    shared = {"due", "held", "live_job_by_id", "live_job_by_name", "live_jobs_by_ids", "live_ids_among"}
    shared |= {"jobs_with_dedupe_key", "live_jobs", "count_live"}
    for dialect in CODE:
        assert shared <= set(sql_files.queries(dialect)), dialect
