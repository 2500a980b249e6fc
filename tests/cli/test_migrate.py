"""Rolling upgrades (issue 38): every migration is additive, `cronwright migrate --check` says what an
upgrade does and changes nothing, and a node refuses a schema newer than it knows, naming both versions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from psycopg import sql

import cronwright
import pg
from cli.blackbox import Cronwright
from cronwright.store import sql_files
from cronwright.store.postgres import PostgresStore
from cronwright.store.sqlite import APPLICATION_ID
from cronwright.store.upgrades import not_additive

KNOWN = len(sql_files.migrations("sqlite"))


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_every_migration_after_the_first_is_additive(dialect: str) -> None:
    migrations = sql_files.migrations(dialect)
    assert len(migrations) == KNOWN
    for number, script in migrations[1:]:
        assert not_additive(script) == [], f"{dialect} migration {number}"


def test_what_a_previous_release_could_not_keep_up_with_is_found() -> None:
    assert not_additive("ALTER TABLE jobs DROP COLUMN name;") == ["drops"]
    assert not_additive("ALTER TABLE jobs RENAME COLUMN name TO title;") == ["renames"]
    assert not_additive("ALTER TABLE jobs ALTER COLUMN name TYPE integer;") == ["alters a column"]
    assert not_additive("ALTER TABLE jobs ADD COLUMN owner text NOT NULL;") == ["adds a NOT NULL column"]
    assert not_additive("ALTER TABLE jobs ADD COLUMN owner text NOT NULL DEFAULT '';") == []
    assert not_additive("-- DROP TABLE jobs is what we never do\nCREATE INDEX x ON jobs (name);") == []


def older_sqlite_store(path: Path, version: int) -> None:
    """A store as release `version` of the schema left it."""
    with sqlite3.connect(path) as connection:
        for _, script in sql_files.migrations("sqlite")[:version]:
            connection.executescript(script)
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {version}")
    connection.close()


def test_migrate_check_says_what_an_upgrade_does_and_changes_nothing(cw: Cronwright) -> None:
    fresh = cw.ok("migrate", "--check")
    assert f"holds no store yet: the first node creates it at version {KNOWN}" in fresh.stdout
    assert not cw.store.exists()

    older_sqlite_store(cw.store, 2)
    before = cw.store.read_bytes()
    check = cw.ok("migrate", "--check")
    assert f"is at schema version 2; this cronwright ({cronwright.__version__}) writes schema version" in (
        check.stdout
    )
    assert "3: the audit log" in check.stdout and "Each is additive" in check.stdout
    assert cw.store.read_bytes() == before  # --check changed nothing

    done = cw.ok("migrate")
    assert f"migrated from schema version 2 to {KNOWN}" in done.stdout
    assert "nothing to do" in cw.ok("migrate", "--check").stdout


def test_a_node_refuses_a_sqlite_store_newer_than_it_knows_naming_both_versions(cw: Cronwright) -> None:
    older_sqlite_store(cw.store, KNOWN)
    with sqlite3.connect(cw.store) as connection:
        connection.execute("PRAGMA user_version = 99")
    connection.close()
    refused = cw.run("tick")
    assert refused.rc == 2
    assert "schema version 99, newer than this cronwright knows" in refused.stderr
    assert f"({cronwright.__version__}, schema version {KNOWN})" in refused.stderr
    check = cw.run("migrate", "--check")
    assert check.rc == 1 and "schema version 99, newer than this cronwright" in check.stdout


def test_a_node_refuses_a_postgres_schema_newer_than_it_knows_naming_both_versions(tmp_path: Path) -> None:
    with pg.scratch_schema() as (server, schema):
        url = pg.with_params(server, schema=schema)
        PostgresStore(url).close()  # a store at this release's version
        with pg.connect(server) as connection:
            table = sql.Identifier(schema, "schema_migrations")
            connection.execute(sql.SQL("INSERT INTO {} (version) VALUES (99)").format(table))
        cw = Cronwright(tmp_path, store=url)
        refused = cw.run("serve")
        assert refused.rc == 2, refused
        assert "has schema version 99, newer than this cronwright knows" in refused.stderr
        assert f"({cronwright.__version__}, schema version {KNOWN})" in refused.stderr
        check = cw.run("migrate", "--check")
        assert check.rc == 1 and "schema version 99" in check.stdout and "refuses it" in check.stdout
        with pg.connect(server) as connection:  # left untouched
            rows = connection.execute(sql.SQL("SELECT max(version) FROM {}").format(table)).fetchone()
            assert rows == (99,)


def test_migrate_check_on_postgres_lists_the_pending_migrations(tmp_path: Path) -> None:
    with pg.scratch_schema() as (server, schema):
        url = pg.with_params(server, schema=schema)
        cw = Cronwright(tmp_path, store=url)
        assert "holds no store yet" in cw.ok("migrate", "--check").stdout
        with pg.connect(server) as connection, connection.transaction():
            connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            connection.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
            for number, script in sql_files.migrations("postgres")[:2]:
                connection.execute(script.encode())
                connection.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (number,))
        check = cw.ok("migrate", "--check")
        assert f"schema {schema}) is at schema version 2" in check.stdout, check.stdout
        assert "3: the audit log" in check.stdout and "4: the outbox" in check.stdout
        assert f"migrated from schema version 2 to {KNOWN}" in cw.ok("migrate").stdout
        assert "nothing to do" in cw.ok("migrate", "--check").stdout


def test_the_check_never_creates_the_postgres_schema(tmp_path: Path) -> None:
    with pg.scratch_schema() as (server, schema):
        cw = Cronwright(tmp_path, store=pg.with_params(server, schema=schema))
        cw.ok("migrate", "--check")
        with pg.connect(server) as connection:
            found = connection.execute(
                "SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", (schema,)
            ).fetchone()
        assert found == (0,)
