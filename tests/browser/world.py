"""The browser tests' world: a real serve under faketime, its sources, and helpers for pages."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import httpx

from cli.blackbox import Cronwright, Lines, Result, wait_for
from serving import sha256

if TYPE_CHECKING:
    from playwright.sync_api import Page, ViewportSize

CHROMIUM = Path(os.environ.get("CRONWRIGHT_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FAKED_START = datetime(2027, 3, 25, 11, 0, tzinfo=UTC)  # 12:00+01:00 in Berlin
TOKENS = {"agent": "agent-browser-token", "other": "other-browser-token"}
HOSTILE_ARG = "<script>alert(1)</script>"
HOSTILE_NOTE = '<img src=x onerror="alert(2)">'
HOSTILE_OUTPUT = "<script>alert(3)</script><img src=x onerror=alert(4)>"
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 375, "height": 740}
LISTENING = re.compile(r"listening on (http://[0-9.:]+)")

# The test extra installs playwright; conftest skips the suite without it.
PLAYWRIGHT = importlib.util.find_spec("playwright") is not None


@dataclass
class World:
    """The serve under test: its folder, its URL and how to run the CLI at its (faked) now."""

    cw: Cronwright
    url: str
    started: float  # time.monotonic() when serve started at FAKED_START
    shots: Path

    def now(self) -> datetime:
        return FAKED_START + timedelta(seconds=time.monotonic() - self.started)

    def cli(self, *args: str) -> Result:
        return self.cw.run(*args, at=self.now().isoformat())

    def cli_json(self, *args: str) -> dict[str, Any]:
        result = self.cli(*args, "--json")
        assert result.rc == 0, result
        reply: dict[str, Any] = result.json()
        return reply

    def call(self, source: str, request: dict[str, Any]) -> dict[str, Any]:
        """A protocol request through the HTTP API, as `source` (its bearer token)."""
        answer = httpx.post(
            f"{self.url}/v1/call",
            json=request,
            headers={"Authorization": f"Bearer {TOKENS[source]}"},
            timeout=30,
        )
        reply: dict[str, Any] = answer.json()
        return reply

    def create(self, source: str, name: str, **job: Any) -> dict[str, Any]:
        spec = {"name": name, "target": "sh", "action": "log", **job}
        spec.setdefault("schedule", {"cron": "0 9 * * *", "tz": "Europe/Berlin"})
        reply = self.call(source, {"action": "create_job", "job": spec})
        assert reply["ok"], reply
        job_row: dict[str, Any] = reply["job"]
        return job_row

    def link(self) -> str:
        """A fresh one-time operator link, as `cronwright dashboard` prints it."""
        wait_for("serve to publish its dashboard key", lambda: self.cli("dashboard", "--no-browser").rc == 0)
        result = self.cli("dashboard", "--no-browser")
        assert result.rc == 0, result
        (line,) = result.stdout.splitlines()
        return line


def configure(cw: Cronwright) -> None:
    lines = [
        "",
        "[targets.sh.actions.hostile]",
        f"argv = {json.dumps(['/bin/sh', '-c', f'echo {_sh_quote(HOSTILE_OUTPUT)}'])}",
        'timeout = "1m"',
    ]
    lines += ["", "[calendars.holidays]", 'dates = ["2027-03-29"]']
    for source, token in TOKENS.items():
        lines += ["", f"[sources.{source}]", f'token_sha256 = "{sha256(token)}"', 'targets = ["sh.*"]']
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + "\n".join(lines) + "\n", encoding="utf-8")


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def log_in(page: Page, source: str) -> None:
    page.goto("/ui/login")
    page.get_by_label("Your source's bearer token").fill(TOKENS[source])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/ui/")


def shoot(page: Page, world: World, name: str) -> None:
    """The page at desktop width and at 375 px, full length, and at 375 px in dark mode."""
    shots: tuple[tuple[str, ViewportSize, Literal["light", "dark"]], ...] = (
        ("desktop", DESKTOP, "light"),
        ("375px", PHONE, "light"),
        ("375px-dark", PHONE, "dark"),
    )
    for label, size, scheme in shots:
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size(size)
        page.screenshot(path=str(world.shots / f"{name}-{label}.png"), full_page=True)
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(DESKTOP)


@contextmanager
def serve_at_faked_start(cw: Cronwright) -> Iterator[str]:
    """A real `cronwright serve` whose clock starts at FAKED_START; yields its URL."""
    with cw.popen("serve", at=FAKED_START.isoformat()) as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            found = next(LISTENING.search(line) for line in stderr.seen if "listening on" in line)
            assert found is not None
            yield found.group(1)
        finally:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(timeout=15)
            except subprocess.TimeoutExpired:
                serve.kill()
            stderr.join()
