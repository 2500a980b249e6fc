"""The docs' console examples run, and print what the docs say they print."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
CRONWRIGHT = Path(sys.executable).parent / "cronwright"
EXAMPLE = re.compile(r" *```console\n *\$ (cronwright [^\n]+)\n *(\{[^\n]*\})\n *```")


def examples() -> list[tuple[str, str, str]]:
    found = []
    for doc in sorted(DOCS.glob("*.md")):
        for match in EXAMPLE.finditer(doc.read_text()):
            found.append((doc.name, match.group(1), match.group(2)))
    return found


def test_the_docs_have_examples_to_check() -> None:
    assert len(examples()) >= 2


@pytest.mark.parametrize(("doc", "command", "expected"), examples())
def test_a_console_example_prints_what_the_docs_say(
    doc: str, command: str, expected: str, tmp_path: Path
) -> None:
    config = tmp_path / "cronwright.toml"
    config.write_text(f'[node]\nzone = "Europe/Berlin"\nstore = "sqlite:///{tmp_path}/cw.db"\n')
    argv = [str(CRONWRIGHT), "--config", str(config), *shlex.split(command)[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(expected), f"{doc}: {command}"


def test_the_observability_doc_names_every_counter_and_event_the_node_emits() -> None:
    from prometheus_client import CollectorRegistry

    from cronwright.core.events import SKIP_REASONS, EventKind
    from cronwright.telemetry.sinks import MetricsSink

    registry = CollectorRegistry()
    MetricsSink(registry)
    text = (DOCS / "observability.md").read_text()
    names = [family.name + ("_total" if family.type == "counter" else "") for family in registry.collect()]
    assert names, "MetricsSink registered no family"
    assert [name for name in names if f"`{name}" not in text] == []
    assert [kind.value for kind in EventKind if f"`{kind.value}`" not in text] == []
    skips = next(line for line in text.splitlines() if "`cronwright_skips_total{reason}`" in line)
    assert [reason for reason in SKIP_REASONS if f"`{reason}`" not in skips] == []
