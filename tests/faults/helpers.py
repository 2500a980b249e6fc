"""What the fault tests share: real processes, real files, and reading the store behind the node's back.

Not named `conftest`, so it never shadows tests/conftest.py, which the tests import as `conftest`.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cronwright.core.model import AtSchedule, Job
from cronwright.store.sqlite import SqliteStore
from faketime import faketime_env

TESTS = Path(__file__).resolve().parent.parent
CRONWRIGHT = Path(sys.executable).parent / "cronwright"


def one_shots(
    path: Path,
    count: int,
    due: datetime,
    prefix: str = "shot",
    target: str = "reports",
    action: str = "daily",
) -> list[Job]:
    """Stores `count` one-shots due at `due`, as the service would arm them; returns them with their ids."""
    store = SqliteStore(path)
    try:
        return [
            store.insert(
                Job(
                    id=0,
                    name=f"{prefix}-{index:04d}",
                    target=target,
                    action=action,
                    args={},
                    schedule=AtSchedule(due),
                    ends_at=due + timedelta(days=1),
                    created_at=due - timedelta(minutes=1),
                    updated_at=due - timedelta(minutes=1),
                    next_run_at=due,
                )
            )
            for index in range(count)
        ]
    finally:
        store.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def siblings(path: Path) -> list[str]:
    """Every file beside `path`, so a test sees a -wal, -shm or -journal that an open left behind."""
    return sorted(entry.name for entry in path.parent.iterdir())


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain SQLite connection to a store, for edits made behind the service's back."""
    with closing(sqlite3.connect(path)) as connection, connection:
        yield connection


def edit_job_data(path: Path, name: str, **schedule: Any) -> None:
    """Rewrites the stored `schedule` of job `name` in its JSON `data`, as a hand edit with sqlite3 would."""
    with raw(path) as connection:
        (data,) = connection.execute("SELECT data FROM jobs WHERE name = ?", (name,)).fetchone()
        record = json.loads(data)
        record["schedule"].update(schedule)
        connection.execute("UPDATE jobs SET data = ? WHERE name = ?", (json.dumps(record), name))


def read_line(process: subprocess.Popen[bytes], timeout: float) -> bytes:
    """The next line a child writes on stdout, waiting for it (never for longer than `timeout`)."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"the child wrote nothing for {timeout} s"
    return process.stdout.readline()


def cli(config: Path, *argv: str, env: dict[str, str] | None = None, faketime: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Runs the real `cronwright` binary, optionally under libfaketime (a FAKETIME spec such as "+2m")."""
    return subprocess.run(
        [str(CRONWRIGHT), "--config", str(config), *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {}), **(faketime_env(faketime) if faketime is not None else {})},
    )


def write_config(folder: Path, db: Path, extra: str = "") -> Path:
    config = folder / "cronwright.toml"
    config.write_text(f'[node]\nzone = "Europe/Berlin"\nstore = "sqlite:///{db}"\n{extra}')
    return config
