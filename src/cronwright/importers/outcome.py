"""What an import makes of its input: one `Entry` per entry of the source, mapped, mapped with notes, or
refused with the reason (DESIGN semantic 44), and the `[targets]` the mapped ones need.

Pure values: each format's reader builds them from text, and the CLI renders them (toml_text.py) or sends
them (fronts/cli/importing.py). Nothing here reads a file or a clock.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    MAPPED = "mapped"  # the same schedule, the same run
    NOTED = "noted"  # mapped, with a note of what differs and why
    REFUSED = "refused"  # not mapped, with the reason


@dataclass(frozen=True, slots=True)
class Reading:
    """How the source system itself reads an entry's timing, for `--compare`: `kind` names the reading
    (`cron`: croniter's; `oncalendar`: the oncalendar library's systemd reading; `trigger`: APScheduler's own
    trigger object), or `none` with the reason no comparison is made."""

    kind: str
    expressions: tuple[str, ...] = ()
    zone: str | None = None
    trigger: Any = None
    why: str = ""


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of the input and what became of it. `where` locates it (file and line, manifest, job id);
    `seed` is the [[seed]] table it became (None when refused); `shell` marks an `sh -c` action."""

    where: str
    text: str
    status: Status
    notes: tuple[str, ...] = ()
    reason: str = ""
    seed: Mapping[str, Any] | None = None
    shell: bool = False
    reading: Reading | None = None

    def row(self) -> dict[str, Any]:
        """The entry as the report's JSON shows it."""
        row: dict[str, Any] = {"where": self.where, "text": self.text, "status": self.status.value}
        if self.seed is not None:
            row["name"] = self.seed["name"]
            row["dedupe_key"] = self.seed["dedupe_key"]
            row["target"] = f"{self.seed['target']}.{self.seed['action']}"
        if self.shell:
            row["shell"] = True
        if self.notes:
            row["notes"] = list(self.notes)
        if self.reason:
            row["reason"] = self.reason
        return row


@dataclass
class Batch:
    """The result of one import being built: targets with their actions, entries in input order, and the
    names and keys already taken (an input may hold the same line twice: each gets its own seed)."""

    format: str
    general: tuple[str, ...] = ()  # what differs for every entry alike, said once
    targets: dict[str, dict[str, Any]] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    paused: set[str] = field(default_factory=set)  # dedupe keys of entries the source holds suspended
    _names: set[str] = field(default_factory=set)
    _keys: set[str] = field(default_factory=set)

    def refuse(self, where: str, text: str, reason: str) -> None:
        self.entries.append(Entry(where, text, Status.REFUSED, reason=reason))

    def target(self, name: str, table: Mapping[str, Any]) -> None:
        """Declares a target (its table without actions); a second declaration must agree."""
        known = self.targets.setdefault(name, {**table, "actions": {}, "used": False})
        if {k: v for k, v in known.items() if k not in ("actions", "used")} != dict(table):
            raise ValueError(f"target {name} declared twice with different settings")

    def add(
        self,
        where: str,
        text: str,
        target: str,
        action: Mapping[str, Any] | None,
        seed: Mapping[str, Any],
        notes: list[str],
        shell: bool = False,
        reading: Reading | None = None,
        action_name: str | None = None,
    ) -> Entry:
        """Adds one mapped entry: its action on `target` (named as its seed unless `action_name` says;
        None for a python target's, which its module declares), and its seed, whose `name` and
        `dedupe_key` are made unique here (a repeated entry gets `-2`, `-3`...)."""
        name = self._unique(str(seed["name"]), self._names)
        key = self._unique(str(seed["dedupe_key"]), self._keys)
        action_name = action_name or name.replace(".", "_")
        self.targets[target]["used"] = True
        if action is not None:
            self.targets[target]["actions"][action_name] = dict(action)
        full = {"dedupe_key": key, "name": name, "target": target, "action": action_name}
        full.update({k: v for k, v in seed.items() if k not in ("name", "dedupe_key")})
        status = Status.NOTED if notes else Status.MAPPED
        entry = Entry(where, text, status, tuple(notes), "", full, shell, reading)
        self.entries.append(entry)
        return entry

    @staticmethod
    def _unique(wanted: str, taken: set[str]) -> str:
        found, n = wanted, 1
        while found in taken:
            n += 1
            found = f"{wanted}-{n}"
        taken.add(found)
        return found

    @property
    def seeds(self) -> list[Mapping[str, Any]]:
        return [entry.seed for entry in self.entries if entry.seed is not None]

    def used_targets(self) -> dict[str, dict[str, Any]]:
        """The targets at least one mapped entry runs (a file of refusals needs none)."""
        return {
            name: {
                key: value for key, value in table.items() if key != "used" and (key != "actions" or value)
            }
            for name, table in self.targets.items()
            if table["used"]
        }

    def report(self) -> dict[str, Any]:
        counts = {status.value: 0 for status in Status}
        for entry in self.entries:
            counts[entry.status.value] += 1
        rows = [entry.row() for entry in self.entries]
        return {"format": self.format, "counts": counts, "general": list(self.general), "entries": rows}


_SLUG_DROP = re.compile(r"[^A-Za-z0-9_-]+")


def slug(text: str, most: int = 48) -> str:
    """A name-safe rendering of `text`: letters, digits, `_` and `-`, starting with a letter or digit."""
    words = re.sub(r"-{2,}", "-", _SLUG_DROP.sub("-", text)).strip("-_")
    return (words[:most].rstrip("-_") or "entry").lower()


def digest(*parts: object) -> str:
    """A short stable hash of the parts: the same source entry always gives the same key."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
