"""A corrupt or foreign SQLite file where the store should be: a clear error, and the file untouched.

The real binary is run on each file. At boot, `tick` and `list` answer with one error line that names the
file (exit 2), and every file in the folder (the store, and any -wal or -shm of its own) is byte for byte
what it was, with nothing new beside it.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from conftest import at

from .helpers import cli, digest, one_shots, raw, write_config

Maker = Callable[[Path], None]


def random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(1).randbytes(20_000))


def empty_file(path: Path) -> None:
    path.write_bytes(b"")


def text_file(path: Path) -> None:
    path.write_text('[node]\nzone = "Europe/Berlin"\n')  # a config saved under the store's name, say


def foreign_database(path: Path) -> None:
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, what TEXT)")
        connection.execute("INSERT INTO jobs (what) VALUES ('not ours')")


def foreign_database_with_its_own_id(path: Path) -> None:
    foreign_database(path)
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA application_id = 1234")


def a_store(path: Path) -> None:
    one_shots(path, 300, at("2026-03-02T10:00:00+01:00"))


def damaged_schema_page(path: Path) -> None:
    a_store(path)
    damaged = bytearray(path.read_bytes())
    damaged[100:4096] = random.Random(7).randbytes(3996)  # the first page, after the 100-byte header
    path.write_bytes(bytes(damaged))


def truncated_store(path: Path) -> None:
    a_store(path)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # a copy that stopped half-way


def newer_store(path: Path) -> None:
    a_store(path)
    with raw(path) as connection:
        connection.execute("PRAGMA user_version = 999")  # written by a later release


FILES: dict[str, tuple[Maker, str]] = {
    "random bytes": (random_bytes, "not a SQLite database"),
    "an empty file": (empty_file, "not a SQLite database"),
    "a text file": (text_file, "not a SQLite database"),
    "another application's database": (foreign_database, "another application"),
    "a database with another application_id": (foreign_database_with_its_own_id, "application_id 0x4d2"),
    "a store with a damaged first page": (damaged_schema_page, "damaged"),
    "a truncated store": (truncated_store, "damaged"),
    "a store of a later release": (newer_store, "newer than this cronwright knows"),
}


def folder_digest(folder: Path) -> dict[str, str]:
    return {entry.name: digest(entry) for entry in sorted(folder.iterdir())}


@pytest.fixture
def store_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "data"
    folder.mkdir()
    yield folder


@pytest.mark.parametrize("verb", [["tick"], ["list", "--json"]])
@pytest.mark.parametrize("kind", list(FILES))
def test_a_corrupt_or_foreign_file_is_refused_at_boot_and_left_untouched(
    tmp_path: Path, store_folder: Path, kind: str, verb: list[str]
) -> None:
    make, words = FILES[kind]
    db = store_folder / "cronwright.db"
    make(db)
    config = write_config(tmp_path, db)
    before = folder_digest(store_folder)

    done = cli(config, *verb)

    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # one clear line, no traceback
    assert lines[0].startswith("cronwright: error: ")
    assert str(db) in lines[0] and words in lines[0]
    assert folder_digest(store_folder) == before  # byte for byte, and no -wal, -shm or temporary file


def test_a_foreign_database_in_wal_mode_keeps_its_own_wal_untouched(
    tmp_path: Path, store_folder: Path
) -> None:
    db = store_folder / "cronwright.db"
    # Another application has the file open in WAL mode, with committed pages still in its -wal file.
    with closing(sqlite3.connect(db)) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA wal_autocheckpoint = 0")
        with connection:
            connection.execute("CREATE TABLE notes (text TEXT)")
            connection.executemany("INSERT INTO notes VALUES (?)", [("x" * 500,)] * 50)
        before = folder_digest(store_folder)
        assert {"cronwright.db-wal", "cronwright.db-shm"} <= set(before)

        done = cli(write_config(tmp_path, db), "tick")

        assert done.returncode == 2 and "another application" in done.stderr
        assert folder_digest(store_folder) == before  # no checkpoint of someone else's WAL


def test_damage_deep_inside_a_store_is_reported_naming_the_file_without_a_crash(tmp_path: Path) -> None:
    # The header and the schema are sound, so the store opens; a page of job rows is not. Only reading
    # that page can tell, and whoever reads it answers with an error that names the file.
    db = tmp_path / "cronwright.db"
    a_store(db)
    # The job rows' own pages (found with SQLite's dbstat), so the damage hits what every read needs
    # whatever the layout of the indexes around them.
    with raw(db) as connection:
        size = connection.execute("PRAGMA page_size").fetchone()[0]
        leaves = [row[0] for row in connection.execute(
            "SELECT pageno FROM dbstat WHERE name = 'jobs' AND pagetype = 'leaf' ORDER BY pageno"
        )]  # fmt: skip
    assert leaves
    damaged = bytearray(db.read_bytes())
    noise = random.Random(7)
    for page in leaves:
        start = (page - 1) * size
        damaged[start : start + size] = noise.randbytes(size)
    db.write_bytes(bytes(damaged))
    config = write_config(tmp_path, db)

    ticked = cli(config, "tick")
    listed = cli(config, "list", "--json")

    assert ticked.returncode == 2
    assert ticked.stderr.splitlines()[-1].startswith("cronwright: error: ")
    assert listed.returncode == 1  # the request was refused, and the reply says why
    reply = json.loads(listed.stdout)
    assert reply["error"] == "store_unavailable"
    assert "damaged" in reply["message"] and "restore it from a backup" in reply["message"]
    for done in (ticked, listed):
        assert str(db) in done.stderr + done.stdout
        assert "Traceback" not in done.stderr
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["cronwright.db", "cronwright.toml"]
