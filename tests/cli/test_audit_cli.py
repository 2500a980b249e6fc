"""The audit log, black-box: the real `serve` and `cronwright audit` on a real SQLite file (semantic 36)."""

from __future__ import annotations

import hashlib
import json

import httpx

from .blackbox import Cronwright, Lines, wait_for

TOKEN = "agent-audit-token"


def with_agent(cw: Cronwright) -> None:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    with cw.config.open("a", encoding="utf-8") as config:
        config.write(f'\n[sources.agent]\ntoken_sha256 = "{digest}"\ntargets = ["sh.*"]\n')


def listening_url(stderr: Lines) -> str:
    wait_for("serve to listen", lambda: stderr.saw('"url"'), timeout=15)
    for line in stderr.seen:
        url = json.loads(line).get("url")
        if url:
            return str(url)
    raise AssertionError("no url in serve's log")


def test_an_entry_survives_a_sigkill_right_after_the_reply(cw: Cronwright) -> None:
    with_agent(cw)
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            url = listening_url(stderr)
            job = {"name": "nightly", "target": "sh", "action": "log", "schedule": {"cron": "0 3 * * *"}}
            request = {"action": "create_job", "request_id": "agent-7", "job": job}
            reply = httpx.post(f"{url}/v1/call", json=request, headers={"Authorization": f"Bearer {TOKEN}"})
            serve.kill()  # SIGKILL the moment the reply is in: no shutdown, no checkpoint
        finally:
            serve.kill()
            serve.wait(timeout=15)
            stderr.join()
    assert reply.status_code == 200 and reply.json()["persistence"] == "persisted", reply.text

    found = cw.json("audit")["entries"]
    human = cw.ok("audit", "nightly").stdout

    assert [(e["action"], e["source"], e["name"], e["request_id"]) for e in found] == [
        ("create", "agent", "nightly", "agent-7")
    ]
    assert found[0]["changes"]["state"] == [None, "active"]
    assert "create" in human and "agent" in human and "state: - -> active" in human


def test_the_cli_reads_the_audit_by_schedule_and_source(cw: Cronwright) -> None:
    cw.ok("add", "report", "--target", "sh", "--action", "log", "--every", "1h")
    cw.ok("pause", "report")
    cw.ok("add", "other", "--target", "sh", "--action", "log", "--every", "1h")

    by_name = cw.json("audit", "report")["entries"]
    by_source = cw.json("audit", "--source", "agent")["entries"]
    page = cw.json("audit", "--limit", "1")

    assert [e["action"] for e in by_name] == ["pause", "create"]
    assert by_source == []
    assert [e["name"] for e in page["entries"]] == ["other"] and page["next_before"] is not None
