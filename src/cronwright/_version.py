"""The version, alone, so that nothing imports the package root (and all it pulls in) for it."""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

UNKNOWN_BUILD = "unknown build"


def build() -> str:
    """The git commit this copy was built from (`+dirty` if its tree had changes), which setup.py bakes
    into a built sdist or wheel as `cronwright/_build.py`; "unknown build" for a source tree or an
    editable install, which have no such file."""
    try:
        baked = importlib.import_module("cronwright._build")
    except ImportError:
        return UNKNOWN_BUILD
    found = getattr(baked, "BUILD", None)
    return found if isinstance(found, str) and found else UNKNOWN_BUILD


def version_line() -> str:
    """What `cronwright --version` prints: the version and the build."""
    made = build()
    return f"cronwright {__version__} ({made if made == UNKNOWN_BUILD else 'build ' + made})"
