"""The CLI's surface, black-box: exit statuses, `--json` as exactly the protocol's reply, `list` as plain
columns when piped, and `call`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .blackbox import Cronwright, needs_faketime

NOW = "2026-03-02T09:00:00+01:00"


def call(cw: Cronwright, request: Mapping[str, object], at: str | None = None) -> dict[str, Any]:
    result = cw.run("call", json.dumps(request), at=at)
    reply = result.json()
    assert result.rc == (0 if reply["ok"] else 1), result
    return reply


# --- exit statuses ------------------------------------------------------------------------------------


def test_exit_0_on_success(cw: Cronwright) -> None:
    listed = cw.run("list")
    assert (listed.rc, listed.stdout.strip(), listed.stderr) == (0, "no schedules", "")
    assert cw.json("list") == {"ok": True, "jobs": []}
    assert cw.ok("add", "daily", "--target", "sh", "--action", "log", "--cron", "0 10 * * *").stderr == ""
    assert cw.ok("pause", "daily").stdout.startswith("paused daily: paused")


def test_exit_1_when_refused(cw: Cronwright) -> None:
    shown = cw.run("show", "ghost")
    assert (shown.rc, shown.stdout) == (1, "")
    assert shown.stderr.splitlines() == [
        "cronwright: refused: not_found: no job with name 'ghost'; `list` shows the jobs there are"
    ]
    reply = cw.json("show", "ghost", rc=1)
    assert reply["error"] == "not_found"

    cw.ok("add", "daily", "--target", "sh", "--action", "log", "--cron", "0 10 * * *")
    taken = cw.json("add", "daily", "--target", "sh", "--action", "log", "--every", "1h", rc=1)
    assert taken["error"] == "name_taken"
    not_allowed = cw.run("add", "x", "--target", "nope", "--action", "log", "--cron", "0 10 * * *")
    assert not_allowed.rc == 1 and "target_not_allowed" in not_allowed.stderr
    bad_cron = cw.run("add", "x", "--target", "sh", "--action", "log", "--cron", "0 0 30 2 *")
    assert bad_cron.rc == 1 and "invalid (schedule.cron)" in bad_cron.stderr
    assert [job["name"] for job in cw.json("list")["jobs"]] == ["daily"]


@pytest.mark.parametrize(
    "args",
    [
        ("add", "x", "--target", "sh", "--action", "log"),
        ("add", "x", "--target", "sh", "--action", "log", "--cron", "0 10 * * *", "--every", "1h"),
        ("add", "x", "--target", "sh", "--cron", "0 10 * * *"),
        ("add", "x", "--target", "sh", "--action", "log", "--every", "1h", "--tz", "UTC"),
        ("add", "x", "--target", "sh", "--action", "log", "--every", "1h", "--args", "{not json"),
        ("add", "x", "--target", "sh", "--action", "log", "--every", "1h", "--breaker", "many"),
        ("add", "x", "--target", "sh", "--action", "log", "--every", "1h", "--misfire", "sometimes"),
        ("list", "--bogus"),
        ("history", "--limit", "0"),
        ("update", "x"),
        ("show",),
        ("frobnicate",),
    ],
    ids=lambda args: " ".join(args),
)
def test_exit_2_on_a_usage_error(cw: Cronwright, args: tuple[str, ...]) -> None:
    result = cw.run(*args)
    assert result.rc == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cronwright: error: "), result.stderr
    assert not cw.store.exists(), "a usage error opens nothing, let alone changes it"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[node\n", "not valid TOML"),
        ('[node]\nzone = "Mars/Base"\n', "node.zone: unknown time zone 'Mars/Base'"),
        ('[node]\ncolour = "blue"\n', "node.colour: unknown key"),
        ('[node]\nstroe = "sqlite:///x.db"\n', "node.stroe: unknown key; did you mean 'store'?"),
        ('[targets.x]\nkind = "python"\nmodul = "m"\n', "targets.x.modul: unknown key; did you mean"),
        ('[calendars.h]\ndate = ["2026-12-25"]\n', "calendars.h.date: unknown key; did you mean 'dates'?"),
        ('[calendars.h]\nics = "absent.ics"\n', "calendars.h: ics file"),
        ('[calendars.h]\ncountry = "XX"\n', "calendars.h: Country XX not available"),
        ('[node]\nmax_lifetime = "forever"\n', "node.max_lifetime"),
        ('[targets.x]\nkind = "telepathy"\n', "targets.x.kind"),
    ],
)
def test_a_bad_config_file_is_exit_2_with_one_line(tmp_path: Path, text: str, says: str) -> None:
    cw = Cronwright(tmp_path)
    cw.config.write_text(text, encoding="utf-8")
    for args in (("tick",), ("add", "x", "--target", "sh", "--action", "log", "--every", "1h")):
        result = cw.run(*args)
        assert (result.rc, result.stdout) == (2, ""), result
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("cronwright: error: ") and says in lines[0], lines[0]
        assert str(cw.config) in lines[0], "the message names the file"
    assert not cw.store.exists(), "nothing was opened, let alone written"


def test_a_missing_config_file_is_exit_2(tmp_path: Path) -> None:
    cw = Cronwright(tmp_path)
    cw.config.unlink()
    result = cw.run("list")
    assert result.rc == 2
    assert result.stderr.splitlines() == [
        f"cronwright: error: config file {cw.config} does not exist (`cronwright init` writes a starter one)"
    ]


# --- --json is the protocol's reply -----------------------------------------------------------------


@needs_faketime
def test_json_output_is_exactly_the_protocol_reply(cw: Cronwright) -> None:
    added = cw.json("add", "daily", "--target", "sh", "--action", "log", "--cron", "0 10 * * *", at=NOW)
    assert set(added) == {"ok", "job", "persistence"}
    assert cw.tick(at="2026-03-02T10:00:05+01:00")["fired"] == 1
    at = "2026-03-02T10:05:00+01:00"
    pairs: list[tuple[tuple[str, ...], dict[str, object]]] = [
        (("list",), {"action": "list"}),
        (("list", "--state", "active"), {"action": "list", "state": "active"}),
        (("list", "--limit", "1", "--after", "a"), {"action": "list", "limit": 1, "after_name": "a"}),
        (("show", "daily"), {"action": "get", "name": "daily"}),
        (("history", "daily", "--limit", "5"), {"action": "history", "name": "daily", "limit": 5}),
        (("targets",), {"action": "targets"}),
    ]
    for args, request in pairs:
        assert cw.json(*args, at=at) == call(cw, request, at=at), args

    shown = cw.json("show", "daily", at=at)
    assert added["job"] == {**shown["job"], "next_run_at": added["job"]["next_run_at"],
                            "last_run": None}  # fmt: skip
    assert shown["runs"][0]["outcome"] == "ok"
    paused = cw.json("pause", "daily", at=at)
    assert set(paused) == {"ok", "job", "persistence"}
    assert paused["job"] == call(cw, {"action": "get", "name": "daily"}, at=at)["job"]

    status = cw.json("status", at=at)
    assert set(status) == {"ok", "node", "counts", "running"}
    assert status["counts"]["paused"] == 1 and status["node"]["zone"] == "Europe/Berlin"


def test_preview_json_is_the_protocol_shape(cw: Cronwright) -> None:
    args = ("preview", "0 7 * * MON-FRI", "--after", "2026-03-27T12:00:00+01:00", "--count", "3")
    shown = cw.ok(*args, "--json").json()
    request = {"action": "preview", "expression": "0 7 * * MON-FRI", "after": "2026-03-27T12:00:00+01:00",
               "count": 3}  # fmt: skip
    assert {"ok": True, **shown} == call(cw, request)
    assert shown["firings"] == [
        "2026-03-30T07:00:00+02:00",
        "2026-03-31T07:00:00+02:00",
        "2026-04-01T07:00:00+02:00",
    ]
    assert shown["tz"] == "Europe/Berlin"


# --- list, piped --------------------------------------------------------------------------------------


@needs_faketime
def test_list_piped_prints_plain_columns(cw: Cronwright) -> None:
    cw.add("daily", "--cron", "0 10 * * *", at=NOW)
    cw.add("flaky", "--every", "1h", action="fail", at=NOW)
    cw.ok("pause", "flaky", at=NOW)
    result = cw.ok("list", at="2026-03-02T09:30:00+01:00")
    lines = result.stdout.splitlines()
    header = lines[0]
    columns = ["NAME", "RUNS", "SCHEDULE", "NEXT", "LEFT", "LAST", "RESULT", "ENDS", "STATE"]
    assert header.split() == columns
    assert "\x1b" not in result.stdout, "no terminal colours when piped"
    rows = {line.split()[0]: line for line in lines[1:3]}
    assert set(rows) == {"daily", "flaky"}

    def cell(row: str, column: str) -> str:
        """The text under a column's header, up to the next column."""
        start = header.index(column)
        following = columns.index(column) + 1
        end = header.index(columns[following]) if following < len(columns) else None
        return row[start:end].strip()

    daily = rows["daily"]
    assert cell(daily, "RUNS") == "sh.log"
    assert cell(daily, "SCHEDULE") == "cron '0 10 * * *' Europe/Berlin"
    assert cell(daily, "NEXT") == "2026-03-02T10:00:00+01:00"
    assert cell(daily, "LEFT").startswith("in 29m")
    assert (cell(daily, "LAST"), cell(daily, "RESULT")) == ("-", "-")
    assert cell(daily, "ENDS").startswith("2026-05-31T")
    assert cell(daily, "STATE") == "active"
    assert (cell(rows["flaky"], "SCHEDULE"), cell(rows["flaky"], "STATE")) == ("every 1h", "paused")
    assert lines[3:] == ["", "2 schedules."]


# --- call ---------------------------------------------------------------------------------------------


def test_call_prints_the_reply(cw: Cronwright) -> None:
    assert call(cw, {"action": "list", "request_id": "r1"}) == {"ok": True, "jobs": [], "request_id": "r1"}
    create = {"action": "create_job", "job": {"name": "daily", "target": "sh", "action": "log",
              "schedule": {"cron": "0 10 * * *"}}}  # fmt: skip
    created = call(cw, create)
    assert created["ok"] is True
    from_stdin = cw.run("call", "-", stdin=json.dumps({"action": "get", "name": "daily"}))
    assert from_stdin.rc == 0
    assert from_stdin.json()["job"] == created["job"]

    refused = call(cw, {**create, "request_id": "r2"})
    assert (refused["error"], refused["request_id"]) == ("name_taken", "r2")
    not_json = cw.run("call", "{nope")
    assert not_json.rc == 1 and not_json.json()["error"] == "invalid_json"
    unknown = cw.run("call", '{"action": "explode"}')
    assert unknown.rc == 1 and unknown.json()["error"] == "unknown_action"
    too_big = cw.run("call", "-", stdin=json.dumps({"action": "list", "pad": "x" * 70_000}))
    assert too_big.rc == 1 and too_big.json()["error"] == "message_too_large"


@needs_faketime
def test_a_page_of_the_list_says_how_to_ask_for_the_next(cw: Cronwright) -> None:
    for name in ("beta", "alpha", "gamma"):
        cw.json("add", name, "--target", "sh", "--action", "log", "--cron", "0 10 * * *", at=NOW)

    first = cw.ok("list", "--limit", "2", at=NOW).stdout
    last = cw.ok("list", "--limit", "2", "--after", "beta", at=NOW).stdout

    assert [line.split()[0] for line in first.splitlines()[1:3]] == ["alpha", "beta"]
    assert first.splitlines()[-1] == "More follow: add --after beta for the next page."
    assert [line.split()[0] for line in last.splitlines()[1:2]] == ["gamma"]
    assert "More follow" not in last
    assert cw.json("list", "--limit", "2", at=NOW)["next_after_name"] == "beta"
