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


# Words someone may have hashed for an example token; a digest of any of them in a doc, copied into a
# config, lets in whoever tries the word (issue 35: the docs had sha256("test") and sha256("test2")).
KNOWN_WORDS = (
    "", "test", "test1", "test2", "secret", "token", "password", "changeme", "agent", "other", "admin",
    "example", "cronwright", "mytoken", "agent-token", "letmein", "123456", "hunter2",
)  # fmt: skip
DIGEST = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


def published() -> list[Path]:
    """What a newcomer copies from: the docs, the README, and what `init` writes."""
    root = DOCS.parent
    starter = root / "src" / "cronwright" / "templates"
    written = sorted(p for p in starter.rglob("*") if p.suffix in (".toml", ".py", ".md"))
    return [*sorted(DOCS.glob("*.md")), root / "README.md", *written]


def test_no_doc_holds_the_digest_of_a_known_word() -> None:
    import hashlib

    known = {hashlib.sha256(word.encode()).hexdigest(): word for word in KNOWN_WORDS}
    found = {(path.name, digest) for path in published() for digest in DIGEST.findall(path.read_text())}

    assert found, "the docs show example digests: this test must see them"
    assert sorted((name, known[digest]) for name, digest in found if digest in known) == []
