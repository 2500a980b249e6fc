"""An import as cronwright.toml text: its report as comments, the `[targets]` its entries need, and one
`[[seed]]` each. Only what the config's own loader reads back (tests/importers check it round-trips)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from cronwright.importers.outcome import Batch, Status

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name, ensure_ascii=False)


def value(item: Any) -> str:
    """A TOML value. JSON strings are TOML basic strings once non-ASCII is left as it is (TOML has no
    surrogate escapes), and JSON numbers and booleans are TOML's."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, str | int | float):
        return json.dumps(item, ensure_ascii=False)
    if isinstance(item, list | tuple):
        return "[" + ", ".join(value(each) for each in item) + "]"
    if isinstance(item, Mapping):
        return "{ " + ", ".join(f"{key(str(k))} = {value(v)}" for k, v in item.items()) + " }"
    raise TypeError(f"no TOML form for {type(item).__name__}")


def _comment(text: str) -> list[str]:
    return [f"# {line}" for line in text.splitlines() or [""]]


def render(batch: Batch) -> str:
    """The config text: report first (counts, what differs for all, refusals), then targets and seeds."""
    report = batch.report()
    counts = report["counts"]
    lines = [
        f"# cronwright import {batch.format}: {counts['mapped']} mapped, "
        f"{counts['noted']} mapped with a note, "
        f"{counts['refused']} refused",
    ]
    for note in batch.general:
        lines += _comment(f"note (every entry): {note}")
    for entry in batch.entries:
        if entry.status is Status.REFUSED:
            lines += _comment(f"refused {entry.where}: {entry.text}")
            lines += _comment(f"  reason: {entry.reason}")
        elif entry.seed is None:
            lines += _comment(f"{entry.where}: {entry.text}: {'; '.join(entry.notes)}")
    for name, table in batch.used_targets().items():
        lines += ["", f"[targets.{key(name)}]"]
        lines += [f"{key(k)} = {value(v)}" for k, v in table.items() if k != "actions"]
        for action, spec in table.get("actions", {}).items():
            lines += ["", f"[targets.{key(name)}.actions.{key(action)}]"]
            lines += [f"{key(k)} = {value(v)}" for k, v in spec.items()]
    for entry in batch.entries:
        if entry.seed is None:
            continue
        lines += ["", *_comment(f"from {entry.where}: {entry.text}")]
        if entry.shell:
            lines += _comment("SHELL: this action runs its command line through a shell")
        for note in entry.notes:
            lines += _comment(f"note: {note}")
        lines.append("[[seed]]")
        lines += [f"{key(k)} = {value(v)}" for k, v in entry.seed.items()]
    return "\n".join(lines) + "\n"
