"""docs/migrating.md's worked examples stay true: each config it shows loads, and the crontab, Kubernetes,
systemd and django-celery-beat examples are exactly what the importers write from the inputs the doc shows."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from cronwright.config.settings import parse
from cronwright.importers import crontab, kubernetes, systemd_timers
from cronwright.importers.toml_text import render
from cronwright.service.import_sources import read_source

DOC = Path(__file__).resolve().parents[2] / "docs" / "migrating.md"
BLOCK = re.compile(r"```(\w*)\n(.*?)\n```", re.DOTALL)


def section(title: str) -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## `{title}`")
    end = text.find("\n## ", start + 1)
    return BLOCK.findall(text[start : end if end > 0 else None])


def test_every_config_the_doc_shows_loads() -> None:
    blocks = [body for kind, body in BLOCK.findall(DOC.read_text(encoding="utf-8")) if kind == "toml"]
    assert len(blocks) == 6
    for body in blocks:
        raw = tomllib.loads(body)
        # A celery target is another issue's kind; its shape is checked by that kind's own loader.
        raw["targets"] = {k: v for k, v in raw.get("targets", {}).items() if v.get("kind") != "celery"}
        raw["seed"] = [seed for seed in raw.get("seed", []) if seed["target"] in raw["targets"]]
        parse(raw)


def test_the_worked_examples_are_what_the_importers_write() -> None:
    (_, table), (_, config), _ = section("crontab")
    assert render(crontab.read(table + "\n", "backup", system=True)) == config + "\n"
    (_, manifest), (_, config), _ = section("kubernetes")
    assert render(kubernetes.read(manifest + "\n", "report.yaml")) == config + "\n"
    (_, units), (_, config), _, _ = section("systemd")
    timer, service = units.removeprefix("# backup.timer\n").split("\n\n# backup.service\n")
    assert render(systemd_timers.read(timer, "backup.timer", service, "backup.service")) == config + "\n"


def test_the_django_celery_beat_example_is_what_the_import_writes(tmp_path: Path) -> None:
    from .test_django_celery_beat import make_schema

    blocks = section("celery")
    (rows,) = [body for kind, body in blocks if kind == "sql"]
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    make_schema(url, rows=rows)
    assert render(read_source("django-celery-beat", url)) == blocks[-2][1] + "\n"
