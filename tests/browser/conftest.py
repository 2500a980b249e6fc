"""The dashboard in a real browser: Playwright for Python driving Debian's chromium against a real
`cronwright serve` process (issue 17, semantic 40).

One serve and one chromium for the browser module (not the session: Playwright's sync API keeps an
event loop running while it is up, which would break later tests that call asyncio.run); each test gets
a fresh browser context (its own cookies). The serve runs under faketime from FAKED_START (Thursday
2027-03-25, 12:00 in Berlin), so the week its timeline shows holds Berlin's spring-forward
(2027-03-28T02:00+01:00 becomes 03:00+02:00); its clock then runs at the real rate, and the CLI is
started at the same faked instant plus the time elapsed.

Screenshots go to $CRONWRIGHT_SCREENSHOTS, or to the session's tmp folder under `screenshots/`; the path is
printed at the end of the session. The suite skips, saying why, only where chromium or Playwright is absent;
`.ci/run` installs both.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from browser.world import CHROMIUM, DESKTOP, FLAGS, PLAYWRIGHT, World, configure, serve_at_faked_start
from cli.blackbox import CRONWRIGHT, Cronwright

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    if not PLAYWRIGHT:
        reason = "the playwright package is not installed (pip install -e '.[test]')"
    elif not CHROMIUM.exists():
        reason = f"chromium is not installed at {CHROMIUM} (apt-get install chromium; .ci/run does)"
    elif shutil.which("faketime") is None:
        reason = "faketime is not installed (apt-get install faketime; .ci/run does)"
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=reason))


_SHOTS: list[Path] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for folder in _SHOTS:
        terminalreporter.write_line(f"browser screenshots: {folder}")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    folder = tmp_path_factory.mktemp("browser-serve")
    shots = Path(os.environ.get("CRONWRIGHT_SCREENSHOTS") or tmp_path_factory.getbasetemp() / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        # serve writes its link key, and `dashboard` reads it, under this session's own data folder.
        patch.setenv("XDG_DATA_HOME", str(folder / "data"))
        cw = Cronwright(folder)
        configure(cw)
        started = time.monotonic()
        with serve_at_faked_start(cw) as url:
            yield World(cw, url, started, shots)
    _SHOTS.append(shots)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # launch() gives every run a fresh, throwaway profile (its own user-data-dir).
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def context(chromium: Browser, world: World) -> Iterator[BrowserContext]:
    made = chromium.new_context(base_url=world.url, viewport=DESKTOP)
    made.set_default_timeout(15_000)
    yield made
    made.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()
