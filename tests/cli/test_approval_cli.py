"""Approval, black-box (semantic 37): an agent's schedule made over HTTP waits, pending, until the operator's
`cronwright approve`; `reject` deletes one; `list --state pending` shows what waits."""

from __future__ import annotations

import hashlib

import httpx

from .blackbox import Cronwright, Lines
from .test_audit_cli import TOKEN, listening_url


def test_the_operator_approves_and_rejects_with_the_cli(cw: Cronwright) -> None:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    with cw.config.open("a", encoding="utf-8") as config:
        config.write(f'\n[sources.agent]\ntoken_sha256 = "{digest}"\ntargets = ["sh.*"]\n')
        config.write('approval = "operator"\n')
    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            url = listening_url(stderr)
            for name in ("keep", "drop"):
                job = {"name": name, "target": "sh", "action": "log", "schedule": {"every": "1h"}}
                reply = httpx.post(f"{url}/v1/call", json={"action": "create_job", "job": job},
                                   headers={"Authorization": f"Bearer {TOKEN}"}).json()  # fmt: skip
                assert reply["awaiting_approval"] is True and reply["job"]["state"] == "pending", reply
        finally:
            serve.terminate()
            serve.wait(timeout=15)
            stderr.join()

    waiting = cw.json("list", "--state", "pending")["jobs"]
    approved = cw.json("approve", "keep", "--note", "looks right")
    human = cw.ok("reject", "drop", "--note", "too often").stdout
    again = cw.run("approve", "keep")

    assert [job["name"] for job in waiting] == ["drop", "keep"]
    assert approved["job"]["state"] == "active" and approved["job"]["next_run_at"] is not None
    assert human.startswith("rejected drop")
    assert again.rc == 1 and "job_not_pending" in again.stderr
    assert [job["name"] for job in cw.json("list")["jobs"]] == ["keep"]
    decisions = [(e["action"], e["name"], e["note"]) for e in cw.json("audit", "--source", "cli")["entries"]]
    assert decisions == [("reject", "drop", "too often"), ("approve", "keep", "looks right")]
