"""The registry: the allowlist built from [targets], python actions learned from a worker, and its cache."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from cronwright.errors import ArgsInvalid, ConfigError, TargetNotAllowed
from cronwright.targets import pool
from cronwright.targets import registry as registry_module
from cronwright.targets import specs as specs_module
from cronwright.targets.registry import build_registry, worker_specs

from .conftest import config, write_module

REPORTS = """
    import cronwright

    @cronwright.action(timeout="2m", secrets=["SMTP_PASSWORD"])
    def daily(ctx: cronwright.Context, to: str, limit: int = 10) -> str:
        '''Mails the daily report.'''
        return to

    @cronwright.action
    def weekly() -> None:
        pass
"""

BACKUP = {
    "kind": "command",
    "env": ["HOME"],
    "actions": {
        "nightly": {
            "argv": ["/usr/local/bin/backup", "--dest", "{dest}"],
            "args_schema": {
                "type": "object",
                "properties": {"dest": {"type": "string"}, "keep": {"type": "integer"}},
                "required": ["dest"],
            },
            "timeout": "1h",
            "secrets": ["BACKUP_KEY"],
        }
    },
}
DEST = {"type": "object", "properties": {"dest": {"type": "string"}}, "required": ["dest"]}
HOOK = {
    "kind": "http",
    "url": "https://example.invalid/hook",
    "signing_secret": "HOOK_SECRET",
    "actions": {"ping": {"args_schema": {"type": "object"}}},
}


@pytest.fixture
def targets(tmp_path: Path) -> dict[str, Any]:
    write_module(tmp_path / "scripts", "reports", REPORTS)
    python = {"kind": "python", "module": "reports", "path": ["scripts"]}
    return {"reports": python, "backup": BACKUP, "hook": HOOK}


def test_describe_lists_every_kind_with_schemas_timeouts_and_secret_names(
    targets: dict[str, Any], tmp_path: Path
) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    described = {row["target"]: row for row in registry.describe()}
    assert [row["target"] for row in registry.describe()] == ["backup", "hook", "reports"]
    assert described["reports"] == {
        "target": "reports",
        "kind": "python",
        "actions": [
            {
                "action": "daily",
                "args_schema": {
                    "type": "object",
                    "properties": {"to": {"type": "string"}, "limit": {"type": "integer", "default": 10}},
                    "required": ["to"],
                    "additionalProperties": False,
                },
                "timeout": "2m",
                "secrets": ["SMTP_PASSWORD"],
                "description": "Mails the daily report.",
            },
            {
                "action": "weekly",
                "args_schema": {"type": "object", "properties": {}, "additionalProperties": False},
                "timeout": "5m",
                "secrets": [],
                "description": "",
            },
        ],
    }
    assert described["backup"]["actions"][0]["timeout"] == "1h"
    assert described["backup"]["actions"][0]["secrets"] == ["BACKUP_KEY"]
    assert described["hook"]["actions"][0]["secrets"] == ["HOOK_SECRET"]


def test_check_allows_valid_args_and_lets_unnamed_keys_through_a_configured_schema(
    targets: dict[str, Any], tmp_path: Path
) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    registry.check("reports", "daily", {"to": "ops@example.org"})
    registry.check("backup", "nightly", {"dest": "/mnt/backups", "unnamed": True})
    registry.check("hook", "ping", {})


def test_a_python_action_refuses_a_key_it_cannot_receive_naming_the_parameter_meant(
    targets: dict[str, Any], tmp_path: Path
) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    with pytest.raises(ArgsInvalid) as refused:
        registry.check("reports", "daily", {"to": "ops@example.org", "limt": 3, "zzz": 1})
    assert [(p["path"], p["problem"]) for p in refused.value.reply()["problems"]] == [
        ("$.limt", "unknown arg 'limt' (did you mean 'limit'?); it takes: to, limit"),
        ("$.zzz", "unknown arg 'zzz'; it takes: to, limit"),
    ]
    assert "did you mean 'limit'" in refused.value.message


def test_an_unknown_target_or_action_is_not_allowed(targets: dict[str, Any], tmp_path: Path) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    with pytest.raises(
        TargetNotAllowed, match=r"target 'nope' is not allowed.*backup, hook, reports"
    ) as refused:
        registry.check("nope", "daily", {})
    assert refused.value.code == "target_not_allowed"
    with pytest.raises(TargetNotAllowed, match=r"reports.monthly is not allowed.*its actions: daily, weekly"):
        registry.check("reports", "monthly", {})


def test_args_that_break_the_schema_are_refused_with_the_json_path_of_each_problem(
    targets: dict[str, Any], tmp_path: Path
) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    with pytest.raises(ArgsInvalid) as refused:
        registry.check("reports", "daily", {"limit": "ten"})
    reply = refused.value.reply()
    assert reply["error"] == "args_invalid"
    assert [(p["path"], p["problem"]) for p in reply["problems"]] == [
        ("$", "'to' is a required property"),
        ("$.limit", "'ten' is not of type 'integer'"),
    ]


def test_a_module_that_fails_to_import_is_a_config_error_naming_the_target_and_the_error(
    tmp_path: Path,
) -> None:
    write_module(tmp_path / "scripts", "broken", "import cronwright\nraise RuntimeError('no database')\n")
    targets = {"jobs": {"kind": "python", "module": "broken", "path": ["scripts"]}}
    with pytest.raises(
        ConfigError, match=r"\[targets.jobs\]: module 'broken' cannot be loaded: RuntimeError: no database"
    ):
        build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)


def test_a_module_that_is_missing_or_has_no_actions_is_a_config_error(tmp_path: Path) -> None:
    write_module(tmp_path / "scripts", "plain", "def helper() -> None: ...\n")
    missing = {"jobs": {"kind": "python", "module": "nowhere", "path": ["scripts"]}}
    with pytest.raises(ConfigError, match="ModuleNotFoundError: No module named 'nowhere'"):
        build_registry(config(missing), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    plain = {"jobs": {"kind": "python", "module": "plain", "path": ["scripts"]}}
    with pytest.raises(ConfigError, match=r"has no functions marked @cronwright\.action"):
        build_registry(config(plain), cache_dir=tmp_path / "cache", base_dir=tmp_path)


def test_a_bad_type_hint_fails_the_module_naming_the_parameter(tmp_path: Path) -> None:
    source = (
        "import cronwright, datetime\n@cronwright.action\ndef act(when: datetime.datetime) -> None: ...\n"
    )
    write_module(tmp_path / "scripts", "hinted", source)
    targets = {"jobs": {"kind": "python", "module": "hinted", "path": ["scripts"]}}
    with pytest.raises(ConfigError, match="parameter 'when'"):
        build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)


def test_the_scheduling_process_never_imports_target_code(targets: dict[str, Any], tmp_path: Path) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    registry.check("reports", "daily", {"to": "x"})
    assert "reports" not in sys.modules
    assert str(tmp_path / "scripts") not in sys.path


@pytest.mark.parametrize(
    ("action", "problem"),
    [
        (
            {"argv": ["/bin/backup", "--dest={dest}"], "args_schema": DEST},
            r"embeds a placeholder.*split it: \"--dest\", \"\{dest\}\"",
        ),
        ({"argv": ["{dest}"], "args_schema": DEST}, r"argv\[0\] is the program"),
        (
            {"argv": ["/bin/backup", "{dest}"], "args_schema": {**DEST, "required": []}},
            r"placeholder \{dest\} must be a required property",
        ),
        ({"argv": []}, "argv is required"),
        ({"argv": ["/bin/true"], "args_schema": {"type": "array"}}, "must describe an object"),
        ({"argv": ["/bin/true"], "args_schema": {"type": 5}}, "not a valid JSON Schema"),
    ],
)
def test_command_actions_are_checked_when_the_config_loads(
    tmp_path: Path, action: dict[str, Any], problem: str
) -> None:
    targets = {"backup": {"kind": "command", "actions": {"nightly": action}}}
    with pytest.raises(ConfigError, match=r"\[targets.backup.actions.nightly\]: .*" + problem):
        build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ({"kind": "http", "signing_secret": "S", "actions": {"a": {}}}, "needs url"),
        ({"kind": "http", "url": "https://x.invalid", "actions": {"a": {}}}, "needs signing_secret"),
        ({"kind": "http", "url": "https://x.invalid", "signing_secret": "S"}, "at least one"),
        (
            {"kind": "command", "module": "m", "actions": {"a": {"argv": ["/bin/true"]}}},
            "module does not apply",
        ),
        ({"kind": "python"}, "needs module"),
        ({"kind": "python", "module": "m", "path": ["missing"]}, "path 'missing' is not a directory"),
        (
            {"kind": "command", "env": ["NOT-A-NAME"], "actions": {"a": {"argv": ["/bin/true"]}}},
            "not a variable",
        ),
    ],
)
def test_targets_are_checked_when_the_config_loads(
    tmp_path: Path, target: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=r"\[targets.t\]: .*" + problem):
        build_registry(config({"t": target}), cache_dir=tmp_path / "cache", base_dir=tmp_path)


def test_an_action_timeout_wins_only_when_written(tmp_path: Path) -> None:
    target = {"kind": "command", "timeout": "10m", "actions": {"a": {"argv": ["/bin/true"]}}}
    registry = build_registry(config({"t": target}), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    assert registry.describe()[0]["actions"][0]["timeout"] == "10m"


def test_a_second_boot_reads_python_actions_from_the_cache(
    targets: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    described: list[str] = []
    real = pool.describe  # what the registry module holds as `describe`

    def counting(spec: Any, timeout: float) -> dict[str, Any]:
        described.append(spec.module)
        return real(spec, timeout)

    monkeypatch.setattr(registry_module, "describe", counting)
    second = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    assert described == []
    assert second.describe() == first.describe()

    module = tmp_path / "scripts" / "reports.py"
    module.write_text(module.read_text() + "\n@cronwright.action\ndef monthly() -> None: ...\n")
    os.utime(module, ns=(1, 1))  # a changed file, even within one mtime tick
    third = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    assert described == ["reports"]
    assert [a["action"] for a in third.describe()[2]["actions"]] == ["daily", "monthly", "weekly"]


def test_a_module_changed_while_the_node_runs_is_described_again_at_check(
    targets: dict[str, Any], tmp_path: Path
) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    with pytest.raises(TargetNotAllowed):
        registry.check("reports", "monthly", {})
    module = tmp_path / "scripts" / "reports.py"
    module.write_text(module.read_text() + "\n@cronwright.action\ndef monthly() -> None: ...\n")
    os.utime(module, ns=(2, 2))
    registry.check("reports", "monthly", {})

    module.write_text("raise ImportError('half-saved file')\n")
    os.utime(module, ns=(3, 3))
    with pytest.raises(TargetNotAllowed, match=r"cannot be used until its module is fixed.*half-saved file"):
        registry.check("reports", "daily", {"to": "x"})
    assert [row["target"] for row in registry.describe()] == ["backup", "hook"]


def test_one_look_stats_a_module_once_for_every_run_it_covers_and_the_next_block_looks_again(
    targets: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    looks: list[str] = []
    real = specs_module.fingerprint  # what the registry module holds as `fingerprint`

    def counting(files: Any) -> Any:
        looks.append(threading.current_thread().name)
        return real(files)

    monkeypatch.setattr(registry_module, "fingerprint", counting)
    module = tmp_path / "scripts" / "reports.py"
    with registry.one_look():
        for _ in range(5):
            registry.checked("reports", "daily", {"to": "x"})
        # A run on another thread in the meantime (one that had to start a worker) looks for itself.
        other = threading.Thread(target=registry.check, args=("reports", "weekly", {}), name="other")
        other.start()
        other.join()
        module.write_text(module.read_text() + "\n@cronwright.action\ndef monthly() -> None: ...\n")
        os.utime(module, ns=(2, 2))
        with pytest.raises(TargetNotAllowed):  # this block's look came before the edit
            registry.check("reports", "monthly", {})
    assert looks == ["MainThread", "other"]
    with registry.one_look():  # the next pass's first run sees the edit, and describes the module again
        registry.check("reports", "monthly", {})
        described = len(looks)
        registry.check("reports", "monthly", {})
        assert len(looks) == described
    registry.check("reports", "monthly", {})  # outside a block, each run looks
    registry.check("reports", "monthly", {})
    assert len(looks) == described + 2


def test_one_look_never_covers_a_broken_module_so_its_fix_lands_at_the_next_run(
    targets: dict[str, Any], tmp_path: Path
) -> None:
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    module = tmp_path / "scripts" / "reports.py"
    good = module.read_text()
    with registry.one_look():
        module.write_text("raise ImportError('half-saved file')\n")
        os.utime(module, ns=(3, 3))
        # Nested: the outer block's looks count (none yet for this target).
        with registry.one_look(), pytest.raises(TargetNotAllowed, match="half-saved file"):
            registry.check("reports", "daily", {"to": "x"})
        module.write_text(good + "\n@cronwright.action\ndef monthly() -> None: ...\n")
        os.utime(module, ns=(4, 4))
        registry.check("reports", "monthly", {})  # the fixed module, described again in the same block


def test_relative_paths_are_read_from_the_config_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path / "site" / "scripts", "reports", REPORTS)
    (tmp_path / "site" / "cronwright.toml").write_text(
        '[targets.reports]\nkind = "python"\nmodule = "reports"\npath = ["./scripts"]\n'
    )
    monkeypatch.chdir(tmp_path)
    from cronwright.config.settings import load

    registry = build_registry(load(str(tmp_path / "site" / "cronwright.toml")), cache_dir=tmp_path / "cache")
    assert registry.describe()[0]["target"] == "reports"


def test_worker_specs_are_the_registry_s_own_without_describing_a_module(tmp_path: Path) -> None:
    # A tick starts its fork servers from these before the registry is built: they must be the very
    # specs the registry's runs ask the pool for, or the servers started early would go unused.
    write_module(
        tmp_path / "scripts", "acts", "import cronwright\n\n@cronwright.action\ndef go() -> None: ...\n"
    )
    targets: dict[str, dict[str, Any]] = {
        "py": {"kind": "python", "module": "acts", "path": ["scripts"], "env": ["HOME"]},
        "sh": {"kind": "command", "actions": {"go": {"argv": ["/bin/true"]}}},
    }
    specs = worker_specs(config(targets), base_dir=tmp_path)
    registry = build_registry(config(targets), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    assert specs == registry.python_workers() and len(specs) == 1
    with pytest.raises(ConfigError, match="not a directory"):
        worker_specs(config({"py": {**targets["py"], "path": ["nowhere"]}}), base_dir=tmp_path)
