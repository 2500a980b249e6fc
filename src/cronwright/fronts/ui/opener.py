"""`cronwright dashboard`: the one-time link for the local operator, to the serve that runs with this
config, and a browser opened on it where there is one to open."""

from __future__ import annotations

import os
import sys
import webbrowser
from datetime import datetime
from pathlib import Path

import httpx

from cronwright.fronts.ui.links import Published, issue, key_file, read
from cronwright.fronts.wake import is_alive


class NoServe(Exception):
    """No serve of this config answers: the message says what to do."""


def find_serve(store_url: str, listen: str, folder: Path | None = None) -> Published:
    """The running serve of this store and listen address, as it published itself, once it answers."""
    path = key_file(store_url, listen, folder)
    published = read(path)
    if published is None:
        raise NoServe(
            f"no running `cronwright serve` of this config has published a dashboard ({path} is missing):"
            " start `cronwright serve` with this config first"
        )
    if not is_alive(published.pid):
        raise NoServe(f"the serve that published {path} (pid {published.pid}) is no longer running")
    try:
        answer = httpx.get(f"{published.url}/healthz", timeout=5)
    except httpx.HTTPError as error:
        raise NoServe(f"the serve at {published.url} does not answer: {error}") from None
    if answer.status_code != 200:
        raise NoServe(f"the serve at {published.url} answered /healthz with {answer.status_code}")
    return published


def link(published: Published, now: datetime) -> str:
    return f"{published.url}/ui/login/link?token={issue(published.key, now)}"


def open_browser(url: str) -> bool:
    """Opens `url` in a graphical browser where there is a display; never fails, never blocks on a
    text-mode browser in this terminal."""
    if sys.platform != "darwin" and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    try:
        return webbrowser.open(url, new=2)
    except Exception:
        return False
