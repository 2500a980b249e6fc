"""django-celery-beat's tables, read with SQL from a database of our own making (the schema below is
written here, modelled on django-celery-beat's models and migrations), as `celery` target actions: crontab
with its zone, interval, clocked, solar refused, a disabled task paused, positional args, and a second
import writing the same config."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cronwright.fronts.cli.group import cli
from cronwright.importers.outcome import Status
from cronwright.importers.toml_text import render
from cronwright.service.import_sources import read_source

from .conftest import loads, refused, seed_of

sqlalchemy = pytest.importorskip("sqlalchemy")

# The five tables as Django creates them (the columns the import reads, and the ones beat keeps for itself);
# the DEFAULTs, which Django keeps in Python, let docs/migrating.md's example name only the columns it sets.
SCHEMA = """
CREATE TABLE django_celery_beat_crontabschedule (
    id integer PRIMARY KEY, minute varchar(240) NOT NULL, hour varchar(96) NOT NULL,
    day_of_week varchar(64) NOT NULL, day_of_month varchar(124) NOT NULL, month_of_year varchar(64) NOT NULL,
    timezone varchar(63) NOT NULL);
CREATE TABLE django_celery_beat_intervalschedule (
    id integer PRIMARY KEY, every integer NOT NULL, period varchar(24) NOT NULL);
CREATE TABLE django_celery_beat_clockedschedule (id integer PRIMARY KEY, clocked_time {time} NOT NULL);
CREATE TABLE django_celery_beat_solarschedule (
    id integer PRIMARY KEY, event varchar(24) NOT NULL, latitude decimal(9, 6) NOT NULL,
    longitude decimal(9, 6) NOT NULL);
CREATE TABLE django_celery_beat_periodictask (
    id integer PRIMARY KEY, name varchar(200) NOT NULL UNIQUE, task varchar(200) NOT NULL,
    args text NOT NULL DEFAULT '[]', kwargs text NOT NULL DEFAULT '{{}}', queue varchar(200),
    exchange varchar(200), routing_key varchar(200), expires {time}, enabled boolean NOT NULL DEFAULT true,
    last_run_at {time}, total_run_count integer NOT NULL DEFAULT 0,
    date_changed {time} NOT NULL DEFAULT CURRENT_TIMESTAMP, description text NOT NULL DEFAULT '',
    crontab_id integer REFERENCES django_celery_beat_crontabschedule (id),
    interval_id integer REFERENCES django_celery_beat_intervalschedule (id),
    solar_id integer REFERENCES django_celery_beat_solarschedule (id),
    one_off boolean NOT NULL DEFAULT false, start_time {time}, priority integer,
    headers text NOT NULL DEFAULT '{{}}',
    clocked_id integer REFERENCES django_celery_beat_clockedschedule (id), expire_seconds integer);
"""

SCHEDULES = [
    "INSERT INTO django_celery_beat_crontabschedule VALUES (1, '*/15', '8-18', 'mon-fri', '*', '*', "
    "'Europe/Berlin')",
    "INSERT INTO django_celery_beat_crontabschedule VALUES (2, '0', '4', '*', '*', '*', 'UTC')",
    "INSERT INTO django_celery_beat_crontabschedule VALUES (3, '0', '0', 'mon', '1', '*', 'UTC')",
    "INSERT INTO django_celery_beat_intervalschedule VALUES (1, 6, 'hours')",
    "INSERT INTO django_celery_beat_intervalschedule VALUES (2, 30, 'seconds')",
    "INSERT INTO django_celery_beat_clockedschedule VALUES (1, '2026-12-24 17:00:00+00:00')",
    "INSERT INTO django_celery_beat_solarschedule VALUES (1, 'sunrise', 52.52, 13.405)",
]


def task(id_: int, name: str, task: str, **columns: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": id_, "name": name, "task": task, "args": "[]", "kwargs": "{}", "queue": None, "exchange": None,
        "routing_key": None, "expires": None, "enabled": True, "last_run_at": None, "total_run_count": 0,
        "date_changed": datetime.fromisoformat("2026-12-01T09:00:00+00:00"), "description": "",
        "crontab_id": None, "interval_id": None, "solar_id": None, "one_off": False, "start_time": None,
        "priority": None, "headers": "{}", "clocked_id": None, "expire_seconds": None,
    }  # fmt: skip
    return {**row, **columns}


TASKS = [
    task(1, "refresh", "proj.tasks.refresh", crontab_id=1, args='["eu", 3]', kwargs='{"full": true}',
         queue="reports", priority=5),
    task(2, "celery.backend_cleanup", "celery.backend_cleanup", crontab_id=2,
         expires=datetime.fromisoformat("2027-06-30T00:00:00+00:00"), expire_seconds=43200),
    task(3, "cleanup", "proj.tasks.cleanup", interval_id=1, enabled=False),
    task(4, "poll", "proj.tasks.poll", interval_id=2),
    task(5, "christmas", "proj.tasks.greet", clocked_id=1, one_off=True),
    task(6, "lights", "proj.tasks.lights", solar_id=1),
    task(7, "odd", "proj.tasks.odd", crontab_id=3),
    task(8, "bad-args", "proj.tasks.odd", interval_id=1, args='{"not": "a list"}'),
]  # fmt: skip


def make_schema(url: str, time_type: str = "datetime", rows: str = "") -> None:
    """The tables at `url`, and the rows of `rows` (SQL statements separated by `;`)."""
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as connection:
        for statement in (SCHEMA.format(time=time_type) + rows).split(";"):
            if statement.strip():
                connection.execute(sqlalchemy.text(statement))
    engine.dispose()


def make_tables(url: str, time_type: str) -> None:
    make_schema(url, time_type)
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as connection:
        for statement in SCHEDULES:
            connection.execute(sqlalchemy.text(statement))
        columns = list(TASKS[0])
        insert = (
            f"INSERT INTO django_celery_beat_periodictask ({', '.join(columns)}) "
            f"VALUES ({', '.join(':' + column for column in columns)})"
        )
        connection.execute(sqlalchemy.text(insert), TASKS)
    engine.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'django.sqlite3'}"
    make_tables(url, "datetime")
    return url


def check_mapping(url: str) -> None:
    batch = read_source("django-celery-beat", url)
    entries = {entry.where.rsplit(" ", 1)[1]: entry for entry in batch.entries}
    assert [entry.where.split(" ")[0] for entry in batch.entries] == ["django_celery_beat_periodictask"] * 8

    assert entries["refresh"].status is Status.MAPPED
    assert seed_of(entries["refresh"]) == {
        "dedupe_key": "celery:refresh", "name": "refresh", "target": "celery", "action": "refresh",
        "schedule": {"cron": "*/15 8-18 * * MON-FRI", "tz": "Europe/Berlin"},
        "args": {"arg0": "eu", "arg1": 3, "full": True},
    }  # fmt: skip
    assert batch.targets["celery"]["actions"]["refresh"] == {
        "task": "proj.tasks.refresh", "queue": "reports", "priority": 5, "positional": ["arg0", "arg1"],
        "args_schema": {"type": "object"},
    }  # fmt: skip

    # Celery's built-in cleanup task is a task like any other; its expires bounds the seed's lifetime.
    cleanup = entries["celery.backend_cleanup"]
    assert seed_of(cleanup) == {
        "dedupe_key": "celery:celery.backend_cleanup", "name": "celery-backend_cleanup", "target": "celery",
        "action": "celery-backend_cleanup", "schedule": {"cron": "0 4 * * *", "tz": "UTC"},
        "lifetime": "2027-06-30T00:00:00+00:00",
    }  # fmt: skip
    assert cleanup.notes == (
        "expires becomes the lifetime's end (refused if beyond the node's max_lifetime)",
        "expire_seconds=43200 is not carried (the message expires at due + grace)",
    )
    assert batch.targets["celery"]["actions"]["celery-backend_cleanup"]["task"] == "celery.backend_cleanup"

    # Disabled: mapped, noted, and paused after its create.
    assert seed_of(entries["cleanup"])["schedule"] == {"every": "6h"}
    assert entries["cleanup"].notes == (
        "disabled: `--apply` pauses it after its create; otherwise run `cronwright pause`",
    )
    assert batch.paused == {"celery:cleanup"}

    # Clocked: a one-shot at its instant (one_off is what clocked means: no note of it).
    assert seed_of(entries["christmas"])["run_at"] == "2026-12-24T17:00:00+00:00"
    assert "schedule" not in seed_of(entries["christmas"])
    assert entries["christmas"].status is Status.MAPPED

    where = "django_celery_beat_periodictask "
    assert refused(batch) == {
        where + "poll": "every 30s is below the 60s floor of `every` (node min_period)",
        where + "lights": (
            "solar (sunrise or sunset at a place) has no cron or period form (sunrise at 52.52, 13.405)"
        ),
        where + "odd": "both day_of_month and day_of_week: Celery requires both, cron fires on either",
        where + "bad-args": 'args is JSON, but not a list: \'{"not": "a list"}\'',
    }
    config = loads(batch)
    assert config.targets["celery"].kind == "celery"


def test_the_tables_map_as_a_beat_schedule_does(sqlite_url: str) -> None:
    check_mapping(sqlite_url)


def test_the_tables_map_the_same_from_postgresql() -> None:
    from pg import scratch_schema, with_params

    with scratch_schema() as (url, schema):
        engine = sqlalchemy.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        with engine.begin() as connection:
            connection.execute(sqlalchemy.text(f'CREATE SCHEMA "{schema}"'))
        engine.dispose()
        scoped = with_params(url.replace("postgresql://", "postgresql+psycopg://", 1),
                             options=f"-csearch_path={schema}")  # fmt: skip
        make_tables(scoped, "timestamp with time zone")
        check_mapping(scoped)


def test_a_naive_time_reads_as_utc_and_one_off_start_time_and_exchange_are_noted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'django.sqlite3'}"
    make_tables(url, "datetime")
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sqlalchemy.text(
            "UPDATE django_celery_beat_periodictask SET one_off = 1, exchange = 'jobs', "
            "start_time = '2026-12-01 08:00:00', headers = '{\"x\": 1}' WHERE name = 'refresh'"
        ))  # fmt: skip
    engine.dispose()
    refresh = next(
        entry for entry in read_source("django-celery-beat", url).entries if "refresh" in entry.where
    )
    assert refresh.notes == (
        "one_off: beat sends it once, then disables it; cronwright sends every occurrence",
        "start_time has no zone: read as UTC, as Django stores it under USE_TZ",
        "start_time 2026-12-01T08:00:00+00:00 is not carried: it runs from its create",
        "exchange 'jobs' is not carried (queue and routing_key are)",
        "headers are not carried",
    )


def test_importing_twice_writes_the_same_config(sqlite_url: str, tmp_path: Path) -> None:
    written = []
    for turn in ("first", "second"):
        out = tmp_path / f"{turn}.toml"
        result = CliRunner().invoke(cli, ["import", "django-celery-beat", sqlite_url, "--out", str(out)])
        assert result.exit_code == 0, result.output
        written.append(out.read_text(encoding="utf-8"))
    assert written[0] == written[1] == render(read_source("django-celery-beat", sqlite_url))
    assert 'dedupe_key = "celery:refresh"' in written[0]


def test_a_database_without_the_tables_is_a_config_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    result = CliRunner().invoke(cli, ["import", "django-celery-beat", url])
    assert result.exit_code == 2
    assert "cannot read django-celery-beat's tables" in result.output
