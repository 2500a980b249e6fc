"""`cronwright reload`: the serve of this config reads it again, as SIGHUP (or `systemctl reload`) makes
it do, and this says how it went (issue 38).

It never reads the config itself: a config that does not validate must still reach the serve, which
refuses it and says why. Exit status: 0 applied, 1 refused (nothing changed), 2 no serve of this config
runs, or it did not answer in time.
"""

from __future__ import annotations

import os
import signal
import time

import click

from cronwright.fronts.cli import reload_file
from cronwright.fronts.cli.exits import fail
from cronwright.fronts.cli.group import cli
from cronwright.fronts.cli.runtime import Runtime, pass_runtime
from cronwright.fronts.wake import is_alive

ANSWER_WITHIN = 60.0  # seconds: a reload describes python modules again, in workers


@cli.command("reload")
@pass_runtime
def reload_config(runtime: Runtime) -> None:
    """Makes the running serve of this config read it again and apply what may change live (targets,
    sources and tokens, limits, calendars, alert rules and channels); a config that does not validate
    changes nothing, and the reason is printed. Exit 0 applied, 1 refused, 2 no serve answered."""
    from cronwright.config.path import locate

    path = locate(runtime.config_path)
    if path is None:
        fail(
            "no config file (--config, $CRONWRIGHT_CONFIG, ./cronwright.toml): serve reloads the file it read"
        )
    published_at = reload_file.path_for(str(path))
    before = reload_file.read(published_at)
    if before is None or not is_alive(before.pid):
        fail(f"no running `cronwright serve` of {path.resolve()} (it publishes {published_at} as it starts)")
    os.kill(before.pid, signal.SIGHUP)
    deadline = time.monotonic() + ANSWER_WITHIN
    while time.monotonic() < deadline:
        after = reload_file.read(published_at)
        if after is not None and (after.pid != before.pid or after.seq > before.seq):
            if after.pid != before.pid:
                fail(f"the serve (pid {before.pid}) was replaced by another (pid {after.pid}) meanwhile")
            if not after.ok:
                click.echo(f"cronwright: refused: {after.message}", err=True)
                raise SystemExit(1)
            click.echo(after.message)
            return
        time.sleep(0.05)  # a short-lived verb waiting for another process's answer
    fail(f"the serve (pid {before.pid}) did not say within {ANSWER_WITHIN:.0f}s how its reload went")
