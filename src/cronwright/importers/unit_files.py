"""systemd unit files as data: sections of repeatable keys, as systemd.syntax(7) writes them.

Comments start with `#` or `;`, a line ending in a backslash goes on with the next, and a key may repeat
(an empty assignment, `Key=`, resets the list before it, as systemd does for list settings).
"""

from __future__ import annotations

import re

_SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")
_UNITS = {
    "": 1, "s": 1, "sec": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800, "ms": 0.001, "msec": 0.001,
}  # fmt: skip


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """{section: {key: [values in order]}}."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        if current is None or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        values = current.setdefault(key, [])
        if value:
            values.append(value)
        else:
            values.clear()
    return sections


def seconds(span: str) -> float | None:
    """A systemd time span (`30min`, `1h 30min`, `90`: seconds) in seconds, or None if it is not one."""
    total, rest = 0.0, span.strip().lower()
    if not rest:
        return None
    while rest:
        found = _SPAN.match(rest)
        if found is None or found.group(2) not in _UNITS:
            return None
        total += float(found.group(1)) * _UNITS[found.group(2)]
        rest = rest[found.end() :].lstrip()
    return total
