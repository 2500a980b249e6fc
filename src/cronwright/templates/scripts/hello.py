"""An example cronwright target. Each @cronwright.action function is an action a schedule may run.

Its args schema comes from the type hints: here `name` is an optional string. Try it:
    cronwright add greet-ada --target hello --action greet --args '{"name": "Ada"}' --every 5m
"""

from __future__ import annotations

import cronwright


@cronwright.action(timeout="30s")
def greet(ctx: cronwright.Context, name: str = "world") -> str:
    """Says hello. The return value becomes the run's message; log lines land in its output."""
    ctx.log.info(
        "fire %s, attempt %d, scheduled for %s", ctx.fire_id, ctx.attempt, ctx.scheduled_for.isoformat()
    )
    return f"hello, {name}"
