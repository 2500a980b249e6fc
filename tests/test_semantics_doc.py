"""docs/semantics.md numbers every semantic the docs cite; the docs cite nothing outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_the_semantics_doc_has_all_44_in_order() -> None:
    text = (DOCS / "semantics.md").read_text(encoding="utf-8")
    numbers = [int(n) for n in re.findall(r'<a id="(\d+)"></a>\*\*\1\. ', text)]
    assert numbers == list(range(1, 45))


def test_the_docs_cite_semantics_that_exist_and_never_design() -> None:
    texts = {path.name: path.read_text(encoding="utf-8") for path in [*DOCS.glob("*.md"), ROOT / "README.md"]}
    for name, text in texts.items():
        assert "DESIGN" not in text, f"{name} cites DESIGN, which is not in the repository"
        for number in re.findall(r"semantics\.md#(\d+)", text):
            assert 1 <= int(number) <= 44, (name, number)
