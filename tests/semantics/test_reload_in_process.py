"""App.reload (issue 38), in process: limits and calendars change at once; a config that changes what only a
restart can, or that `check` would refuse, changes nothing and says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import ScriptedRunner
from cronwright.app import App, build
from cronwright.config.settings import Config, parse
from cronwright.core.sources import operator
from cronwright.store.memory import MemoryStore
from cronwright.targets.registry import build_registry


def config(tmp_path: Path, node: dict[str, Any] | None = None, **sections: Any) -> Config:
    raw: dict[str, Any] = {
        "node": {"zone": "UTC", "store": "memory:", **(node or {})},
        "targets": {"sh": {"kind": "command", "actions": {"log": {"argv": ["/bin/true"]}}}},
        **sections,
    }
    return parse(raw, str(tmp_path / "cronwright.toml"))


def app_of(first: Config) -> App:
    return build(
        first, ScriptedRunner(), build_registry(first), store=MemoryStore(), seed=False, metrics=False
    )


def create(app: App, **schedule: Any) -> dict[str, Any]:
    job = {"name": "often", "target": "sh", "action": "log", "schedule": schedule}
    return app.protocol.dispatch({"action": "create_job", "job": job, "dry_run": True}, operator())


def test_a_reload_changes_the_limits_and_the_calendars_at_once(tmp_path: Path) -> None:
    first = config(tmp_path)
    app = app_of(first)
    try:
        assert create(app, every="1s")["error"] == "period_too_short"
        assert create(app, every="1m", exclude=["holidays"])["error"] == "unknown_calendar"
        second = config(tmp_path, {"min_period": "1s"}, calendars={"holidays": {"dates": ["2026-12-24"]}})
        report = app.reload(second)
        assert report.ok, report
        assert "calendars" in report.changed and "node.min_period" in report.changed
        assert report.message == "the config was reloaded: calendars, node.min_period"
        assert create(app, every="1s", exclude=["holidays"])["ok"] is True
        assert app.service.last_reload is not None and app.service.last_reload["ok"] is True
    finally:
        app.close()


def test_a_reload_says_that_seeds_wait_for_the_next_start(tmp_path: Path) -> None:
    first = config(tmp_path)
    app = app_of(first)
    try:
        seeded = config(tmp_path, seed=[{"dedupe_key": "k", "name": "n", "target": "sh", "action": "log",
                                         "schedule": {"every": "1h"}}])  # fmt: skip
        report = app.reload(seeded)
        assert report.ok and report.changed == ("seed",)
        assert "upserted at the next start" in report.message
        assert app.node.store.find("n") is None
    finally:
        app.close()


def test_a_config_that_moves_the_store_changes_nothing_and_names_it(tmp_path: Path) -> None:
    first = config(tmp_path)
    app = app_of(first)
    try:
        moved = config(tmp_path, {"store": "sqlite:///elsewhere.db", "min_period": "1s"})
        report = app.reload(moved)
        assert not report.ok and "node.store" in report.message and "restart" in report.message
        assert app.config is first
        assert (
            create(app, every="1s")["error"] == "period_too_short"
        )  # min_period, in the same file, was not taken
        assert app.service.last_reload is not None and app.service.last_reload["ok"] is False
    finally:
        app.close()


def test_a_config_check_refuses_is_not_applied(tmp_path: Path) -> None:
    first = config(tmp_path)
    app = app_of(first)
    try:
        wrong = config(tmp_path, sources={"agent": {"token_sha256": ["0" * 64], "targets": ["nothing.*"]}})
        report = app.reload(wrong)
        assert (
            not report.ok
            and "[sources.agent] targets: 'nothing.*' matches no configured action" in report.message
        )
        assert app.config is first
    finally:
        app.close()
