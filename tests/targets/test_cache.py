"""What a process keeps on disk to start faster (targets/cache.py), on real files: found while what it
depends on is unchanged, and read as empty, never as an error, when anything about it is wrong."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cronwright.targets.cache import ENTRIES, CacheFile, SpecCache
from cronwright.targets.specs import WorkerSpec

SPECS = [WorkerSpec("acts", ("/srv/scripts",), "/srv", ("TOKEN",)), WorkerSpec("more", (), "/srv/more")]


def test_the_specs_a_config_made_are_found_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cronwright.toml"
    config.write_text("[targets]\n")
    cache = SpecCache(tmp_path / "cache")
    assert cache.get(config) == []

    cache.put(config, SPECS)

    assert cache.get(config) == SPECS
    assert SpecCache(tmp_path / "cache").get(config) == SPECS  # read back from the file
    monkeypatch.chdir(tmp_path)
    assert cache.get(Path("cronwright.toml")) == SPECS  # the same file, named relative
    config.write_text("[targets]\n\n")  # edited: its size and modification time are not those it had
    assert cache.get(config) == []
    assert cache.get(tmp_path / "missing.toml") == []
    cache.put(tmp_path / "missing.toml", SPECS)  # nothing to key it by: nothing written, nothing raised
    assert cache.get(tmp_path / "missing.toml") == []


def test_a_cache_file_that_is_broken_or_of_another_version_reads_as_empty(tmp_path: Path) -> None:
    config = tmp_path / "cronwright.toml"
    config.write_text("")
    folder = tmp_path / "cache"
    SpecCache(folder).put(config, SPECS)
    stored = json.loads((folder / "specs.json").read_text())
    [key] = stored["entries"]
    for broken in (
        "{not json",
        json.dumps({"version": 2, "entries": stored["entries"]}),
        json.dumps({"version": 1, "entries": [1, 2]}),
        json.dumps({"version": 1, "entries": {key: [{"module": "acts"}]}}),
        json.dumps({"version": 1, "entries": {key: "acts"}}),
    ):
        (folder / "specs.json").write_text(broken)
        assert SpecCache(folder).get(config) == [], broken


def test_an_entry_put_again_unchanged_is_not_written_and_the_file_keeps_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "c.json"
    cache = CacheFile(path, version=1)
    cache.put("a", [1])
    os.utime(path, ns=(5, 5))
    cache.put("a", [1])
    assert path.stat().st_mtime_ns == 5  # the file already held it: not written again (a tick a minute)
    for index in range(ENTRIES + 3):
        cache.put(str(index), index)
    assert cache.get("a") is None  # the oldest went first
    assert cache.get("2") is None
    assert cache.get("3") == 3
    assert cache.get(str(ENTRIES + 2)) == ENTRIES + 2
    assert not list(path.parent.glob(".*.tmp"))
