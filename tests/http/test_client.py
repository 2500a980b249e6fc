"""`cronwright.Client`: the typed Python API, against a real `cronwright serve` over HTTP and in process."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_http_serve import serving, write_config

from cronwright import Client, Refused
from cronwright.declare.replies import JobRow, Unreadable
from serving import TOKENS


def readable(job: JobRow | Unreadable) -> JobRow:
    assert isinstance(job, JobRow), job
    return job


def test_a_script_drives_a_real_serve_through_the_client(tmp_path: Path) -> None:
    with serving(write_config(tmp_path, "127.0.0.1:0")) as (_, url), Client.http(url, TOKENS["agent"]) as cw:
        created = cw.create_job("hello", "echo", "hello", schedule={"every": "1h"}, lifetime="2d")
        assert isinstance(created.job, JobRow)
        assert (created.job.name, created.job.state, created.job.created_by) == ("hello", "active", "agent")
        assert created.persistence == "persisted"

        assert [job.name for job in cw.list().jobs] == ["hello"]
        assert readable(cw.pause("hello").job).state == "paused"
        assert readable(cw.resume("hello").job).state == "active"
        assert readable(cw.update("hello", schedule={"every": "2h"}, max_attempts=2).job).max_attempts == 2
        got = cw.get(job_id=created.job.id)
        assert (got.job.schedule.every, got.runs) == ("2h", [])
        assert cw.preview("0 7 * * *", tz="UTC", count=2).firings[0].endswith("T07:00:00+00:00")
        assert [t.target for t in cw.targets().targets] == ["echo"]
        assert cw.status().counts["active"] == 1
        assert readable(cw.delete("hello").job).name == "hello"
        assert cw.list().jobs == []


def test_a_refusal_raises_with_the_protocols_reply(tmp_path: Path) -> None:
    with serving(write_config(tmp_path, "127.0.0.1:0")) as (_, url), Client.http(url, TOKENS["agent"]) as cw:
        with pytest.raises(Refused) as missing:
            cw.get("ghost")
        with pytest.raises(Refused) as forbidden:
            cw.create_job("x", "backup", "nightly", schedule={"every": "1h"})
        with pytest.raises(Refused) as mistyped:
            cw.create_job("x", "echo", "hello", schedule={"every": "1h"}, max_attempts="3")  # type: ignore[arg-type]
        with pytest.raises(Refused) as typo:
            cw.update("x", lifetme="1d")

        assert missing.value.code == "not_found" and missing.value.reply["ok"] is False
        assert forbidden.value.code == "target_not_allowed"
        assert (mistyped.value.code, mistyped.value.field) == ("invalid", "max_attempts")
        assert (typo.value.field, "did you mean 'lifetime'?" in typo.value.message) == ("lifetme", True)
        assert cw.list().jobs == [], "nothing refused was created"


def test_an_unknown_token_is_refused(tmp_path: Path) -> None:
    with (
        serving(write_config(tmp_path, "127.0.0.1:0")) as (_, url),
        Client.http(url, "wrong") as cw,
        pytest.raises(Refused) as caught,
    ):
        cw.list()

    assert caught.value.code == "unauthorized"


def test_a_local_client_works_on_the_configs_store_in_process(tmp_path: Path) -> None:
    config = write_config(tmp_path, "127.0.0.1:0")

    with Client.local(config) as cw:
        cw.create_job("nightly", "echo", "hello", schedule={"cron": "0 3 * * *"})
    with Client.local(config) as again:
        (job,) = again.list().jobs

    assert (job.name, job.created_by, job.schedule.cron) == ("nightly", "cli", "0 3 * * *")
