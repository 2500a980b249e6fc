"""`cronwright import`'s reading half: the input of each format fetched (a file, stdin, a job store's rows,
a Celery app), then handed to its pure mapper in cronwright.importers. Nothing here decides a mapping."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cronwright.errors import ConfigError
from cronwright.importers import apscheduler_jobs, celery_beat, crontab, kubernetes, systemd_timers
from cronwright.importers.outcome import Batch

FORMATS = ("crontab", "kubernetes", "systemd", "apscheduler", "celery")
SYSTEM_TABLES = ("/etc/crontab", "/etc/cron.d/")


def read_source(fmt: str, source: str, system: bool | None = None, table: str = "apscheduler_jobs") -> Batch:
    """The mapping of `source` in format `fmt`; ConfigError (exit 2) when the input cannot be read."""
    readers: dict[str, Callable[[], Batch]] = {
        "crontab": lambda: _crontab(source, system),
        "kubernetes": lambda: kubernetes.read(_text(source), _label(source)),
        "systemd": lambda: _systemd(source),
        "apscheduler": lambda: apscheduler_jobs.read(_job_rows(source, table), table),
        "celery": lambda: _celery(source),
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


def _job_rows(url: str, table: str) -> list[tuple[str, bytes]]:
    """(id, job_state) of every row of APScheduler 3's job table, read with SQL (SQLAlchemy's URL forms)."""
    try:
        import sqlalchemy
    except ImportError as error:
        raise ConfigError(
            "reading an APScheduler job store needs SQLAlchemy: pip install sqlalchemy"
        ) from error
    try:
        engine = sqlalchemy.create_engine(url)
        jobs = sqlalchemy.table(table, sqlalchemy.column("id"), sqlalchemy.column("job_state"))
        with engine.connect() as connection:
            rows = connection.execute(sqlalchemy.select(jobs.c.id, jobs.c.job_state).order_by(jobs.c.id))
            found = [(str(job_id), bytes(state)) for job_id, state in rows]
        engine.dispose()
    except sqlalchemy.exc.SQLAlchemyError as error:
        raise ConfigError(
            f"cannot read the job table {table!r}: {error.__class__.__name__}: {error}"
        ) from error
    return found


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
