"""The dashboard of a real `cronwright serve` process, black-box: `cronwright dashboard` prints a link that
logs the operator in once; it refuses plainly with no serve; the event stream says `changed` after a CLI
change, which reaches serve by its SIGUSR1 (semantic 25)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cli.blackbox import CRONWRIGHT, Cronwright, wait_for
from cli.test_serve_idle import add_python_target, serving, woken

LISTENING = re.compile(r"listening on (http://[0-9.:]+)")


@pytest.fixture
def cw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cronwright:
    if not CRONWRIGHT.exists():
        pytest.skip(f"the cronwright binary is not installed next to {CRONWRIGHT.parent}")
    # serve writes its link key, and `dashboard` reads it, under this test's own data folder.
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return Cronwright(tmp_path)


@pytest.fixture
def served(cw: Cronwright) -> Iterator[str]:
    """A running serve's base URL, as the link `cronwright dashboard` prints names it."""
    add_python_target(cw)  # `serving` waits for serve's warm worker
    with serving(cw):
        yield _base(_link(cw))


def _base(link: str) -> str:
    return str(httpx.URL(link).copy_with(path="/", query=None)).rstrip("/")


def _link(cw: Cronwright) -> str:
    # The key file is written just after the startup line: wait for `dashboard` to find it.
    wait_for("serve to publish its dashboard key", lambda: cw.run("dashboard", "--no-browser").rc == 0)
    result = cw.ok("dashboard", "--no-browser")
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result
    assert "once, within a minute" in result.stderr
    return lines[0]


def _log_in(client: httpx.Client, link: str) -> httpx.Response:
    token = httpx.URL(link).params["token"]
    assert client.get(link).status_code == 200
    return client.post(
        "/ui/login/link", data={"token": token}, headers={"Origin": str(client.base_url).rstrip("/")}
    )


def test_the_printed_link_logs_the_operator_in_once(cw: Cronwright, served: str) -> None:
    link = _link(cw)
    assert link.startswith(f"{served}/ui/login/link?token=")
    with httpx.Client(base_url=served, timeout=10) as client:
        assert _log_in(client, link).status_code == 303
        assert client.get("/ui/nodes").status_code == 200
    with httpx.Client(base_url=served, timeout=10) as again:
        assert _log_in(again, link).status_code == 401
        assert again.get("/ui/nodes").status_code == 303


def test_dashboard_refuses_plainly_without_a_serve(cw: Cronwright) -> None:
    result = cw.run("dashboard", "--no-browser")
    assert result.rc == 1
    assert result.stdout == ""
    assert "cronwright serve" in result.stderr


def test_the_stream_says_changed_after_a_cli_change(cw: Cronwright, served: str) -> None:
    with httpx.Client(base_url=served, timeout=30) as client:
        assert _log_in(client, _link(cw)).status_code == 303
        with client.stream("GET", "/ui/events") as stream:
            lines = stream.iter_lines()
            assert next(line for line in lines if line.startswith("event:")) == "event: ready"
            cw.ok("add", "soon", "--target", "sh", "--action", "log", "--every", "1h")
            assert next(line for line in lines if line.startswith("event:")) == "event: changed"
        listed = client.get("/ui/").text
    assert "soon" in listed


def test_a_serve_whose_dashboard_was_closed_sleeps_again(cw: Cronwright) -> None:
    """sse-starlette would leave a watcher polling twice a second once a stream had been served; the
    dashboard's stream has none, so a serve with no page open does not wake (semantic 25)."""
    add_python_target(cw)  # `serving` waits for serve's warm worker
    with serving(cw) as serve:
        url = _link(cw)
        with httpx.Client(base_url=_base(url), timeout=30) as client:
            assert _log_in(client, url).status_code == 303
            with client.stream("GET", "/ui/events") as stream:
                assert (
                    next(line for line in stream.iter_lines() if line.startswith("event:")) == "event: ready"
                )
        assert woken(serve) == {}, "these threads woke with no dashboard open"
