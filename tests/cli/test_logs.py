"""Semantic 41: `serve`, `tick` and `mcp` log one JSON object per line on stderr, each with an ISO-8601 time
and offset and the event's fields, one line per run; a terminal gets the same lines readable; no secret."""

from __future__ import annotations

import io
import json
import logging
import math
import subprocess
import sys
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from cronwright.core.events import Event, EventKind
from cronwright.telemetry.logs import JsonLines, Readable, say
from cronwright.telemetry.sinks import LogSink

from .blackbox import Cronwright, needs_faketime

NOW = "2026-03-02T09:00:00+01:00"
SECRET = "s3cr3t-7f2a-never-logged"


def logged(stderr: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in stderr.splitlines()]
    assert all(isinstance(line, dict) for line in lines)
    return lines


@needs_faketime
def test_tick_logs_a_json_line_per_run_with_its_time_and_offset(cw: Cronwright) -> None:
    cw.add("daily", "--cron", "0 10 * * *", at=NOW)
    cw.add("flaky", "--cron", "0 10 * * *", action="fail", at=NOW)
    ticked = cw.run("tick", at="2026-03-02T10:00:05+01:00")
    assert ticked.rc == 0, ticked
    lines = logged(ticked.stderr)
    assert lines, "a tick that ran something says so"
    for line in lines:
        time = datetime.fromisoformat(str(line["time"]))
        assert time.utcoffset() is not None and str(line["time"]).endswith("+01:00"), line
        assert str(line["time"]).startswith("2026-03-02T10:00:"), line
    runs = {str(line["job"]): line for line in lines if line.get("event") == "job_run"}
    assert {name: runs[name]["outcome"] for name in runs} == {"daily": "ok", "flaky": "error"}
    assert runs["daily"]["fire_id"] == "1-1" and isinstance(runs["daily"]["took_ms"], int)
    failed = [line for line in lines if line.get("event") == "job_run_failed"]
    assert [(line["job"], line["level"]) for line in failed] == [("flaky", "warning")]


@needs_faketime
def test_an_instant_among_an_events_fields_is_iso_8601_in_the_node_zone(cw: Cronwright) -> None:
    cw.add("hourly", "--cron", "0 * * * *", at=NOW)
    ticked = cw.run("tick", at="2026-03-02T12:30:00+01:00")  # 10:00 and 11:00 were missed
    assert ticked.rc == 0, ticked
    skipped = [line for line in logged(ticked.stderr) if line.get("event") == "job_skipped"]
    assert [(line["reason"], line["due"]) for line in skipped] == [("misfire", "2026-03-02T10:00:00+01:00")]


LEAKY = """
[targets.leaky]
kind = "command"
secrets = ["API_KEY"]
[targets.leaky.actions.show]
argv = ["/bin/sh", "-c", "echo key=$API_KEY >&2; echo $API_KEY; exit 3"]
"""


@needs_faketime
def test_a_secret_never_reaches_the_log(cw: Cronwright) -> None:
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + LEAKY, encoding="utf-8")

    def run(*args: str, at: str) -> subprocess.CompletedProcess[str]:
        argv, env = cw.command(*args, at=at)
        return subprocess.run(
            argv, env={**env, "API_KEY": SECRET}, capture_output=True, text=True, timeout=60
        )

    assert (
        run("add", "leak", "--target", "leaky", "--action", "show", "--cron", "0 10 * * *", at=NOW).returncode
        == 0
    )
    ticked = run("tick", at="2026-03-02T10:00:05+01:00")
    assert ticked.returncode == 0, ticked
    assert any(line.get("event") == "job_run_failed" for line in logged(ticked.stderr)), ticked.stderr
    assert SECRET not in ticked.stderr


def record(message: str, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("cronwright.events", logging.INFO, __file__, 1, message, None, None)
    made.created = datetime.fromisoformat("2026-10-25T02:30:00.250+01:00").timestamp()
    made.__dict__.update(extra)
    return made


def test_an_event_is_one_json_object_and_the_same_line_reads_well_on_a_terminal() -> None:
    zone = ZoneInfo("Europe/Berlin")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines(zone))
    logger = logging.getLogger("cronwright.test-logs")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        LogSink(logger).emit(Event(EventKind.JOB_RUN, 7, "nightly", {"fire_id": "7-3", "outcome": "ok"}))
        say(logger, "listening on http://127.0.0.1:8765", url="http://127.0.0.1:8765")
    finally:
        logger.removeHandler(handler)
    event, note = (json.loads(line) for line in stream.getvalue().splitlines())
    assert set(event) == {"time", "level", "logger", "event", "job_id", "job", "fire_id", "outcome"}
    assert (event["event"], event["job"], event["level"]) == ("job_run", "nightly", "info")
    assert note["message"] == "listening on http://127.0.0.1:8765" and note["url"] == "http://127.0.0.1:8765"

    # The fall-back night: the second 02:30 is told apart by its offset, in both forms.
    fields = {"event": "job_run", "job": "nightly", "outcome": "ok", "message": "hello, world"}
    assert json.loads(JsonLines(zone).format(record("x", fields=fields)))["time"] == (
        "2026-10-25T02:30:00.250+01:00"
    )
    assert Readable(zone).format(record("x", fields=fields)) == (
        '2026-10-25T02:30:00.250+01:00 info    job_run job=nightly outcome=ok message="hello, world"'
    )


def test_the_pure_engine_imports_no_prometheus_client() -> None:
    probe = (
        "import sys, cronwright.core.engine, cronwright.core.events; "
        "print('prometheus_client' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done


def test_a_line_time_is_the_instant_in_the_zone_across_transitions_and_rounding() -> None:
    # JsonLines keeps the text of the last second: every line must still read as the datetime conversion
    # writes it, through a change of offset (both ways) and of zone, and through fractions that round up
    # to the next millisecond or (the last float before a whole second) to the next second.
    transitions = ("2026-03-29T01:00:00+00:00", "2026-10-25T01:00:00+00:00", "2026-03-08T05:30:00+00:00")
    made = record("x")
    for name in ("Europe/Berlin", "America/St_Johns", "UTC"):
        zone, formatter = ZoneInfo(name), JsonLines(ZoneInfo(name))
        for transition in transitions:
            start = int(datetime.fromisoformat(transition).timestamp())
            for second in range(start - 2, start + 3):
                for created in (second, second + 0.0004995, second + 0.2505, math.nextafter(second, 0)):
                    made.created = created
                    expected = datetime.fromtimestamp(made.created, UTC).astimezone(zone)
                    line = json.loads(formatter.format(made))
                    assert line["time"] == expected.isoformat(timespec="milliseconds"), (name, made.created)
    # The same second in another zone: its own offset.
    made.created = datetime.fromisoformat("2026-03-02T09:00:00+00:00").timestamp()
    times = [json.loads(JsonLines(ZoneInfo(name)).format(made))["time"] for name in ("UTC", "Asia/Kolkata")]
    assert times == ["2026-03-02T09:00:00.000+00:00", "2026-03-02T14:30:00.000+05:30"]


def test_a_line_orjson_refuses_is_still_written() -> None:
    # Past 64 bits, a key that is not a string, a lone surrogate: the standard library writes those.
    formatter = JsonLines(ZoneInfo("Europe/Berlin"))
    for value, read in ((2**70, 2**70), ({1: "a"}, {"1": "a"}), ("\ud800", "\ud800")):
        fields = {"event": "job_run", "value": value, "due": datetime(2026, 3, 2, 9, tzinfo=UTC)}
        line = json.loads(formatter.format(record("x", fields=fields)))
        assert (line["value"], line["due"]) == (read, "2026-03-02T10:00:00+01:00")


def test_a_readable_line_breaks_between_words_at_its_width_and_says_a_field_once() -> None:
    """Issue 35, defect 6: serve's start line repeated its store and node as fields, and the terminal cut
    it anywhere; a field the message does not say as a word of its own (outcome=ok) is kept."""
    fields = {"store": "sqlite:///var/lib/cw.db", "node": "vm:1:ab:serve", "outcome": "ok", "counts": {}}
    said = record("node vm:1:ab:serve serving sqlite:///var/lib/cw.db (no schedules); look", fields=fields)

    shown = Readable(ZoneInfo("Europe/Berlin"), width=60).format(said)

    assert shown == (
        "2026-10-25T02:30:00.250+01:00 info    node vm:1:ab:serve\n"
        "    serving sqlite:///var/lib/cw.db (no schedules); look\n"
        "    outcome=ok"
    ), shown
