"""Shared by the importer tests: the fixtures folder, and a check that an import's config loads."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from cronwright.config.settings import Config, parse
from cronwright.importers.outcome import Batch, Entry, Status
from cronwright.importers.toml_text import render

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def loads(batch: Batch) -> Config:
    """The import's config text, read back by cronwright's own config loader (it must load as written)."""
    raw = tomllib.loads(render(batch))
    config = parse(raw)
    assert [dict(seed) for seed in config.seed] == [dict(seed) for seed in batch.seeds]
    return config


def by_line(batch: Batch) -> dict[str, Entry]:
    return {entry.where: entry for entry in batch.entries}


def seed_of(entry: Entry) -> dict[str, Any]:
    assert entry.seed is not None, entry
    return dict(entry.seed)


def refused(batch: Batch) -> dict[str, str]:
    return {e.where: e.reason for e in batch.entries if e.status is Status.REFUSED}
