"""Text inside server-rendered SVG: escaped for markup, and stripped of what XML forbids."""

from __future__ import annotations

from html import escape

# C0 controls but tab, newline and carriage return: XML forbids them, so they are dropped to keep the
# drawing well-formed (a name cannot hold them, but a run's message may).
_FORBIDDEN = dict.fromkeys(c for c in range(32) if c not in (9, 10, 13))


def esc(text: str) -> str:
    """`text` safe in an SVG element's content or a quoted attribute."""
    return escape(text.translate(_FORBIDDEN), quote=True)
