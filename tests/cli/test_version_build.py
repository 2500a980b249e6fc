"""`cronwright --version` names the version and the build: the git commit setup.py baked into a built wheel
(`cronwright/_build.py`), or "unknown build" for a source tree. .ci/wheel-check sees a built one name its
commit; here, a source tree and a baked module stand in for both ends."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

import cronwright
from cli.blackbox import Cronwright
from cronwright._version import UNKNOWN_BUILD, build, version_line


@pytest.fixture
def baked() -> Iterator[types.ModuleType]:
    module = types.ModuleType("cronwright._build")
    sys.modules["cronwright._build"] = module
    try:
        yield module
    finally:
        del sys.modules["cronwright._build"]


def test_a_source_tree_says_its_build_is_unknown(cw: Cronwright) -> None:
    done = cw.ok("--version")
    assert done.stdout.strip() == f"cronwright {cronwright.__version__} (unknown build)"


def test_a_built_copy_names_the_commit_it_was_built_from(baked: types.ModuleType) -> None:
    # The ignores below are kept: the baked module's BUILD is written by the build, not declared.
    baked.BUILD = "7673d61171f7"  # type: ignore[attr-defined]
    assert build() == "7673d61171f7"
    assert version_line() == f"cronwright {cronwright.__version__} (build 7673d61171f7)"


def test_a_baked_file_without_a_build_is_unknown(baked: types.ModuleType) -> None:
    baked.BUILD = ""  # type: ignore[attr-defined]
    assert build() == UNKNOWN_BUILD
