"""Relative paths in the config are read beside the config file, never from the working folder (DESIGN,
config section; issue 11 defect 5).

The scenario: `cronwright init` writes the starter config (`store = "sqlite:///.cronwright/cronwright.db"`,
a python target with `path = ["./scripts"]`), and the CLI and the stdio MCP server are then started from
another folder, as an MCP client or a crontab does. Every one of them must open the one database beside the
config, and leave nothing in the folder it was started from.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .blackbox import CRONWRIGHT, TIMEOUT

COMMAND_TARGET = """
[targets.here]
kind = "command"
[targets.here.actions.where]
argv = ["/bin/sh", "-c", "pwd > where.out; echo \\"$GREETING\\" >> where.out"]
secrets = ["GREETING"]
"""


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """The starter's folder (with a command target and a relative secrets file), and another folder."""
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    home, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    elsewhere.mkdir()
    run(["init", "--folder", str(home)], cwd=tmp_path)
    config = home / "cronwright.toml"
    text = config.read_text(encoding="utf-8")
    text = text.replace('# secrets_file = "secrets.env"', 'secrets_file = "secrets.env"')
    config.write_text(text + COMMAND_TARGET, encoding="utf-8")
    secrets = home / "secrets.env"
    secrets.write_text("GREETING=hello-from-the-secrets-file\n", encoding="utf-8")
    secrets.chmod(0o600)
    return home, elsewhere


def environment(config: Path | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "CRONWRIGHT_CONFIG"}
    if config is not None:
        env["CRONWRIGHT_CONFIG"] = str(config)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(CRONWRIGHT), *args],
        cwd=cwd,
        env=env or environment(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done
    return done


def reply(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    answer = json.loads(run([*args, "--json"], cwd, env).stdout)
    assert isinstance(answer, dict) and answer["ok"] is True, answer
    return answer


def names(answer: dict[str, Any]) -> list[str]:
    return [job["name"] for job in answer["jobs"]]


def test_the_starter_store_is_read_beside_the_config_from_any_folder(folders: tuple[Path, Path]) -> None:
    home, elsewhere = folders
    config = home / "cronwright.toml"
    by_flag = ["--config", str(config)]
    database = home / ".cronwright" / "cronwright.db"

    status = reply([*by_flag, "status"], elsewhere)
    assert status["node"]["store"] == f"sqlite:///{database}"
    assert status["node"]["persistence"] == "persisted"
    schedule = ["--target", "hello", "--action", "greet", "--every", "1h"]
    reply([*by_flag, "add", "from-elsewhere", *schedule], elsewhere)
    reply(["add", "by-env", *schedule], elsewhere, environment(config))

    # The config's own folder (./cronwright.toml found there), the flag and the variable: one database.
    assert names(reply(["list"], home)) == ["by-env", "from-elsewhere"]
    assert names(reply(["list"], elsewhere, environment(config))) == ["by-env", "from-elsewhere"]

    async def session() -> None:
        params = StdioServerParameters(command=str(CRONWRIGHT), args=[*by_flag, "mcp"], cwd=elsewhere)
        async with Client(params) as client:
            listed = await client.call_tool("schedules_list", {})
            assert [job["name"] for job in (listed.structured_content or {})["jobs"]] == [
                "by-env",
                "from-elsewhere",
            ]
            made = await client.call_tool(
                "schedules_create",
                {"name": "by-mcp", "target": "hello", "action": "greet", "schedule": {"every": "1h"}},
            )
            assert not made.is_error, made.content

    anyio.run(session)
    assert names(reply(["list"], home)) == ["by-env", "by-mcp", "from-elsewhere"]
    assert database.is_file()
    assert list(elsewhere.iterdir()) == [], "nothing may be written in the folder a command was run from"


def test_targets_run_beside_the_config_with_its_secrets_file(folders: tuple[Path, Path]) -> None:
    """A command's default cwd, a python target's `path` and a relative `secrets_file`, from elsewhere."""
    home, elsewhere = folders
    by_flag = ["--config", str(home / "cronwright.toml")]
    reply([*by_flag, "add", "where", "--target", "here", "--action", "where", "--every", "1h"], elsewhere)
    reply([*by_flag, "add", "hello", "--target", "hello", "--action", "greet", "--every", "1h"], elsewhere)

    where = reply([*by_flag, "run-now", "where"], elsewhere)
    hello = reply([*by_flag, "run-now", "hello"], elsewhere)

    assert where["job"]["last_run"]["outcome"] == "ok", where
    pwd, secret = (home / "where.out").read_text(encoding="utf-8").splitlines()
    assert Path(pwd).resolve() == home.resolve()
    assert secret == "hello-from-the-secrets-file"
    assert hello["job"]["last_run"]["outcome"] == "ok", hello
    assert list(elsewhere.iterdir()) == []
