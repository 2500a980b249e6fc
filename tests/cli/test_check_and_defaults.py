"""`check` verifies that every command action's program can be started; a CLI without a config file says
which defaults it uses and where their store lives."""

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
