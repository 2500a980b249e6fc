"""A rolling upgrade on PostgreSQL (issue 38): a node of the previous release (the last commit before the
newest migration, installed from git into a venv of its own) and a node of this one serve one store side by
side. The old node makes the schema; the new one migrates it as it boots; both fire on the migrated schema,
and no occurrence runs twice.

The old release is built from this checkout's history: without git (an sdist) or PostgreSQL the test
skips. Installing it costs a minute (pip, from its cache after the first time); the venv is kept per
commit under $XDG_CACHE_HOME/cronwright-tests, so a second run locally costs seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

import pg
from cli.blackbox import Cronwright, Lines, wait_for

REPO = Path(__file__).resolve().parents[2]
NEWEST = sorted((REPO / "src/cronwright/store/sql/postgres/migrations").glob("*.sql"))[-1]
JOBS = 4


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def previous_release() -> str:
    """The last commit whose schema is one version older than this checkout's: the parent of the first
    commit that had as many migrations as now (a migration renamed or edited before it was released
    does not count as a newer release)."""
    folder = str(NEWEST.parent.relative_to(REPO))
    known = len(list(NEWEST.parent.glob("*.sql")))
    try:
        touched = git("log", "--format=%H", "--", folder).split()
        first = None
        for commit in touched:  # newest first
            if len(git("ls-tree", "--name-only", commit, f"{folder}/").split()) < known:
                break
            first = commit
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"no git history to build the previous release from: {error}")
    if first is None:
        pytest.skip(f"{NEWEST.name} is not committed yet")
    return git("rev-parse", f"{first}~1")


def old_venv(commit: str) -> Path:
    """A venv with cronwright as of `commit` (and its postgres extra), made once per commit."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cronwright-tests"
    venv = cache / f"release-{commit[:12]}"
    if (venv / "bin" / "cronwright").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    source = cache / f"source-{commit[:12]}"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True, timeout=60)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin/pip"), "install", "-q", f"{source}[postgres]"],
        check=True, timeout=600, capture_output=True,
    )  # fmt: skip
    shutil.rmtree(source, ignore_errors=True)
    return venv


def old_env() -> dict[str, str]:
    """The old release's own environment: nothing of this checkout on its path."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "CRONWRIGHT_"))}


@contextmanager
def serving(argv: list[str], env: dict[str, str], cwd: Path) -> Iterator[subprocess.Popen[str]]:
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                          cwd=cwd) as serve:  # fmt: skip
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=60)
            yield serve
        finally:
            if serve.poll() is None:
                serve.terminate()
                try:
                    serve.wait(30)
                except subprocess.TimeoutExpired:
                    serve.kill()
            stderr.join()


def runs_by_node(server: str, schema: str, since: datetime) -> Counter[str]:
    with pg.connect(server) as connection:
        rows = connection.execute(
            f"SELECT data->>'node' FROM \"{schema}\".runs WHERE finished_at > %s", (since,)
        ).fetchall()
    return Counter(str(row[0]) for row in rows)


def ran_by(counts: Counter[str], pid: int) -> int:
    """The runs of the serve with this pid (a node id is host:pid:...)."""
    return sum(count for node, count in counts.items() if f":{pid}:" in node)


def version(server: str, schema: str) -> int:
    with pg.connect(server) as connection:
        row = connection.execute(f'SELECT max(version) FROM "{schema}".schema_migrations').fetchone()
    assert row is not None
    return int(str(row[0]))


def test_a_node_of_the_previous_release_and_one_of_this_release_share_a_store(tmp_path: Path) -> None:
    with pg.scratch_schema() as (server, schema):
        venv = old_venv(previous_release())
        cw = Cronwright(tmp_path, store=pg.with_params(server, schema=schema), min_period="1s", zone="UTC")
        old = [str(venv / "bin/cronwright"), "--config", str(cw.config)]
        known = int(NEWEST.name.split("_")[0])
        with serving([*old, "serve"], old_env(), tmp_path) as old_serve:
            assert version(server, schema) == known - 1
            for index in range(JOBS):
                add = [*old, "add", f"job-{index}", "--target", "sh", "--action", "log", "--every", "1s"]
                subprocess.run(add, env=old_env(), cwd=tmp_path, check=True, capture_output=True, timeout=60)
            new_argv, new_env = cw.command("serve")
            with serving(new_argv, new_env, tmp_path) as new_serve:
                migrated = datetime.now(UTC)
                assert version(server, schema) == known
                # Side by side on the migrated schema, whichever claims an occurrence first runs it: the
                # new node does, and the old one may (it often loses every race to the node that woke it).
                side_by_side = lambda: sum(runs_by_node(server, schema, migrated).values()) >= 3 * JOBS  # noqa: E731
                wait_for("a few rounds of firing side by side", side_by_side, 30)
                # Which node wins each race is the machine's to say: on a 2-core VM the old node won all of
                # the first 12 in about half the runs, so the new node's first win is waited for, not counted.
                new_ran = lambda: ran_by(runs_by_node(server, schema, migrated), new_serve.pid) >= 1  # noqa: E731
                wait_for("an occurrence run by the new node", new_ran, 60)
                new_serve.terminate()
                assert new_serve.wait(30) == 0
            stopped = datetime.now(UTC)
            # The old node, alone again, goes on firing on the schema it does not know.
            alone = lambda: ran_by(runs_by_node(server, schema, stopped), old_serve.pid) >= 4  # noqa: E731
            wait_for("the old node to fire alone", alone, 30)
            assert old_serve.poll() is None
        fires = cw.fires()
        assert len(fires) > JOBS * 5
        twice = [line for line, count in Counter(fires).items() if count > 1]
        assert not twice, f"occurrences ran twice: {twice}"
