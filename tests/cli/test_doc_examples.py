"""The docs' examples run as written against the starter config `cronwright init` writes (issue 35, defect 7).

Each covered document's shell commands run in a fresh starter folder, in the document's order, through a
shell, with `cronwright` on PATH (and the README's `.venv/bin/cronwright` where it says): each must succeed.
docs/python.md's examples run against a `serve` of the starter config, with the source its text says to
add (`cronwright token new`), the serve's address and that token put in for the example's placeholders.

Covered: README.md, docs/calendars.md, docs/jitter.md, docs/overlap.md, docs/several-expressions.md,
docs/protocol.md, docs/dst.md, the `token new` of docs/security.md, alerts.md's `notifications`,
docs/python.md, and docs/backfill.md's worked example, each command at the instant its comment names
(libfaketime), checked against the output the doc shows. Not run here: what needs more than the starter
(serve and postgres.md's store, a notify channel for alerts.md's `notify-test`, dashboard.md's browser,
security.md's systemd and MCP client).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from faketime import faketime_env

from .blackbox import CRONWRIGHT, SITE, TIMEOUT, Lines, faketime_spec, needs_faketime, utc, wait_for

ROOT = Path(__file__).resolve().parents[2]
SHELL_DOCS = (
    "README.md", "docs/calendars.md", "docs/jitter.md", "docs/overlap.md", "docs/several-expressions.md",
    "docs/protocol.md", "docs/dst.md", "docs/security.md", "docs/alerts.md",
)  # fmt: skip
# Verbs that need what a starter folder does not have: a serve, a channel, a browser, a database.
NEEDS_MORE = {"serve", "dashboard", "notify-test", "make"}
FENCE = re.compile(r"^ *```[a-z]*\n(.*?)^ *```", re.S | re.M)
COMMAND = re.compile(r"^ *(?:\$ )?((?:\.venv/bin/)?cronwright .*)$")


def commands(doc: str) -> list[str]:
    """The doc's cronwright command lines, in order: a prompt's (`$ cronwright ...`) or a line of its own
    in a fence, joined over backslash continuations; its output lines are not commands."""
    found: list[str] = []
    for fence in FENCE.finditer((ROOT / doc).read_text(encoding="utf-8")):
        text = fence.group(1).replace("\\\n", " ")
        for line in text.splitlines():
            match = COMMAND.match(line)
            if match is None:
                continue
            words = shlex.split(match.group(1), comments=True)
            if words[1] not in NEEDS_MORE and not words[1].startswith("-"):
                found.append(shlex.join(words))
    return found


@pytest.fixture
def starter(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder with what `cronwright init` writes, and an environment with `cronwright` on PATH (and
    `.venv/bin/cronwright`, as the README calls it after `make run`)."""
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    env = {key: value for key, value in os.environ.items() if key not in ("CRONWRIGHT_CONFIG", "COLUMNS")}
    env["PATH"] = f"{CRONWRIGHT.parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["cronwright", "init"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "cronwright").symlink_to(CRONWRIGHT)
    return tmp_path, env


def test_the_covered_docs_have_commands_to_run() -> None:
    counted = {doc: len(commands(doc)) for doc in SHELL_DOCS}
    assert all(counted.values()) and sum(counted.values()) >= 20, counted


@contextmanager
def serving(folder: Path, env: dict[str, str]) -> Iterator[str]:
    """`cronwright serve` of the folder's config, on a free port (the starter's 8765 may be taken here),
    until the block ends; yields its URL."""
    config = folder / "cronwright.toml"
    text = config.read_text(encoding="utf-8").replace("[node]\n", '[node]\nlisten = "127.0.0.1:0"\n', 1)
    config.write_text(text, encoding="utf-8")
    with subprocess.Popen(
        ["cronwright", "serve"], cwd=folder, env=env, stderr=subprocess.PIPE, text=True
    ) as serve:  # its exit closes the pipe
        said = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: said.saw("listening on"), timeout=TIMEOUT)
            found = (re.search(r"listening on (http://\S+)", line) for line in said.seen)
            yield next(match.group(1) for match in found if match)
        finally:
            serve.terminate()
            serve.wait(timeout=TIMEOUT)
            said.join()


@pytest.mark.parametrize("doc", SHELL_DOCS)
def test_a_doc_s_shell_examples_run_as_written_against_the_starter_config(
    doc: str, starter: tuple[Path, dict[str, str]]
) -> None:
    folder, env = starter
    with ExitStack() as stack:
        if doc == "README.md":  # its commands run "in another terminal", beside `make run`'s serve
            stack.enter_context(serving(folder, env))
        for command in commands(doc):
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            assert done.returncode == 0, f"{doc}: {command}\n{done.stdout}{done.stderr}"


# A worked example's instant, as its comment names it: "# 2027-10-31 07:00 CET".
AT = re.compile(r"# (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}) (CES?T)\s*$")
OFFSETS = {"CET": "+01:00", "CEST": "+02:00"}


def timed_commands(doc: str) -> list[tuple[str, str, list[str]]]:
    """The doc's `$ cronwright` lines with the instant each runs at (its comment's, else the one before)
    and the output lines the doc shows under it, up to a "..." or the next command."""
    found: list[tuple[str, str, list[str]]] = []
    at = ""
    for fence in FENCE.finditer((ROOT / doc).read_text(encoding="utf-8")):
        for line in fence.group(1).splitlines():
            if line.startswith("$ cronwright "):
                named = AT.search(line)
                if named:
                    at = f"{named.group(1)}T{named.group(2)}:00{OFFSETS[named.group(3)]}"
                found.append((shlex.join(shlex.split(line[2:], comments=True)), at, []))
            elif found and line.strip() != "...":
                found[-1][2].append(line)
    return found


@needs_faketime
def test_backfill_md_s_worked_example_runs_at_its_instants_and_prints_what_it_says(
    starter: tuple[Path, dict[str, str]],
) -> None:
    """The night the clocks go back, as docs/backfill.md tells it: each command at the instant its comment
    names, in the node zone the example reads its cron in (the starter's `zone` line, uncommented)."""
    folder, env = starter
    config = folder / "cronwright.toml"
    config.write_text(config.read_text().replace('# zone = "Europe/Berlin"', 'zone = "Europe/Berlin"', 1))
    steps = timed_commands("docs/backfill.md")
    assert len(steps) == 7 and all(at for _, at, _ in steps), steps
    for command, at, shown in steps:
        faked = {
            **env, **faketime_env(faketime_spec(utc(at))), "TZ": "UTC", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(SITE), env.get("PYTHONPATH")])),
        }  # fmt: skip
        done = subprocess.run(
            ["/bin/sh", "-c", command], cwd=folder, env=faked, capture_output=True, text=True, timeout=TIMEOUT
        )
        assert done.returncode == 0, f"{command} at {at}\n{done.stdout}{done.stderr}"
        if "history" not in command:  # its durations and finishing seconds are the run's own
            printed = [_to_the_minute(line) for line in done.stdout.splitlines()]
            assert printed[: len(shown)] == [_to_the_minute(line) for line in shown], f"{command} at {at}"


def _to_the_minute(line: str) -> str:
    # A lifetime ends its length after the instant the command ran, a second or so after the one named.
    return re.sub(r"(ends \d{4}-\d\d-\d\dT\d\d:\d\d):\d\d", r"\1", line)


def python_examples() -> str:
    return "\n".join(
        fence.group(1)
        for fence in re.finditer(r"```python\n(.*?)```", (ROOT / "docs/python.md").read_text(), re.S)
    )


def test_python_md_s_examples_run_against_a_serve_of_the_starter_config(
    starter: tuple[Path, dict[str, str]],
) -> None:
    folder, env = starter
    # What python.md says to do first: a source for the script, made with `token new`.
    made = subprocess.run(["cronwright", "token", "new", "agent", "--json"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert made.returncode == 0, made
    token = json.loads(made.stdout)
    config = folder / "cronwright.toml"
    config.write_text(f'{config.read_text()}\n{token["toml"]}\ntargets = ["reports.*"]\n', encoding="utf-8")
    script = python_examples()
    assert 'Client.http("http://127.0.0.1:8765", token="the source\'s token")' in script

    with serving(folder, env) as url:
        ran = subprocess.run(
            [sys.executable, "-c", script.replace("http://127.0.0.1:8765", url).replace(
                "the source's token", token["token"])],
            cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "not_found" in ran.stdout and "'nightly-report'" not in ran.stderr, ran.stdout
