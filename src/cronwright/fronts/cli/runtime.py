"""How a verb reaches the app: the Runtime, this process's second composition root, which builds the config
and then the app over the store on first use, and the process's stop signals while its runs are in flight.

The app and the config (pydantic) are imported when a verb first needs them, and the request models when a
verb's declared options are first read (options.py): `--version` and `--help` need neither."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cronwright.core.sources import operator
from cronwright.errors import ConfigError, StoreError
from cronwright.fronts.cli.exits import Reply, fail
from cronwright.telemetry.logs import configure as configure_logs
from cronwright.telemetry.logs import say

if TYPE_CHECKING:
    from cronwright.app import App
    from cronwright.config.settings import Config
    from cronwright.core.events import EventSink
    from cronwright.node.scheduler import Node
    from cronwright.targets.pool import Pool
    from cronwright.targets.specs import WorkerSpec

_log = logging.getLogger("cronwright.cli")


class Runtime:
    """What the verbs share, built on first use: the config, then the app over the store."""

    def __init__(self, config_path: str | None) -> None:
        self.config_path = config_path
        self._config: Config | None = None
        self._app: App | None = None
        self._pool: Pool | None = None  # made before the config by `prestart_workers`
        self._cached_specs: list[WorkerSpec] | None = None  # what it found in the SpecCache
        self._logs = False  # True once stderr carries JSON log lines (serve, tick, mcp)
        self.store_unused = False  # True for a verb that reads no jobs (preview): no defaults notice

    @property
    def config(self) -> Config:
        if self._config is None:
            from cronwright.config.settings import load

            try:
                self._config = load(self.config_path)
            except ConfigError as error:
                fail(str(error))
        return self._config

    def app(self, boot: bool = False, serving: bool = False, sinks: tuple[EventSink, ...] = ()) -> App:
        """The app. `boot` upserts the seeds and runs a first pass, as `serve` and `tick` do; `serving`
        is for `serve`. Any other verb's process is short-lived: its run_now goes to a serving node.
        `sinks` are told of the events of its node. It keeps no Prometheus counters: serve's fronts'
        process keeps its own (front_process.py)."""
        if self._app is None:
            from cronwright.targets.cache import SpecCache, cache_dir
            from cronwright.targets.executor import TargetRunner
            from cronwright.targets.pool import Pool
            from cronwright.targets.registry import build_registry, worker_specs
            from cronwright.targets.secrets import Secrets

            config = self.config
            if config.path is None and not self.store_unused:
                self._say_defaults(config)
            try:
                pool = self._pool or Pool(spare=serving)
                # As many idle workers as runs may be in flight: a burst that ends together must not see
                # all but a few workers killed, only to start them again for the next firings.
                pool.max_idle = config.node.max_concurrency
                if boot and not serving:
                    # A tick: its python targets' fork servers start while it describes their modules,
                    # boots and reads what is due, not at its first run (serve warms a worker of each
                    # once it listens); those `prestart_workers` started already are not started again.
                    specs = worker_specs(config)
                    for spec in specs:
                        pool.prestart(spec)
                    if config.path is not None and specs != self._cached_specs:
                        SpecCache(cache_dir()).put(Path(config.path), specs)
                registry = build_registry(config)
                runner = TargetRunner(registry, Secrets.from_config(config), zone=config.node.tz, pool=pool)
                from cronwright.app import build

                self._app = build(
                    config,
                    runner,
                    registry,
                    sinks=sinks,
                    seed=boot,
                    serving=serving,
                    short_lived=not boot,
                    metrics=False,
                )
            except (ConfigError, StoreError) as error:
                fail(str(error))
        return self._app

    def prestart_workers(self) -> None:
        """Starts the fork servers of the python targets this config file made when it was last parsed as
        it is now (SpecCache), before it is read: a `tick` otherwise starts them only once pydantic is
        imported and the config parsed, about 80 ms later, and its first python runs wait for them.
        Nothing here fails: a missing or stale entry starts nothing, or a server no run uses."""
        from cronwright.config.path import locate
        from cronwright.targets.cache import SpecCache, cache_dir
        from cronwright.targets.pool import Pool

        path = locate(self.config_path)
        if path is None or self._pool is not None:
            return
        self._pool = Pool()
        self._cached_specs = SpecCache(cache_dir()).get(path)
        for spec in self._cached_specs:
            self._pool.prestart(spec)

    def call(self, action: str, **fields: Any) -> Reply:
        request = {"action": action, **{k: v for k, v in fields.items() if v is not None}}
        return self.app().protocol.dispatch(request, operator())

    def _say_defaults(self, config: Config) -> None:
        """One line on stderr (a log line once logs are on) before a store the user may not expect opens."""
        note = (
            "no config file (--config, $CRONWRIGHT_CONFIG, ./cronwright.toml): using the built-in defaults, "
            f"with the store at {config.store_url}; with no targets, nothing can run: `cronwright init`"
            " writes a starter config here"
        )
        if self._logs:
            say(_log, note, logging.WARNING, store=config.store_url)
        else:
            click.echo(f"cronwright: note: {note}", err=True)

    def log_to_stderr(self) -> None:
        """JSON lines on stderr, readable on a terminal (semantic 41): for serve, tick and mcp."""
        self._logs = True
        configure_logs(self.config.node.tz)

    def node_label(self) -> str:
        """This host, as a test notification names it (no store is opened for it)."""
        import socket

        return socket.gethostname()

    def close(self) -> None:
        """Stops the node: runs still in flight get the shutdown grace, then are recorded interrupted."""
        app, self._app = self._app, None  # once: `serve` closes before it says it stopped
        pool, self._pool = self._pool, None
        if app is not None:
            app.close()  # its runner closes the pool
        elif pool is not None:
            pool.close()  # the servers `prestart_workers` started for an app that was never built


pass_runtime = click.make_pass_decorator(Runtime)


def now() -> datetime:
    """The instant a verb reads as now (a schedule's next firing is said relative to it)."""
    return datetime.now(UTC)


@contextmanager
def interrupted_on_stop(node: Node) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM stop this process's runs at once: each is recorded
    `interrupted` by this process as it ends, and the block goes on to its end (semantic 28)."""

    def on_stop(signum: int, frame: object) -> None:
        # Off the signal handler: stopping the runner takes locks the interrupted code may hold.
        threading.Thread(target=node.interrupt_runs, args=(signal.Signals(signum).name,)).start()

    previous = {signum: signal.signal(signum, on_stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
