"""`check` verifies that every command action's program can be started, and refuses a config that validates
but cannot work; a CLI without a config file says which defaults it uses and where their store lives."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .blackbox import CRONWRIGHT, TIMEOUT, Cronwright

BROKEN = """
[targets.tools]
kind = "command"
[targets.tools.actions.missing]
argv = ["/nonexistent/bin/backup"]
[targets.tools.actions.plain]
argv = ["./scripts/not-executable.sh"]
[targets.tools.actions.nowhere]
argv = ["no-such-program-anywhere"]
[targets.tools.actions.fine]
argv = ["true"]
"""


def test_check_names_each_action_whose_program_cannot_start(cw: Cronwright) -> None:
    assert cw.ok("check").stdout.startswith(f"{cw.config}: ok: 1 target, 3 actions")
    (cw.folder / "scripts").mkdir()
    (cw.folder / "scripts" / "not-executable.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + BROKEN, encoding="utf-8")
    checked = cw.run("check")
    assert (checked.rc, checked.stdout) == (2, ""), checked
    error = "cronwright: error: [targets.tools.actions"
    assert checked.stderr.splitlines() == [
        f"{error}.missing]: argv[0] '/nonexistent/bin/backup' does not exist (read from {cw.folder})",
        f"{error}.plain]: argv[0] './scripts/not-executable.sh' is not executable: "
        f"chmod +x {cw.folder}/scripts/not-executable.sh",
        f"{error}.nowhere]: argv[0] 'no-such-program-anywhere' is not found on the command's PATH "
        f'({os.defpath}); give its full path, or pass PATH through with env = ["PATH"]',
    ]
    (cw.folder / "scripts" / "not-executable.sh").chmod(0o755)
    assert "not-executable" not in cw.run("check").stderr


CANNOT_WORK = """
[sources.agent]
token_sha256 = "7f2bd3d80f3d5c43e2b14d3aa0e9b77b93c6e1f3d6b8a9c0e1f2a3b4c5d6e7f8"
targets = ["report.*"]

[notify.ops]
kind = "webhook"
url = "http://127.0.0.1:9/hook"
signing_secret = "CW_TEST_ALERT_SECRET"

[[alert]]
on = ["failed"]
match = { target = "nightly.*" }
notify = ["ops"]
"""


def test_check_refuses_a_config_that_validates_but_cannot_work(cw: Cronwright) -> None:
    # Issue 35: a source whose patterns allow nothing, an alert rule that can never match, and a webhook
    # whose signing secret is unset all passed `check`.
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + CANNOT_WORK, encoding="utf-8")
    checked = cw.run("check")
    assert (checked.rc, checked.stdout) == (2, ""), checked
    lines = checked.stderr.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("cronwright: error: [sources.agent] targets: 'report.*' matches no configured")
    assert "[[alert]] #1 match.target: 'nightly.*' matches no configured action" in lines[1]
    assert "[notify.ops] names the secret CW_TEST_ALERT_SECRET, not set in the environment" in lines[2]

    fixed = CANNOT_WORK.replace('"report.*"', '"sh.*"').replace('"nightly.*"', '"sh.*"')
    cw.config.write_text(cw.config.read_text(encoding="utf-8").replace(CANNOT_WORK, fixed), encoding="utf-8")
    argv, env = cw.command("check")
    env["CW_TEST_ALERT_SECRET"] = "s3cret"  # the secret is read where the node will read it
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cw.folder, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr


def test_without_a_config_file_the_cli_says_it_uses_the_defaults_and_where_the_store_is(
    tmp_path: Path,
) -> None:
    env = {key: value for key, value in os.environ.items() if key != "CRONWRIGHT_CONFIG"}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    store = f"sqlite:///{tmp_path / 'data' / 'cronwright' / 'cronwright.db'}"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [str(CRONWRIGHT), *args]
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=TIMEOUT)

    listed = run("list")
    assert (listed.returncode, listed.stdout) == (0, "no schedules\n"), listed
    assert listed.stderr.splitlines() == [
        "cronwright: note: no config file (--config, $CRONWRIGHT_CONFIG, ./cronwright.toml): using the "
        f"built-in defaults, with the store at {store}; with no targets, nothing can run: `cronwright init`"
        " writes a starter config here"
    ]
    ticked = run("tick")
    [line] = [json.loads(line) for line in ticked.stderr.splitlines()]
    assert (line["level"], line["store"]) == ("warning", store), "tick says it in its JSON log"
    assert "`cronwright init`" in line["message"]  # issue 35: the way out is named, not only the defaults
    (tmp_path / "cronwright.toml").write_text("[node]\n", encoding="utf-8")
    assert run("list").stderr == "", "a config file found: nothing to say"
