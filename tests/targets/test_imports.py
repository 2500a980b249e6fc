"""The modules of cronwright.targets import one another without a cycle, even counting the imports made for
type checking only: the shared attempt types live in `attempt`, the specs in `specs`, and each executor
(command, http, the worker pool) needs only those, never the registry that builds them."""

from __future__ import annotations

import ast
from pathlib import Path

import cronwright.targets

PACKAGE = Path(cronwright.targets.__file__).parent


def imports_of(path: Path) -> set[str]:
    """The sibling modules a module imports anywhere in it (top level, functions, TYPE_CHECKING blocks)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("cronwright.targets."):
                found.add(node.module.split(".")[2])
            elif node.module == "cronwright.targets":
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names if a.name.startswith("cronwright.targets."))
    return found


def test_the_targets_package_has_no_import_cycle() -> None:
    graph = {path.stem: imports_of(path) for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert module not in trail, f"import cycle: {' -> '.join((*trail, module))}"
        if module in done:
            return
        for imported in sorted(graph.get(module, set())):
            visit(imported, (*trail, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())


def test_a_worker_imports_nothing_of_the_scheduler() -> None:
    # The worker module runs python targets (a cold worker's __main__, a forked one's main): it imports the
    # decorator and the attempt's limits only, and they are standard library only.
    worker_side = {"attempt", "decorator"}
    assert imports_of(PACKAGE / "worker.py") <= worker_side
    # The fork server's module is the server's __main__, and imports the worker module (by name); the pool
    # (node side) imports the server's node side; the pool's reply thread (worker_replies) is standard
    # library only too.
    standard_side = worker_side | {"specs", "forkserver", "worker_replies", "worker"}
    for module in sorted(standard_side):
        assert imports_of(PACKAGE / f"{module}.py") <= standard_side, module
