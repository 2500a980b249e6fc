"""Bakes the build into the package: the git commit the sdist or wheel was built from.

Everything else about the package is in pyproject.toml. `cronwright --version` and the
`cronwright_build_info` metric read `cronwright/_build.py`, which exists only in what was built: the sdist
writes it into its tree from git, and a wheel built from that sdist (no git there) keeps it; a wheel built
straight from a git checkout writes it too. Without git nor a baked file the build is "unknown build".
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

BUILD_FILE = Path("cronwright") / "_build.py"
HERE = Path(__file__).resolve().parent


def _git_build() -> str | None:
    """The commit of HERE's checkout, `+dirty` when its tracked files differ from it; None without git.
    $CRONWRIGHT_BUILD, when set, names it instead (.ci/wheel-check builds from a copy of the tracked files,
    which has no git)."""
    if os.environ.get("CRONWRIGHT_BUILD"):
        return os.environ["CRONWRIGHT_BUILD"]
    try:
        commit = subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        changed = subprocess.run(
            ["git", "-C", str(HERE), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}+dirty" if changed else commit


def _baked() -> str | None:
    """The build an sdist baked into its tree (this is a build from that sdist)."""
    baked = HERE / "src" / BUILD_FILE
    if not baked.is_file():
        return None
    scope: dict[str, object] = {}
    exec(baked.read_text(encoding="utf-8"), scope)
    build = scope.get("BUILD")
    return build if isinstance(build, str) else None


def _write(root: Path, build: str | None) -> None:
    text = (
        f'"""Written at build time by setup.py: the git commit this was built from."""\n\nBUILD = {build!r}\n'
    )
    (root / BUILD_FILE).write_text(text, encoding="utf-8")


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable install reads the source tree: no build to name
            _write(Path(self.build_lib), _git_build() or _baked())


class Sdist(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        _write(Path(base_dir) / "src", _git_build())


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
