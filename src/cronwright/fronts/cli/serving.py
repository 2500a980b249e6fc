"""The verbs that run the node: tick (one pass, then exit), serve (the node, and in a process of its own
the HTTP API, MCP over HTTP and the dashboard, until a signal), mcp (MCP over stdio) and dashboard (a
one-time link to a running serve).

Their HTTP, MCP and dashboard stacks are imported by the verb that uses them, never at import: a `tick`,
started by cron every minute, pays for none of them (tests/cli/test_tick_imports.py)."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from cronwright.core.sources import operator
from cronwright.errors import ConfigError, StoreError
from cronwright.fronts.cli.exits import Reply, fail, finish, json_option
from cronwright.fronts.cli.group import cli
from cronwright.fronts.cli.runtime import Runtime, interrupted_on_stop, now, pass_runtime
from cronwright.fronts.wake import wake_local_nodes
from cronwright.telemetry.logs import say

if TYPE_CHECKING:
    from cronwright.app import App
    from cronwright.fronts.cli.front_watch import FrontProcess
    from cronwright.telemetry.relay import RelayWriter

_log = logging.getLogger("cronwright.cli")


@cli.command()
@json_option
@pass_runtime
def tick(runtime: Runtime, as_json: bool) -> None:
    """Runs one scheduling pass now, waits for the runs it started, and exits."""
    runtime.prestart_workers()
    runtime.log_to_stderr()
    app = runtime.app(boot=True)
    from cronwright.node.drive import tick as tick_once

    report = tick_once(app.node)
    if app.deliveries is not None:
        # What is due goes out before the process ends (semantic 38); what fails waits for a later tick
        # or a serving node, with its backoff. The pass itself went well: a store that fails now fails
        # the delivery only, which waits in the outbox.
        try:
            app.deliveries.drain()
        except StoreError as error:
            say(_log, f"the notifications could not be delivered now: {error}", logging.WARNING)
    reply: Reply = {
        "ok": True,
        "fired": len(report.fired),
        "fire_ids": report.fired,
        "skipped": report.skipped,
    }
    finish(reply, as_json, lambda r: click.echo(f"fired {r['fired']}, skipped {r['skipped']}"))


@cli.command()
@pass_runtime
def serve(runtime: Runtime) -> None:
    """Runs the node, the HTTP API and MCP over HTTP (on node.listen) until SIGINT or SIGTERM; SIGHUP
    reloads the config."""
    from cronwright.fronts.cli.serve_hooks import ServeHooks

    hooks = ServeHooks()  # ops hook: first, before any process starts (systemd, reload)
    runtime.log_to_stderr()
    from cronwright.telemetry.relay import RelayWriter

    # This process fires and does nothing else; the fronts run in a process of their own (front_watch.py),
    # told of the node's events and state through `relay`, so no request takes what a firing needs.
    relay = RelayWriter()
    app = runtime.app(boot=True, serving=True, sinks=(relay,))
    fronts = _fronts(app, relay)
    # The main thread sleeps until a signal, or the end of the node's loop, sets `stop`: it never polls,
    # so an idle serve does not wake (DESIGN semantic 25). It is woken whatever thread a signal came to.
    from cronwright.fronts.cli.main_wait import MainWait

    stop = MainWait()
    stop.install()
    from cronwright.node.runner import Warms

    runner = app.node.runs.runner
    if isinstance(runner, Warms):
        runner.warm()  # its workers start now, not at the first firing

    def on_stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    # A change made by the fronts' process or a CLI wakes the node, and the dashboards are told.
    from cronwright.node.signal_wake import SignalWake

    SignalWake(app.node.wake).install(signal.SIGUSR1)  # its handler takes no lock: see signal_wake.py
    app.node.on_notes = _both(app.node.on_notes, relay.changed)
    hooks.serving(runtime, app, fronts)  # ops hook: SIGHUP reloads both processes; `cronwright reload`
    counts = {state: n for state, n in app.node.store.counts().items() if n}
    where = app.node.store.description
    shown = ", ".join(f"{n} {state}" for state, n in counts.items()) or "no schedules"
    say(_log, f"cronwright node {app.node.id} serving {where} ({shown}); Ctrl-C stops it",
        node=app.node.id, store=where, counts=counts)  # fmt: skip

    def node_loop() -> None:
        try:
            from cronwright.node.drive import serve_forever

            # ops hook: systemd's readiness and watchdog; the fronts' process hears how the node stands
            serve_forever(app.node, hooks.watch, after_pass=lambda: relay.passed(app.node))
        finally:
            stop.set()

    loop = threading.Thread(target=node_loop, name="cronwright-node", daemon=True)
    loop.start()
    if app.deliveries is not None:
        app.deliveries.start()  # its own thread: a slow channel never holds up a scheduling pass
    fronts.start()  # it says where it listens once it does
    # The socket listens already (bound above, before the node booted): from now on a connection waits in
    # its backlog for the fronts' process, so systemd may hear READY=1 once the node has booted too.
    hooks.listening()  # ops hook
    stop.wait()  # a signal handler runs on this thread and sets it; no timeout, so no polling
    say(_log, "stopping: no new requests or claims; waiting for runs in flight")
    hooks.stopping()  # ops hook: STOPPING=1
    fronts.stop()  # first: no request reaches a node that is stopping
    runtime.close()  # runs in flight get the shutdown grace, then are recorded interrupted
    say(_log, f"cronwright node {app.node.id} stopped", node=app.node.id)


def _fronts(app: App, relay: RelayWriter) -> FrontProcess:
    """The fronts' process, on a socket bound now: a bad or busy node.listen fails before anything runs."""
    from cronwright.fronts.cli.front_watch import FrontProcess
    from cronwright.fronts.http.listen import listening

    listen = app.config.node.listen
    try:
        bound = listening(listen)
    except (ValueError, OSError) as error:
        fail(f"cannot listen on {listen} (node.listen): {error}")
    return FrontProcess(bound, relay, app.config.path)


def _both(first: Callable[[], None] | None, second: Callable[[], None]) -> Callable[[], None]:
    def both() -> None:
        if first is not None:
            first()
        second()

    return both


@cli.command()
@click.option("--no-browser", is_flag=True, help="Print the link only; do not open a browser.")
@pass_runtime
def dashboard(runtime: Runtime, no_browser: bool) -> None:
    """Prints a one-time link (valid one minute, used once) that logs the local operator in to the
    dashboard of the serve running with this config, and opens a browser on it where it can."""
    from cronwright.fronts.ui.opener import NoServe, find_serve, link, open_browser

    config = runtime.config
    try:
        published = find_serve(config.store_url, config.node.listen)
    except NoServe as error:
        fail(str(error), 1)
    url = link(published, now())
    click.echo(url)
    opened = not no_browser and open_browser(url)
    said = "the link logs in as the operator once, within a minute"
    click.echo(said + ("; opened in a browser" if opened else ""), err=True)


@cli.command("mcp")
@click.option(
    "--source",
    "source_name",
    metavar="NAME",
    help="Act as this configured source (default: the local operator, who may use every target).",
)
@pass_runtime
def mcp_stdio(runtime: Runtime, source_name: str | None) -> None:
    """An MCP server over stdio, acting as a configured source."""
    from cronwright.fronts.mcp import serve_stdio

    source = operator()
    if source_name is not None:
        try:
            source = runtime.config.source(source_name)
        except ConfigError as error:
            fail(str(error))
    runtime.log_to_stderr()
    app = runtime.app()
    # A client that goes away stops this process (the SDK's stdio client sends SIGTERM): a run it started
    # is recorded `interrupted` at once, never left to a lease's expiry (semantic 28).
    with interrupted_on_stop(app.node):
        serve_stdio(app.protocol, app.node, source, lambda action: wake_local_nodes(app.node.store))
        app.node.wait_for_runs()  # stdin closed: the runs this process started end before it does
