"""Logs as semantic 41 says: `serve`, `tick` and `mcp` write one JSON object per line to stderr, each with its
time (ISO-8601 with offset, in the node zone) and the event's fields; a terminal gets the same lines in a
readable form. The standard library's logging is enough for that: one handler on the root logger, installed
before anything else (the MCP SDK's RichHandler, and uvicorn's own set-up, then find it there and add none).

An event (sinks.py) travels as a record whose `fields` attribute holds its dict; any other record becomes
`{"time", "level", "logger", "message"}`, plus the fields given to `say`. Secrets never reach a record: the
runner masks them in every run's message and output before an event is built.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import sys
import textwrap
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO
from zoneinfo import ZoneInfo

import orjson

FIELDS = "fields"  # the record attribute that carries an event's fields
_QUIET = ("uvicorn.access", "httpx", "httpcore", "mcp", "sse_starlette")


def entry(record: logging.LogRecord, zone: ZoneInfo) -> dict[str, Any]:
    """The JSON object one record becomes."""
    line: dict[str, Any] = {
        "time": _time(record.created, zone),
        "level": record.levelname.lower(),
        "logger": record.name,
    }
    fields = getattr(record, FIELDS, None)
    if type(fields) is not dict:  # an event's, or say's: a dict, told apart without the slower ABC check
        fields = fields if isinstance(fields, Mapping) else {}
    if "event" not in fields:  # an event's message is its fields again
        line["message"] = record.getMessage()
    line.update(fields)
    # An instant among the fields (a skip's `due`, a backfill's `nominal`) reads as `time` does.
    for key, value in fields.items():
        if isinstance(value, datetime):
            line[key] = value.astimezone(zone).isoformat()
    if record.exc_info:
        line["error"] = logging.Formatter().formatException(record.exc_info)
    return line


def _time(created: float, zone: ZoneInfo) -> str:
    """`created` (seconds since the epoch) as this writes it, to the character:
    `datetime.fromtimestamp(created, UTC).astimezone(zone).isoformat(timespec="milliseconds")`.

    Those three conversions cost a line about 4 us, more than encoding it; a busy node writes many lines in
    the same second, so the second's text, and its offset (zone transitions fall on whole seconds), is
    kept, and only the milliseconds are made, rounded as fromtimestamp rounds: the fraction to the
    microsecond, half to even, carrying into the next second.
    """
    global _second
    fraction, whole = math.modf(created)
    micro, second = round(fraction * 1_000_000), int(whole)
    if micro >= 1_000_000:
        micro, second = micro - 1_000_000, second + 1
    elif micro < 0:  # before 1970: modf's fraction is negative
        micro, second = micro + 1_000_000, second - 1
    last = _second
    if last[0] != second or last[1] is not zone:
        text = datetime.fromtimestamp(second, UTC).astimezone(zone).isoformat(timespec="seconds")
        last = _second = (second, zone, text[:19], text[19:])  # `2026-03-02T10:00:00`, `+01:00`
    return f"{last[2]}.{micro // 1000:03d}{last[3]}"


# The last second `_time` wrote: (whole seconds since the epoch, zone, local time to the second, offset).
# One tuple, replaced whole, so that a thread reads either the old second or the new one.
_second: tuple[int, ZoneInfo | None, str, str] = (0, None, "", "")


class JsonLines(logging.Formatter):
    """One JSON object per record, on one line."""

    def __init__(self, zone: ZoneInfo) -> None:
        super().__init__()
        self._zone = zone

    def format(self, record: logging.LogRecord) -> str:
        return _encode(entry(record, self._zone))


def _encode(line: dict[str, Any]) -> str:
    """A line's JSON, compact, UTF-8 unescaped, what is not JSON written as its str().

    orjson writes it several times faster than the standard library, and a busy node writes two lines a
    firing. orjson would write an instant, a date or a dataclass its own way, so those go to `default`
    (str) as they did with the standard library; an enum it writes as its value, as the standard library
    wrote this project's StrEnums. What orjson refuses (an integer past 64 bits, a key that is not a
    string, a lone surrogate) the standard library writes. One difference stays: orjson writes a NaN or
    an infinity as null, where the standard library wrote `NaN`, which is not JSON.
    """
    try:
        return orjson.dumps(line, default=str, option=_PASSTHROUGH).decode()
    except TypeError:
        return _fallback(line)


_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_fallback = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


class Readable(logging.Formatter):
    """The same line for people: `2026-03-02T09:30:00.120+01:00 info  job_run job=nightly outcome=ok`.

    Given the terminal's `width`, a line longer than it breaks between words, its following lines
    indented, rather than where the terminal would cut it; a field whose value the message already says
    (the serve's store, its URL) is not said twice."""

    def __init__(self, zone: ZoneInfo, width: int | None = None) -> None:
        super().__init__()
        self._zone = zone
        self._width = width

    def format(self, record: logging.LogRecord) -> str:
        line = entry(record, self._zone)
        head = f"{line.pop('time')} {line.pop('level'):<7} "
        line.pop("logger")
        error = line.pop("error", None)
        text = str(line.pop("event") if "event" in line else line.pop("message", ""))
        said = {word.strip(",;()") for word in text.split()}  # a field said as a word of the text: once
        rest = " ".join(
            f"{key}={_value(value)}"
            for key, value in line.items()
            if value is not None and value != {} and not (isinstance(value, str) and value in said)
        )
        shown = head + " ".join(part for part in (text, rest) if part)
        if self._width is not None and len(shown) > self._width:
            shown = "\n".join(textwrap.wrap(
                shown, self._width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
            ))  # fmt: skip
        return f"{shown}\n{error}" if error else shown


def _columns(stream: TextIO) -> int:
    """The width of the terminal `stream` writes to ($COLUMNS first, as everywhere in the CLI)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns
    return int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else size.columns


def _value(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return json.dumps(text, ensure_ascii=False) if (not text or " " in text or '"' in text) else text


def say(logger: logging.Logger, message: str, level: int = logging.INFO, **fields: Any) -> None:
    """Logs `message` with `fields` kept apart, so that its JSON line carries them as keys."""
    logger.log(level, message, extra={FIELDS: fields})


def configure(zone: ZoneInfo, stream: TextIO | None = None, level: int = logging.INFO) -> logging.Handler:
    """Sends every record at `level` or above to `stream` (stderr): JSON lines, or readable on a terminal.

    Replaces the root logger's handlers, so it is called once, first, by `serve`, `tick` and `mcp`.
    """
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    readable = hasattr(stream, "isatty") and stream.isatty()
    width = _columns(stream) if readable else None
    handler.setFormatter(Readable(zone, width) if readable else JsonLines(zone))
    # A line carries none of a record's process, thread or calling function, so none is looked up per
    # record: on a busy node that was a getpid system call and a walk up the stack for every event.
    logging.logProcesses = logging.logThreads = logging.logMultiprocessing = False
    logging._srcfile = None
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    return handler
