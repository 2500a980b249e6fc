"""Reloading the config of a running serve (issue 38): SIGHUP, or `cronwright reload`, applies a new
target, a rotated token and a new alert channel at once, with no firing missed or doubled; a config that
does not validate, or that changes what only a restart can, changes nothing and says why."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import pytest

from cli.blackbox import Cronwright, Lines, wait_for
from cronwright.core.sources import token_digest
from notify.receivers import SECRET, Receiver, http_receiver

OLD_TOKEN, NEW_TOKEN = "token-before-the-reload-0123456789", "token-after-the-reload-0123456789"
ACTIONS = """
import cronwright

@cronwright.action
def beat(ctx: cronwright.Context, path: str) -> None:
    with open(path, "a") as out:
        out.write(f"{ctx.fire_id} {ctx.scheduled_for.isoformat()}\\n")
"""


def config_text(cw: Cronwright, base: str, token: str, *, reloaded: bool, receiver: str = "") -> str:
    """The base config (node, sh, py) with a source `agent`, and after the reload a new target `late`, the
    agent allowed it with its token rotated, and an alert channel for `late`'s failures."""
    allowed = '["py.*", "late.*"]' if reloaded else '["py.*"]'
    text = base + (
        f'\n[sources.agent]\ntoken_sha256 = ["{token_digest(token)}"]\ntargets = {allowed}\n'
        'min_period = "1s"\n'
    )
    if reloaded:
        mark = cw.folder / "late.marked"
        text += (
            '\n[targets.late]\nkind = "command"\n'
            f'[targets.late.actions.mark]\nargv = ["/bin/sh", "-c", "echo marked > {mark}"]\n'
            '[targets.late.actions.boom]\nargv = ["/bin/sh", "-c", "exit 1"]\n'
            f'\n[notify.ops]\nkind = "webhook"\nurl = "{receiver}"\nsigning_secret = "ALERT_SECRET"\n'
            '\n[[alert]]\non = ["failed"]\nmatch = { target = "late.*" }\nnotify = ["ops"]\n'
        )
    return text


@contextmanager
def serve_at(cw: Cronwright) -> Iterator[tuple[subprocess.Popen[str], str, Lines]]:
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            line = next(line for line in stderr.seen if "listening on" in line)
            yield serve, json.loads(line)["url"], stderr
        finally:
            if serve.poll() is None:
                serve.send_signal(signal.SIGTERM)
                try:
                    serve.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    serve.kill()
            stderr.join()


def beats(path: Path) -> list[tuple[str, datetime]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [(fire_id, datetime.fromisoformat(at)) for fire_id, at in (line.split() for line in lines)]


def status_code(url: str, token: str) -> int:
    return httpx.get(f"{url}/v1/status", headers={"Authorization": f"Bearer {token}"}, timeout=10).status_code


def create_as_agent(url: str, token: str, name: str, target: str, action: str) -> dict[str, object]:
    job = {
        "name": name,
        "target": target,
        "action": action,
        "run_at": datetime.now().astimezone().isoformat(),
    }
    reply = httpx.post(
        f"{url}/v1/call",
        json={"action": "create_job", "job": job},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    answer = reply.json()
    assert isinstance(answer, dict)
    return answer


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with http_receiver() as made:
        yield made


def test_a_reload_applies_a_target_a_rotated_token_and_a_channel_without_missing_a_firing(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALERT_SECRET", SECRET)
    cw = Cronwright(tmp_path, min_period="1s")
    cw.add_python_target(ACTIONS, module="reload_acts")
    base = cw.config.read_text()
    cw.config.write_text(config_text(cw, base, OLD_TOKEN, reloaded=False))
    log = tmp_path / "beats.log"
    with serve_at(cw) as (serve, url, stderr), ExitStack() as stack:
        cw.ok("add", "beat", "--target", "py", "--action", "beat", "--args", json.dumps({"path": str(log)}),
              "--every", "1s")  # fmt: skip
        wait_for("three beats", lambda: len(beats(log)) >= 3)
        # A dashboard session started with the token that the reload rotates out.
        dashboard = httpx.Client(base_url=url, timeout=10)
        stack.callback(dashboard.close)
        login = dashboard.post("/ui/login", data={"token": OLD_TOKEN}, headers={"Origin": url})
        assert login.status_code == 303 and dashboard.cookies, login.text[:300]
        assert status_code(url, OLD_TOKEN) == 200 and status_code(url, NEW_TOKEN) == 401
        refused = create_as_agent(url, OLD_TOKEN, "too-soon", "late", "mark")
        assert refused["ok"] is False

        cw.config.write_text(config_text(cw, base, NEW_TOKEN, reloaded=True, receiver=receiver.url))
        # A run in flight across the reload: it is neither stopped nor held up by it.
        cw.ok(
            "add",
            "slow",
            "--target",
            "sh",
            "--action",
            "slow",
            "--at",
            datetime.now().astimezone().isoformat(),
        )
        wait_for("the slow run to start", cw.started.exists)
        before_reload = datetime.now().astimezone()
        done = cw.run("reload")
        assert done.rc == 0, done
        cw.release.touch()
        wait_for("the slow run to end", lambda: cw.json("show", "slow")["job"]["last_run"] is not None)
        assert cw.json("show", "slow")["job"]["last_run"]["outcome"] == "ok"
        assert all(word in done.stdout for word in ("targets", "sources", "notify", "alert")), done.stdout

        # At once: the old token is refused, the new one accepted, and the new target can be scheduled.
        assert status_code(url, OLD_TOKEN) == 401 and status_code(url, NEW_TOKEN) == 200
        created = create_as_agent(url, NEW_TOKEN, "late-mark", "late", "mark")
        assert created["ok"] is True, created
        wait_for("the new target to run", (tmp_path / "late.marked").exists)
        # The new channel: a failure of the new target's is delivered to it.
        cw.ok("add", "late-boom", "--target", "late", "--action", "boom", "--at",
              datetime.now().astimezone().isoformat())  # fmt: skip
        wait_for("the failure's notification", lambda: bool(receiver.bodies()), timeout=30)
        assert receiver.bodies()[0]["transition"] == "failed"
        assert receiver.bodies()[0]["job"]["name"] == "late-boom"
        # The session survived the reload (and the rotation of the token it began with).
        assert dashboard.get("/ui/").status_code == 200

        # A broken config, by SIGHUP as systemd sends it: nothing changes, and the log says why.
        good = cw.config.read_text()
        cw.config.write_text(good.replace("[node]\n", "[node]\nbogus_setting = 1\n", 1))
        os.kill(serve.pid, signal.SIGHUP)
        wait_for("the refusal in the log", lambda: stderr.saw("bogus_setting"))
        refusal = json.loads(next(line for line in stderr.seen if "bogus_setting" in line))
        assert refusal["reload"] == "refused" and "not reloaded" in refusal["message"]
        # ... and by `cronwright reload`: exit 1 with the reason.
        done = cw.run("reload")
        assert done.rc == 1 and "bogus_setting" in done.stderr and "nothing changed" in done.stderr, done
        # What only a restart can change is named, and nothing else of that config is taken.
        moved = good.replace('listen = "127.0.0.1:0"', 'listen = "127.0.0.1:1"').replace(NEW_TOKEN, OLD_TOKEN)
        cw.config.write_text(moved.replace(token_digest(NEW_TOKEN), token_digest(OLD_TOKEN)))
        done = cw.run("reload")
        assert done.rc == 1 and "node.listen" in done.stderr and "restart" in done.stderr, done
        # `status` says so too: the serve's over HTTP, and the CLI's from what the serve published.
        said = httpx.get(f"{url}/v1/status", headers={"Authorization": f"Bearer {NEW_TOKEN}"}, timeout=10)
        last = said.json()["node"]["last_reload"]
        assert last["ok"] is False and "node.listen" in last["message"]
        assert "node.listen" in cw.ok("status").stdout
        assert status_code(url, OLD_TOKEN) == 401 and status_code(url, NEW_TOKEN) == 200
        after_reloads = datetime.now().astimezone()
        wait_for("beats after the reloads", lambda: beats(log)[-1][1] > after_reloads + timedelta(seconds=1))
        cw.ok("pause", "beat")

    fired = beats(log)
    fire_ids = [fire_id for fire_id, _ in fired]
    instants = sorted(at for _, at in fired)
    assert len(set(fire_ids)) == len(fire_ids), "an occurrence ran twice"
    assert instants[0] < before_reload and instants[-1] > after_reloads
    gaps = [(a, b) for a, b in itertools.pairwise(instants) if b - a != timedelta(seconds=1)]
    assert not gaps, f"occurrences missed across the reloads: {gaps}"


def test_a_serve_that_found_its_config_in_its_folder_reloads_its_fronts_too(tmp_path: Path) -> None:
    """No --config: serve and `cronwright reload` find ./cronwright.toml. The tokens live in the fronts'
    process, so a rotated token is accepted there once `reload` has answered, not at some later time."""
    cw = Cronwright(tmp_path)
    base = cw.config.read_text()
    source = '\n[sources.agent]\ntoken_sha256 = ["{}"]\ntargets = ["sh.*"]\n'
    cw.config.write_text(base + source.format(token_digest(OLD_TOKEN)))
    argv, env = cw.command("serve")
    argv.remove("--config")
    argv.remove(str(cw.config))
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path) as serve:
        stderr = Lines(serve.stderr)
        try:
            wait_for("serve to listen", lambda: stderr.saw("listening on"), timeout=30)
            url = json.loads(next(line for line in stderr.seen if "listening on" in line))["url"]
            assert status_code(url, OLD_TOKEN) == 200

            cw.config.write_text(base + source.format(token_digest(NEW_TOKEN)))
            done = subprocess.run(
                [argv[0], "reload"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=90
            )

            assert done.returncode == 0, done
            assert status_code(url, NEW_TOKEN) == 200 and status_code(url, OLD_TOKEN) == 401
            wait_for("both processes to log the reload", lambda: stderr.saw('"process":"fronts"'), timeout=10)
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
            stderr.join()
