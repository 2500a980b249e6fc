"""Semantic 27, black-box: args a python action cannot receive are refused at create, through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .blackbox import CRONWRIGHT, TIMEOUT


def cronwright(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    env.pop("CRONWRIGHT_CONFIG", None)
    argv = [str(CRONWRIGHT), "--config", str(folder / "cronwright.toml"), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=folder, timeout=TIMEOUT)


@pytest.fixture
def starter(tmp_path: Path) -> Path:
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    done = subprocess.run(
        [str(CRONWRIGHT), "init", "--folder", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done
    return tmp_path


def test_a_misspelt_arg_of_a_python_action_is_refused_naming_the_parameter_meant(starter: Path) -> None:
    add = ("add", "greet-ada", "--target", "hello", "--action", "greet", "--every", "5m")
    refused = cronwright(starter, *add, "--args", '{"nmae": "Ada"}')
    assert refused.returncode == 1, refused
    assert "args_invalid" in refused.stderr
    assert "unknown arg 'nmae' (did you mean 'name'?)" in refused.stderr, refused.stderr

    reply = json.loads(cronwright(starter, *add, "--args", '{"nmae": "Ada"}', "--json").stdout)
    assert reply["error"] == "args_invalid"
    assert reply["problems"] == [
        {"path": "$.nmae", "problem": "unknown arg 'nmae' (did you mean 'name'?); it takes: name"}
    ]
    assert cronwright(starter, *add, "--args", '{"name": "Ada"}').returncode == 0
    assert [job["name"] for job in json.loads(cronwright(starter, "list", "--json").stdout)["jobs"]] == [
        "greet-ada"
    ]
