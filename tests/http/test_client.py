"""`cronwright.Client`: the typed Python API, against a real `cronwright serve` over HTTP and in process."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_http_serve import serving, write_config

from cronwright import Client, Refused
from cronwright.declare.replies import JobRow, Unreadable
from cronwright.errors import CronwrightError
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
            # The ignores below are kept: deliberate misuse, wrong types that the client's models refuse.
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


def test_a_string_where_a_mapping_belongs_is_refused_naming_the_field_and_what_to_write(
    tmp_path: Path,
) -> None:
    """Issue 35, defect 9: `schedule='0 7 * * *'` and args given as JSON text raised `ValueError: dictionary
    update sequence element #0 has length 1`, naming nothing."""
    with Client.local(write_config(tmp_path, "127.0.0.1:0")) as cw:
        with pytest.raises(Refused) as cron_text:
            cw.create_job("x", "echo", "hello", schedule="0 7 * * *")  # type: ignore[arg-type]
        with pytest.raises(Refused) as json_text:
            cw.create_job("x", "echo", "hello", schedule={"every": "1h"}, args='{"a": 1}')  # type: ignore[arg-type]
        with pytest.raises(Refused) as changed:
            cw.update("x", schedule="0 8 * * *")

        assert (cron_text.value.code, cron_text.value.field) == ("invalid", "schedule")
        assert '{"cron": "0 7 * * *"}' in cron_text.value.message, cron_text.value.message
        assert json_text.value.field == "args" and "json.loads(text)" in json_text.value.message
        assert changed.value.field == "schedule" and '{"cron": "0 8 * * *"}' in changed.value.message
        assert cw.list().jobs == []


def test_a_closed_local_client_says_it_is_closed_not_try_again(tmp_path: Path) -> None:
    cw = Client.local(write_config(tmp_path, "127.0.0.1:0"))
    cw.close()

    with pytest.raises(CronwrightError) as caught:
        cw.list()

    assert "this Client is closed" in str(caught.value) and "try again" not in str(caught.value)
