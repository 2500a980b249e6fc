"""Protocol rows as text for people: a rich table on a terminal and plain aligned columns when piped.
Instants stay ISO-8601 with their offset. `list` has its own fitted layout (listing.py).

A cell holds what callers wrote (a pause note, a run's message, a name): it is always text, never rich
markup, and its control characters are shown, never sent to the terminal.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TextIO

# The width lines for people are fitted to where they can be (`list`, `show`, `preview`): a terminal of 80
# columns, the narrowest one still common.
WIDTH = 80
RUN_COLUMNS = ("FINISHED", "SCHEDULE", "FIRE_ID", "ATTEMPT", "OUTCOME", "TOOK", "MESSAGE")


# C0 and C1 control characters and DEL: an escape sequence in a note could move the cursor, retitle the
# window or write the clipboard of the operator's terminal.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with each control character written as its escape (`\\x1b`), so a terminal shows it."""
    return _CONTROL.sub(lambda found: ascii(found.group())[1:-1], text)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 occurrence', '6 occurrences': a count with its noun, singular for one (`plural` where adding
    an s will not do: 'audit entries')."""
    return f"{count} {noun}" if count == 1 else f"{count} {plural or noun + 's'}"


def relative(instant: str | None, now: datetime, units: int = 2) -> str:
    """How far `instant` lies from now, in the `units` largest units: 'in 2h 5m', '3d 4h ago'."""
    if instant is None:
        return "-"
    seconds = int((datetime.fromisoformat(instant) - now).total_seconds())
    ahead = seconds >= 0
    seconds = abs(seconds)
    parts: list[str] = []
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size or (unit == "s" and not parts):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
        if len(parts) == units:
            break
    text = " ".join(parts)
    return f"in {text}" if ahead else f"{text} ago"


def schedule_text(schedule: Mapping[str, Any]) -> str:
    jitter = f", jitter {schedule['jitter']}" if schedule.get("jitter") else ""
    if schedule.get("exclude"):
        jitter += f", excluding {', '.join(schedule['exclude'])}"
    if "cron" in schedule:
        listed = schedule["cron"]
        text = "' + '".join(listed) if isinstance(listed, list) else listed
        return f"cron '{text}' {schedule.get('tz', '')}".rstrip() + jitter
    if "every" in schedule:
        return f"every {schedule['every']}{jitter}"
    return f"at {schedule.get('at')}"


def firing_text(firing: Mapping[str, Any]) -> str:
    """An occurrence to come: when it fires, and its timetable instant where jitter moved it."""
    return "  ".join(firing_parts(firing))


def firing_parts(firing: Mapping[str, Any]) -> list[str]:
    """`firing_text` in the pieces a narrow line may put on lines of their own: the instant (with its
    nominal one), then why it is excluded."""
    moved = f" (nominal {firing['nominal']})" if firing.get("nominal") not in (None, firing["at"]) else ""
    excluded = [f"excluded: {firing['excluded']}"] if firing.get("excluded") else []
    return [f"{firing['at']}{moved}", *excluded]


def fitted(parts: Sequence[str], indent: int, sep: str = "  ") -> str:
    """The parts on one line while they fit in WIDTH, each one that does not on a line of its own,
    indented by `indent`. A part is never cut: one longer than the line overflows it."""
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + len(sep) + len(part) <= WIDTH:
            lines[-1] += sep + part
        else:
            lines[-1] += sep.rstrip()
            lines.append(" " * indent + part)
    return "\n".join(lines)


def run_cells(run: Mapping[str, Any]) -> list[str]:
    """A run as a table row: its message's first line whole (a table never cuts a cell; `show --output`
    has the rest), with "…" where more lines follow."""
    message = str(run.get("message") or "").strip().splitlines()
    return [
        run["finished_at"],
        run.get("schedule") or str(run["job_id"]),
        run["fire_id"],
        str(run["attempt"]),
        run["outcome"],
        f"{run['took_ms']}ms",
        (message[0] + (" …" if len(message) > 1 else "") if message else ""),
    ]


AUDIT_COLUMNS = ("AT", "SOURCE", "ACTION", "NAME", "CHANGES")
# The fields an audit line names, in this order; the rest of a create's or delete's row is in --json.
_AUDIT_FIELDS = ("state", "schedule", "args", "name", "next_run_at", "ends_at", "paused_by")


def audit_cells(entry: Mapping[str, Any]) -> list[str]:
    """One audit entry as a table row: what changed, `field: before -> after`, the main fields first."""
    changes = entry.get("changes") or {}
    if entry["action"] in ("create", "delete", "reject") or (entry["action"] == "seed" and "id" in changes):
        shown = [name for name in ("state", "schedule") if name in changes]
    else:
        shown = [name for name in _AUDIT_FIELDS if name in changes]
        shown += sorted(name for name in changes if name not in _AUDIT_FIELDS)
    said = "; ".join(f"{name}: {_short(changes[name][0])} -> {_short(changes[name][1])}" for name in shown)
    if entry.get("note"):
        said += f" (note: {entry['note']})"
    return [entry["at"], entry["source"], entry["action"], entry["name"] or f"#{entry['job_id']}", said]


def _short(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        if any(kind in value for kind in ("cron", "every", "at")):
            return schedule_text(value)  # with its zone: an update that moves only the zone shows it
        return ",".join(f"{k}={v}" for k, v in value.items() if k != "every_ms") or "{}"
    return str(value)


# A cell that is an instant as replies render them: ISO-8601 to the second, with its offset.
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO | None = None) -> None:
    """Rows under their headers: aligned columns, whole; on a terminal too narrow for them, each row as a
    record (`stacked`). No cell is ever cut, piped or not."""
    out = out or sys.stdout
    rows = [[visible(cell) for cell in row] for row in rows]
    if out.isatty():
        width = shutil.get_terminal_size().columns
        if _natural_width(headers, rows) > width:
            out.write(stacked(headers, rows, width))
            return
        # Imported here: only a table on a terminal needs rich, and every CLI call would pay for it.
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        rich_table = Table(box=None, header_style="bold", pad_edge=False)
        for index, header in enumerate(headers):
            cells = [row[index] for row in rows if row[index] not in ("", "-")]
            if cells and all(_ISO.match(cell) for cell in cells):
                # Every instant whole, to the second, with its offset (docs/cli.md), at any width: the
                # other columns give way, and a long text folds onto more lines instead.
                rich_table.add_column(header, no_wrap=True, min_width=max(map(len, cells)))
            else:
                rich_table.add_column(header, overflow="fold")
        for row in rows:
            # Text, never a str: rich reads a str as markup, where `[/x]` raises and `[x]` vanishes.
            rich_table.add_row(*(Text(cell) for cell in row))
        Console(file=out).print(rich_table)
        return
    widths = _widths(headers, rows)
    for row in [list(headers), *rows]:
        out.write(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n"
        )


def _widths(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    return [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]


def _natural_width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    return sum(_widths(headers, rows)) + len(COLUMN_GAP) * (len(headers) - 1)


COLUMN_GAP = "  "
RECORD_INDENT = 4


def stacked(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    """A table too wide for `width` columns, as records: the leading columns that fit stay a table (the
    first, an instant, always), and each row's other cells follow on indented lines as `header: value`,
    packed while they fit. A line breaks between words, never inside an instant or a quoted cron
    expression; a word longer than the line overflows it rather than being cut (docs/cli.md)."""
    widths = _widths(headers, rows)
    kept = 1
    while kept < len(headers) and sum(widths[: kept + 1]) + len(COLUMN_GAP) * kept <= width:
        kept += 1

    def aligned(cells: Sequence[str]) -> str:
        return COLUMN_GAP.join(c.ljust(w) for c, w in zip(cells, widths[:kept], strict=False)).rstrip()

    lines = [aligned(headers[:kept])]
    for row in rows:
        lines.append(aligned(row[:kept]))
        pieces = [f"{h.lower()}: {c}" for h, c in zip(headers[kept:], row[kept:], strict=True) if c]
        lines += _packed(pieces, width)
    return "\n".join(lines) + "\n"


def _packed(pieces: Sequence[str], width: int) -> list[str]:
    """`pieces` on lines indented by RECORD_INDENT, as many to a line as fit (", " between); a piece too
    long for a line of its own wraps between its words, its following lines indented two more."""
    lines: list[str] = []
    indent = " " * RECORD_INDENT
    for piece in pieces:
        if lines and len(lines[-1]) + 2 + len(piece) <= width:
            lines[-1] += ", " + piece
        else:
            lines += _wrapped(piece, width, indent, indent + "  ")
    return lines


# A word of a cell: a quoted span ('0 7 * * MON-FRI', a cron expression) is one word, spaces and all.
_WORD = re.compile(r"'[^']*'|\S+")


def _wrapped(text: str, width: int, first: str, rest: str) -> list[str]:
    lines = [first]
    for word in _WORD.findall(text):
        if lines[-1].strip() and len(lines[-1]) + 1 + len(word) > width:
            lines.append(rest + word)
        else:
            lines[-1] += (" " if lines[-1].strip() else "") + word
    return lines


def details(pairs: Sequence[tuple[str, str]], out: TextIO | None = None) -> None:
    """Key-value lines, aligned, for `show` and `status`."""
    out = out or sys.stdout
    width = max(len(key) for key, _ in pairs)
    for key, value in pairs:
        # A long value (a schedule with several expressions, jitter and calendars) goes on at its comma.
        first, *rest = visible(value).split(", ")
        out.write(fitted([f"{key.rjust(width)}: {first}", *rest], width + 2, sep=", ") + "\n")
