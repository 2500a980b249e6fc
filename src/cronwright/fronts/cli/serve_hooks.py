"""What `serve` does for the service manager and the operator besides serving (issue 38): systemd's
readiness, watchdog and stopping notices (node/systemd.py), and reloading the config on SIGHUP
(app.py's `App.reload`, service/reloading.py), with the outcome published for `cronwright reload`.

serving.py calls each of these once, on lines marked `# ops hook`, so that the node's process (the one
systemd watches and signals) owns them whichever process runs the fronts.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from cronwright.fronts.cli import reload_file
from cronwright.node.systemd import LoopWatch, Systemd
from cronwright.telemetry.logs import say

if TYPE_CHECKING:
    from cronwright.app import App
    from cronwright.fronts.cli.runtime import Runtime
    from cronwright.service.reloading import ReloadReport

_log = logging.getLogger("cronwright.cli")


def reload_and_say(app: App, config_path: str | None) -> ReloadReport:
    """Reloads `app` from the config file and logs how it went (one line, an error when refused)."""
    report = app.reload_from(config_path)
    level = logging.INFO if report.ok else logging.ERROR
    say(
        _log,
        report.message,
        level,
        reload="applied" if report.ok else "refused",
        changed=list(report.changed),
    )
    return report


def reload_on_sighup(app: App, config_path: str | None) -> None:
    """For a process of serve other than the node's (the fronts', once they run apart): SIGHUP, forwarded
    by the node's process, reloads this process's own app (its sources and tokens, allowlist, limits)."""
    lock = threading.Lock()

    def reload() -> None:
        with lock:
            reload_and_say(app, config_path)

    signal.signal(signal.SIGHUP, lambda signum, frame: threading.Thread(target=reload, daemon=True).start())


class ServeHooks:
    """Made first thing in `serve`: it takes systemd's variables out of the environment before any
    worker or front process is started, so none of them can speak to systemd for the node."""

    def __init__(self) -> None:
        # READY=1 waits for both: the node's first pass, and the fronts listening.
        self.systemd = Systemd.from_environ(awaits=("node", "fronts"))
        self._app: App | None = None
        self._runtime: Runtime | None = None
        self._reloading = threading.Lock()  # one reload at a time; a SIGHUP meanwhile waits its turn
        self._published: Path | None = None
        self._seq = 0

    @property
    def watch(self) -> LoopWatch | None:
        """What the node's loop tells of its rounds (serve_forever's `watch`)."""
        return self.systemd

    def serving(self, runtime: Runtime, app: App) -> None:
        """The node is built: SIGHUP now reloads its config, and `cronwright reload` can find it."""
        self._runtime, self._app = runtime, app
        signal.signal(signal.SIGHUP, lambda signum, frame: self._reload_soon())
        if app.config.path is not None:
            self._published = reload_file.path_for(app.config.path)
            reload_file.publish(self._published, self._seq, None)

    def listening(self) -> None:
        """The fronts answer: with the node booted, systemd hears READY=1."""
        if self.systemd is not None:
            self.systemd.part_ready("fronts")

    def stopping(self) -> None:
        if self.systemd is not None:
            self.systemd.stopping()
        if self._published is not None:
            reload_file.withdraw(self._published)

    def _reload_soon(self) -> None:
        # Off the signal handler: a reload reads files, starts workers to describe modules and takes the
        # node's lock, which the code the signal interrupted may hold.
        threading.Thread(target=self.reload, name="cronwright-reload", daemon=True).start()

    def reload(self) -> None:
        """Reads the config file again and applies it (App.reload); says how it went in the log, to
        systemd, and in the file `cronwright reload` reads."""
        app, runtime = self._app, self._runtime
        if app is None or runtime is None:
            return
        with self._reloading:
            if self.systemd is not None:
                self.systemd.reloading()
            report = reload_and_say(app, runtime.config_path)
            if self.systemd is not None:
                self.systemd.reloaded(report.message if report.ok else f"reload refused: {report.message}")
            self._seq += 1
            if self._published is not None:
                reload_file.publish(self._published, self._seq, report)
