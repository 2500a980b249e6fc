"""Fixtures for the black-box tests (a module of this package: no clash with tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .blackbox import CRONWRIGHT, Cronwright


@pytest.fixture
def cw(tmp_path: Path) -> Cronwright:
    """A fresh config and store in this test's own folder."""
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    return Cronwright(tmp_path)
