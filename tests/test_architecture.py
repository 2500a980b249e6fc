"""The folder is the layer (DESIGN.md "Architecture", docs/architecture.md): what the tree itself must keep.

The layers contract (pyproject.toml, `lint-imports` in `make lint`) keeps every import pointing down; this
file checks what a contract cannot say: no import circles, a small top level, one name per module, and
modules small enough to read. Imports under TYPE_CHECKING and inside functions count, as they do for the
contract. The debts at the top are known and may only shrink: a new entry is a defect.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "cronwright"

# Modules over MAX_LINES, each to be split by what it holds (issue 33); store/postgres.py is one backend.
LONG_MODULES = {
    "store/postgres.py",
}
MAX_LINES = 600
# Circles of imports known and still to cut: none.
KNOWN_CIRCLES: list[set[str]] = []


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("cronwright", cache_dir=None)


def circles(graph: grimp.ImportGraph) -> list[set[str]]:
    """The strongly connected sets of modules of more than one (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(graph.find_modules_directly_imported_by(target)))))
                elif target in stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                members = set()
                while True:
                    member = stack.pop()
                    members.add(member)
                    if member == module:
                        break
                if len(members) > 1:
                    found.append(members)
    return found


def test_no_module_imports_itself_round_a_circle(graph: grimp.ImportGraph) -> None:
    found = circles(graph)
    assert [circle for circle in found if circle not in KNOWN_CIRCLES] == []
    assert all(circle in found for circle in KNOWN_CIRCLES), "a known circle is gone: take it off the list"


def test_the_circle_finder_finds_a_circle() -> None:
    # The check above cannot pass for want of finding: two modules that import each other are found.
    made = grimp.ImportGraph()
    for module in ("a", "a.b", "a.c", "a.d"):
        made.add_module(module)
    made.add_import(importer="a.b", imported="a.c")
    made.add_import(importer="a.c", imported="a.b")
    made.add_import(importer="a.c", imported="a.d")
    assert circles(made) == [{"a.b", "a.c"}]


def test_the_top_level_holds_the_wiring_and_the_edges_only() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


def test_no_two_modules_share_a_name() -> None:
    names = Counter(path.stem for path in PACKAGE.rglob("*.py") if path.stem != "__init__")
    assert [name for name, count in names.items() if count > 1] == []


def test_modules_stay_small_enough_to_read() -> None:
    long = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert long - LONG_MODULES == set(), "split it by what it holds"
    assert LONG_MODULES - long == set(), "it is short now: take it off LONG_MODULES"


def test_the_pure_core_imports_no_io_framework() -> None:
    # core/ is pure: no pydantic, HTTP, database, files or threads (DESIGN.md); checked on its own modules,
    # those of core/engine/ included.
    banned = {"pydantic", "httpx", "psycopg", "sqlite3", "threading", "starlette", "prometheus_client"}
    for path in (PACKAGE / "core").rglob("*.py"):
        text = path.read_text()
        imported = {
            line.split()[1].split(".")[0]
            for line in text.splitlines()
            if line.startswith(("import ", "from "))
        }
        assert imported & banned == set(), path.name
