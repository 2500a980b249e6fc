"""A source may have several token digests, so a token can be rotated without downtime (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronwright.config.settings import parse
from cronwright.errors import ConfigError
from serving import live_server, sha256

OLD, NEW = "old-agent-token", "new-agent-token"


def rotating(*tokens: str) -> dict[str, dict[str, object]]:
    return {"agent": {"token_sha256": [sha256(t) for t in tokens], "targets": ["reports.*"]}}


def headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_every_token_of_a_source_acts_as_it_and_a_removed_one_gets_401(tmp_path: Path) -> None:
    with live_server(tmp_path, rotating(OLD, NEW)) as served:
        for name, token in (("by-old", OLD), ("by-new", NEW)):
            request = {"action": "create_job", "job": {"name": name, "target": "reports", "action": "daily",
                                                       "schedule": {"cron": "0 7 * * *"}}}  # fmt: skip
            reply = served.http.post("/v1/call", json=request, headers=headers(token))
            assert reply.status_code == 200, reply.text
            assert reply.json()["job"]["created_by"] == "agent"
        listed = served.http.get("/v1/jobs", headers=headers(NEW)).json()["jobs"]
        assert [job["name"] for job in listed] == ["by-new", "by-old"]

    # The old digest removed from the config and the server restarted: the old token is no one's.
    with live_server(tmp_path, rotating(NEW)) as served:
        gone = served.http.post("/v1/call", json={"action": "list"}, headers=headers(OLD))
        assert (gone.status_code, gone.content) == (401, b"")
        kept = served.http.post("/v1/call", json={"action": "list"}, headers=headers(NEW))
        assert kept.status_code == 200
        assert [job["name"] for job in kept.json()["jobs"]] == ["by-new", "by-old"]


def test_a_single_digest_is_still_one_string() -> None:
    config = parse({"sources": {"agent": {"token_sha256": sha256(OLD)}}})

    assert config.source("agent").token_sha256 == (sha256(OLD),)


@pytest.mark.parametrize("value", [["not-a-digest"], [sha256(OLD), "ABC"], 7])
def test_a_malformed_digest_in_the_list_is_refused_at_load(value: object) -> None:
    with pytest.raises(ConfigError, match="token_sha256"):
        parse({"sources": {"agent": {"token_sha256": value}}})
