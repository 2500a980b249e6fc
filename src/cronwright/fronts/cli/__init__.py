"""The `cronwright` command line: a thin adapter that turns options into protocol requests, as the operator.

The console script is `cronwright.fronts.cli:main`. Importing this package builds the whole command: the
group (group.py) and each module of verbs, which joins the group as it is imported. None of them imports the
app, the config or the request models at import (runtime.py, options.py): `--version`, `--help` and `tick`
start fast (tests/cli/test_tick_imports.py).
"""

from __future__ import annotations

# Each module of verbs adds its verbs to the group as it is imported.
from cronwright.fronts.cli import (  # noqa: F401
    admin,
    importing,
    job_verbs,
    migrate_verb,
    read_verbs,
    reload_verb,
    serving,
)
from cronwright.fronts.cli.group import cli, main

__all__ = ["cli", "main"]
