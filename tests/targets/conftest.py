"""Fixtures for target tests: real modules and scripts in tmp_path, a real registry, pool and runner."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronwright.config.settings import Config, parse
from cronwright.core.model import EverySchedule, Job, Occurrence
from cronwright.targets.executor import TargetRunner
from cronwright.targets.pool import Pool
from cronwright.targets.registry import Registry, build_registry
from cronwright.targets.secrets import Secrets

PYTHON = sys.executable
T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def write_module(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def config(targets: dict[str, Any], **node: Any) -> Config:
    return parse({"node": {"zone": "Europe/Berlin", **node}, "targets": targets})


def job(target: str, action: str, args: dict[str, Any] | None = None, name: str = "job") -> Job:
    return Job(
        7,
        name,
        target,
        action,
        args or {},
        EverySchedule(timedelta(minutes=1)),
        T0 + timedelta(days=9),
        T0,
        T0,
    )


def occurrence(attempt: int = 1, fire_id: str = "fire-1") -> Occurrence:
    return Occurrence(7, fire_id, T0, attempt, T0 + timedelta(seconds=1))


MakeRunner = Callable[..., tuple[Registry, TargetRunner]]


@pytest.fixture
def make_runner(tmp_path: Path) -> Iterator[MakeRunner]:
    """Builds a registry (relative paths read from tmp_path) and a runner over it; closes every runner."""
    made: list[TargetRunner] = []

    def make(
        targets: dict[str, Any], secrets: Secrets | None = None, pool: Pool | None = None, **options: Any
    ) -> tuple[Registry, TargetRunner]:
        registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
        options.setdefault("zone", ZoneInfo("Europe/Berlin"))
        runner = TargetRunner(registry, secrets or Secrets(), pool=pool or Pool(), **options)
        made.append(runner)
        return registry, runner

    yield make
    for runner in made:
        runner.close()
