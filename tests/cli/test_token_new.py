"""`cronwright token new SOURCE`, black-box: a fresh random token and the config lines with its digest,
which, pasted into the config as printed, let that token in over HTTP (issue 35, defect 5)."""

from __future__ import annotations

import hashlib
import json
import tomllib

import httpx

from .blackbox import Cronwright, Lines
from .test_audit_cli import listening_url


def test_the_json_holds_a_random_token_and_its_digest(cw: Cronwright) -> None:
    first = cw.ok("token", "new", "agent", "--json").stdout
    second = cw.ok("token", "new", "agent", "--json").stdout
    made, again = json.loads(first), json.loads(second)

    assert made["source"] == "agent"
    assert len(made["token"]) == 43  # 32 random bytes, URL-safe base64 without padding
    assert made["token_sha256"] == hashlib.sha256(made["token"].encode()).hexdigest()
    assert tomllib.loads(made["toml"]) == {"sources": {"agent": {"token_sha256": made["token_sha256"]}}}
    assert again["token"] != made["token"] and again["token_sha256"] != made["token_sha256"]


def test_a_source_name_that_is_no_bare_key_is_quoted(cw: Cronwright) -> None:
    made = json.loads(cw.ok("token", "new", "the agent", "--json").stdout)

    assert tomllib.loads(made["toml"])["sources"]["the agent"]["token_sha256"] == made["token_sha256"]


def test_the_operator_needs_no_token(cw: Cronwright) -> None:
    refused = cw.run("token", "new", "cli")

    assert refused.rc == 2
    assert "local operator" in refused.stderr and refused.stdout == ""


def test_the_printed_lines_pasted_into_the_config_let_the_printed_token_in(cw: Cronwright) -> None:
    printed = cw.ok("token", "new", "agent").stdout
    token = printed.split("\n\n")[1].strip()
    pasted = printed[printed.index("[sources.agent]") :]
    with cw.config.open("a", encoding="utf-8") as config:
        config.write(f'\n{pasted}targets = ["sh.*"]\n')

    with cw.popen("serve") as serve:
        stderr = Lines(serve.stderr)
        try:
            url = listening_url(stderr)
            right = httpx.post(f"{url}/v1/call", json={"action": "list"}, headers=bearer(token))
            wrong = httpx.post(f"{url}/v1/call", json={"action": "list"}, headers=bearer("test"))
        finally:
            serve.terminate()
            serve.wait(timeout=20)
            stderr.join()

    assert right.status_code == 200 and right.json()["ok"] is True
    assert wrong.status_code == 401


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
