"""What `serve` does for the service manager and the operator besides serving (issue 38): systemd's
readiness, watchdog and stopping notices (node/systemd.py), and reloading the config on SIGHUP
(app.py's `App.reload`, service/reloading.py), with the outcome published for `cronwright reload`.

serving.py calls each of these once, on lines marked `# ops hook`, so that the node's process (the one
systemd watches and signals) owns them whichever process runs the fronts.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cronwright.fronts.cli import reload_file
from cronwright.node.systemd import LoopWatch, Systemd
from cronwright.telemetry.logs import say

if TYPE_CHECKING:
    from cronwright.app import App
    from cronwright.fronts.cli.front_watch import FrontProcess
    from cronwright.fronts.cli.runtime import Runtime
    from cronwright.service.reloading import ReloadReport

_log = logging.getLogger("cronwright.cli")

FRONTS_ANSWER_WITHIN = 30.0  # seconds the fronts' process gets to apply a reload the node applied


def reload_and_say(app: App, config_path: str | None, process: str = "node") -> ReloadReport:
    """Reloads `app` from the config file and logs how it went (one line, an error when refused)."""
    report = app.reload_from(config_path)
    level = logging.INFO if report.ok else logging.ERROR
    say(
        _log,
        report.message,
        level,
        reload="applied" if report.ok else "refused",
        process=process,  # serve's node or its fronts: each applies the reload to its own part
        changed=list(report.changed),
    )
    return report


def reload_on_sighup(app: App, config_path: str | None) -> None:
    """For the fronts' process of serve: SIGHUP, forwarded by the node's process once its own reload is
    applied, reloads this process's app (its sources and tokens, allowlist, limits), and says how it went
    in a file of its own, which the node's process waits for before it answers `cronwright reload`."""
    lock = threading.Lock()
    published = None if config_path is None else reload_file.fronts_path_for(config_path)
    seq = 0

    def reload() -> None:
        nonlocal seq
        with lock:
            report = reload_and_say(app, config_path, "fronts")
            seq += 1
            if published is not None:
                reload_file.publish(published, seq, report)

    if published is not None:
        reload_file.publish(published, seq, None)

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
        self._fronts: FrontProcess | None = None
        self._seq = 0

    @property
    def watch(self) -> LoopWatch | None:
        """What the node's loop tells of its rounds (serve_forever's `watch`)."""
        return self.systemd

    def serving(self, runtime: Runtime, app: App, fronts: FrontProcess | None = None) -> None:
        """The node is built: SIGHUP now reloads its config, then the fronts' process's, and `cronwright
        reload` can find it."""
        self._runtime, self._app, self._fronts = runtime, app, fronts
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
            # The file the fronts' process was started with (FrontProcess passes it): found by this path,
            # whether or not --config named it.
            config_file = app.config.path
            if self._fronts is not None and config_file is not None:
                # Refused too: the fronts' process refuses it alike, and its `status` says so.
                report = self._fronts_reloaded(report, config_file)
            if self.systemd is not None:
                self.systemd.reloaded(report.message if report.ok else f"reload refused: {report.message}")
            self._seq += 1
            if self._published is not None:
                reload_file.publish(self._published, self._seq, report)

    def _fronts_reloaded(self, report: ReloadReport, config_path: str) -> ReloadReport:
        """Forwards the reload to the fronts' process and waits for its answer: the allowlist a create is
        checked against, the tokens and `status` live there, so `cronwright reload` answers only once both
        processes applied (or refused) it."""
        from dataclasses import replace

        fronts = self._fronts
        pid = fronts.pid if fronts is not None else None
        if pid is None:
            return report  # none runs now: the one started next reads the config as it is
        published = reload_file.fronts_path_for(config_path)
        before = reload_file.read(published)
        try:
            os.kill(pid, signal.SIGHUP)
        except OSError:
            return report  # it ended meanwhile: the one started next reads the config as it is
        seen = before.seq if before is not None and before.pid == pid else 0
        deadline = time.monotonic() + FRONTS_ANSWER_WITHIN
        while time.monotonic() < deadline:
            after = reload_file.read(published)
            if after is not None and after.pid == pid and after.seq > seen:
                if after.ok or not report.ok:
                    return report  # a refusal is the node's to tell: the fronts' says the same
                # The file changed between the two processes' reads: the node has the first version.
                said = f"the fronts refused what the node applied ({after.message}); reload again"
                return replace(report, ok=False, message=said)
            time.sleep(0.05)  # only while a reload waits: an idle serve never comes here
        late = f"the fronts' process (pid {pid}) did not answer within {FRONTS_ANSWER_WITHIN:g}s"
        say(_log, late, logging.WARNING, pid=pid)
        return replace(report, ok=False, message=f"{report.message}; {late}")
