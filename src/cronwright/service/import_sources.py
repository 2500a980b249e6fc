"""`cronwright import`'s reading half: the input of each format fetched (a file, stdin, a job store's rows,
a Celery app), then handed to its pure mapper in cronwright.importers. Nothing here decides a mapping."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cronwright.errors import ConfigError
from cronwright.importers import (
    apscheduler_jobs,
    celery_beat,
    crontab,
    django_celery_beat,
    kubernetes,
    systemd_timers,
)
from cronwright.importers.outcome import Batch

FORMATS = ("crontab", "kubernetes", "systemd", "apscheduler", "celery", "django-celery-beat")
SYSTEM_TABLES = ("/etc/crontab", "/etc/cron.d/")


def read_source(fmt: str, source: str, system: bool | None = None, table: str = "apscheduler_jobs") -> Batch:
    """The mapping of `source` in format `fmt`; ConfigError (exit 2) when the input cannot be read."""
    readers: dict[str, Callable[[], Batch]] = {
        "crontab": lambda: _crontab(source, system),
        "kubernetes": lambda: kubernetes.read(_text(source), _label(source)),
        "systemd": lambda: _systemd(source),
        "apscheduler": lambda: apscheduler_jobs.read(_job_rows(source, table), table),
        "celery": lambda: _celery(source),
        "django-celery-beat": lambda: django_celery_beat.read(_periodic_tasks(source)),
    }
    return readers[fmt]()


def _label(source: str) -> str:
    return "-" if source == "-" else Path(source).name


def _text(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {source}: {error}") from error


def _crontab(source: str, system: bool | None) -> Batch:
    if system is None:
        resolved = str(Path(source).absolute()) if source != "-" else ""
        system = resolved == SYSTEM_TABLES[0] or resolved.startswith(SYSTEM_TABLES[1])
    return crontab.read(_text(source), _label(source), system)


def _systemd(source: str) -> Batch:
    timer = Path(source)
    text = _text(source)
    from cronwright.importers.unit_files import parse_unit

    unit = (parse_unit(text).get("Timer", {}).get("Unit") or [timer.stem + ".service"])[-1]
    service = timer.with_name(unit)
    service_text = service.read_text(encoding="utf-8") if service.is_file() else None
    return systemd_timers.read(text, timer.name, service_text, unit)


def _sqlalchemy(what: str) -> Any:
    # Imported here only: `tick` and the other verbs never load it (tests/cli/test_tick_imports.py).
    try:
        import sqlalchemy
    except ImportError as error:
        raise ConfigError(f"reading {what} needs SQLAlchemy: pip install sqlalchemy") from error
    return sqlalchemy


def _job_rows(url: str, table: str) -> list[tuple[str, bytes]]:
    """(id, job_state) of every row of APScheduler 3's job table, read with SQL (SQLAlchemy's URL forms)."""
    sqlalchemy = _sqlalchemy("an APScheduler job store")
    jobs = sqlalchemy.table(table, sqlalchemy.column("id"), sqlalchemy.column("job_state"))
    rows = _select(
        url, sqlalchemy.select(jobs.c.id, jobs.c.job_state).order_by(jobs.c.id), f"the job table {table!r}"
    )
    return [(str(job_id), bytes(state)) for job_id, state in rows]


def _select(url: str, query: Any, what: str) -> list[Any]:
    """The rows of one query on the database at `url`; its connections closed whatever happens."""
    sqlalchemy = _sqlalchemy(what)
    try:
        engine = sqlalchemy.create_engine(url)
        try:
            with engine.connect() as connection:
                return list(connection.execute(query))
        finally:
            engine.dispose()
    except sqlalchemy.exc.SQLAlchemyError as error:
        raise ConfigError(f"cannot read {what}: {error.__class__.__name__}: {error}") from error


# Every periodic task with its schedule's columns; the names are django-celery-beat's (its models.py and
# migrations), none comes from the caller.
_PERIODIC_TASKS = """
SELECT t.name, t.task, t.args, t.kwargs, t.queue, t.exchange, t.routing_key, t.headers, t.priority,
       t.expires, t.expire_seconds, t.one_off, t.start_time, t.enabled,
       t.crontab_id, c.minute, c.hour, c.day_of_month, c.month_of_year, c.day_of_week, c.timezone,
       t.interval_id, i.every, i.period, t.clocked_id, k.clocked_time,
       t.solar_id, s.event, s.latitude, s.longitude
FROM django_celery_beat_periodictask t
LEFT JOIN django_celery_beat_crontabschedule c ON c.id = t.crontab_id
LEFT JOIN django_celery_beat_intervalschedule i ON i.id = t.interval_id
LEFT JOIN django_celery_beat_clockedschedule k ON k.id = t.clocked_id
LEFT JOIN django_celery_beat_solarschedule s ON s.id = t.solar_id
ORDER BY t.name
"""


def _periodic_tasks(url: str) -> list[dict[str, Any]]:
    """django-celery-beat's periodic tasks, each with its schedule's columns, read with SQL from the Django
    database at `url` (SQLAlchemy's URL forms; on PostgreSQL, a schema by `?options=-csearch_path=NAME`)."""
    sqlalchemy = _sqlalchemy("django-celery-beat's tables")
    rows = _select(url, sqlalchemy.text(_PERIODIC_TASKS), "django-celery-beat's tables")
    return [dict(row._mapping) for row in rows]


def _celery(source: str) -> Batch:
    """`module:attr`: a Celery app (its conf's beat_schedule and timezone) or a beat_schedule dict, imported
    as the user's own code would be, from the working folder."""
    module_name, _, attr = source.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"celery takes MODULE:ATTR (a Celery app or a beat_schedule dict), not {source!r}")
    sys.path.insert(0, str(Path.cwd()))
    try:
        found: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"cannot load {source}: {error}") from error
    conf = getattr(found, "conf", None)
    if conf is None:
        return celery_beat.read(found, "UTC", source)
    from cronwright.timing.zones import system_zone_name

    # Celery's rule: `timezone` if set, else UTC with enable_utc (the default), else the host's zone.
    zone = conf.timezone or ("UTC" if conf.enable_utc else system_zone_name())
    return celery_beat.read(conf.beat_schedule or {}, str(zone), source)
