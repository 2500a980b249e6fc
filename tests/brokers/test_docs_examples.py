"""docs/celery.md's config examples are what a user copies: each one is a config cronwright accepts, and its
broker targets build (the brokers themselves are not reached)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from cronwright.config.settings import parse
from cronwright.targets.registry import build_registry

DOC = Path(__file__).resolve().parents[2] / "docs" / "celery.md"


def test_every_toml_example_in_the_celery_doc_is_a_config_cronwright_accepts(tmp_path: Path) -> None:
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 3
    for block in blocks:
        raw = tomllib.loads(block)
        raw.setdefault("node", {})["store"] = "memory:"
        registry = build_registry(parse(raw), cache_dir=tmp_path / "cache", base_dir=tmp_path)
        kinds = {row["kind"] for row in registry.describe()}
        assert kinds <= {"celery", "nats"} and kinds, block
