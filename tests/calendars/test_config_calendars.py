"""[calendars.NAME] in cronwright.toml: parsed, read beside the config file, and handed to the node."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from conftest import ALLOWED
from cronwright.app import build
from cronwright.config.settings import load
from cronwright.core.model import Job, Occurrence, Result
from cronwright.errors import ConfigError
from cronwright.store.memory import MemoryStore

ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:freeze@test
DTSTART;VALUE=DATE:20261230
DTEND;VALUE=DATE:20261231
SUMMARY:Freeze
END:VEVENT
END:VCALENDAR
"""


class _NoRunner:
    def run(self, job: Job, occurrence: Occurrence) -> Result:
        raise AssertionError("nothing runs here")

    def cancel(self, occurrence: Occurrence) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_calendar_in_the_config_reaches_the_node_with_its_ics_read_beside_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "etc"
    folder.mkdir()
    (folder / "freeze.ics").write_text(ICS, encoding="utf-8")
    path = folder / "cronwright.toml"
    path.write_text(
        '[node]\nzone = "Europe/Berlin"\nstore = "memory:"\n\n'
        '[calendars.freeze]\ndates = ["2026-12-24"]\nics = "freeze.ics"\n',
        encoding="utf-8",
    )
    app = build(load(str(path)), _NoRunner(), ALLOWED, store=MemoryStore(), seed=False)
    try:
        calendars = app.node.rules.calendars
        assert list(calendars) == ["freeze"]
        assert calendars["freeze"].excludes_date(date(2026, 12, 24))
        assert calendars["freeze"].excludes_date(date(2026, 12, 30))
        assert not calendars["freeze"].excludes_date(date(2026, 12, 31))
    finally:
        app.close()


def test_an_unknown_key_in_a_calendar_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "cronwright.toml"
    path.write_text('[calendars.freeze]\ndayz = ["2026-12-24"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"calendars\.freeze\.dayz"):
        load(str(path))
