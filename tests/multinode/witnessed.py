"""A node config whose target writes what it saw to a log: the witness that the fault checkers
(test_partition.py, test_nemesis.py) read to count how many times each occurrence really ran."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path

from test_three_nodes import free_port


def witness_script(label: str, log: Path, work_seconds: float) -> str:
    """A shell line that logs the start (with the fire_id, attempt, scheduled instant and its pid) and
    the end of one run, `work_seconds` apart, under the node's `label`."""
    quoted_log = shlex.quote(str(log))
    fields = "$CRONWRIGHT_FIRE_ID $CRONWRIGHT_ATTEMPT"
    return (
        f'echo "start {label} {fields} $CRONWRIGHT_SCHEDULED_FOR $$" >> {quoted_log}; '
        f"sleep {work_seconds}; "
        f'echo "end {label} {fields}" >> {quoted_log}'
    )


def write_node_config(
    path: Path, store: str, lease_beat: float, lease_ttl: float, actions: Mapping[str, str]
) -> Path:
    """A node's config on `store`, with a `log` command target whose actions run the shell lines
    given. A shutdown grace well past a run, so that a stop interrupts none."""
    declared = "".join(
        f"\n[targets.log.actions.{name}]\nargv = {json.dumps(['/bin/sh', '-c', line])}\n"
        for name, line in actions.items()
    )
    # JSON strings are TOML strings.
    path.write_text(
        f"""
[node]
zone = "UTC"
store = {json.dumps(store)}
listen = "127.0.0.1:{free_port()}"
max_concurrency = 32
run_history = 10000
lease_beat = "{lease_beat}s"
lease_ttl = "{lease_ttl}s"
shutdown_grace = "10s"

[targets.log]
kind = "command"
{declared}"""
    )
    return path
