"""Relative paths in the config are read beside the config file (DESIGN, config section)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronwright.config.settings import load


def config_with_store(folder: Path, store: str) -> Path:
    path = folder / "cronwright.toml"
    path.write_text(f'[node]\nstore = "{store}"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("store", "opened"),
    [
        ("sqlite:///.cronwright/cw.db", "sqlite:///{folder}/.cronwright/cw.db"),
        ("sqlite:///cw.db", "sqlite:///{folder}/cw.db"),
        ("sqlite:////var/lib/cw.db", "sqlite:////var/lib/cw.db"),
        ("sqlite:///~/cw.db", "sqlite:///{home}/cw.db"),
        ("memory:", "memory:"),
        ("postgresql://cw@db:5432/cw", "postgresql://cw@db:5432/cw"),
        ("sqlite:///", "sqlite:///"),  # names no file: left for open_store to refuse
        ("sqlite:///dir/", "sqlite:///dir/"),
    ],
)
def test_the_store_is_opened_beside_the_config_file_not_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, opened: str
) -> None:
    home, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    config = config_with_store(home, store)
    monkeypatch.chdir(elsewhere)

    loaded = load(str(config))

    assert loaded.node.store == store  # the config reads as written; only where it is opened moves
    assert loaded.store_url == opened.format(folder=home, home=Path.home())


def test_a_relative_config_path_is_read_from_where_it_was_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_with_store(tmp_path, "sqlite:///cw.db")
    monkeypatch.chdir(tmp_path)
    loaded = load(None)  # ./cronwright.toml

    monkeypatch.chdir("/")  # the process moves on; the config stays where it was read
    assert loaded.folder == tmp_path
    assert loaded.store_url == f"sqlite:///{tmp_path}/cw.db"
