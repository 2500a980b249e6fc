"""The fronts' process of `cronwright serve`: the HTTP API, MCP at /mcp, the dashboard at /ui/ and /metrics,
on the listening socket the node's process bound and handed down (front_watch.py starts this process).

It acts on the store as any CLI process does: its node runs no scheduling loop, and hands a run_now to the
serving node (semantic 28); each change it makes wakes that node, its parent, with SIGUSR1 (as `wake.py`
does for a CLI), so it lands at once. What it shows of the node (its events, for the Prometheus counters
and the dashboard's live updates, and how it stands) comes down a pipe (telemetry/relay.py); when that pipe
ends, the node's process is gone, even killed, and this process exits too: no orphan keeps the port.

Run as `python -m cronwright.fronts.cli.front_process --listen-fd N --relay-fd M --node-pid P [--config F]`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable

from cronwright.fronts.cli.runtime import Runtime
from cronwright.fronts.cli.wake_coalescing import CoalescedWake
from cronwright.telemetry.logs import say

_log = logging.getLogger("cronwright.cli")

# How many nice levels below the node's process the fronts run (semantic 42). On a machine with fewer
# cores than busy threads, the kernel's scheduler then gives the node and its workers the CPU first: a
# front busy with requests takes what the firing path leaves, rather than half of it. At 10 a front
# that wants a core beside a busy node gets about a tenth of it (Linux CFS weights 110 against 1024);
# an idle node leaves it every core, so requests slow only while firings need the CPU.
FRONTS_NICENESS = 10


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="cronwright-fronts")
    parser.add_argument("--config")
    parser.add_argument("--listen-fd", type=int, required=True)
    parser.add_argument("--relay-fd", type=int, required=True)
    parser.add_argument("--node-pid", type=int, required=True)
    args = parser.parse_args(argv)
    runtime = Runtime(args.config)
    runtime.store_unused = True  # the node's process has said which store it uses, if it had to
    runtime.log_to_stderr()
    listening = socket.socket(fileno=args.listen_fd)
    raise SystemExit(serve_fronts(runtime, listening, args.relay_fd, args.node_pid))


def serve_fronts(runtime: Runtime, listening: socket.socket, relay_fd: int, node_pid: int) -> int:
    """Serves the fronts on `listening` until SIGTERM, SIGINT or the end of the relay; the exit status."""
    from prometheus_client import CollectorRegistry

    from cronwright.fronts.cli.serve_hooks import reload_on_sighup
    from cronwright.fronts.http.asgi import Serving, create_app
    from cronwright.fronts.http.listen import parse_listen
    from cronwright.fronts.ui import links
    from cronwright.telemetry.relay import RelayReader
    from cronwright.telemetry.sinks import MetricsSink

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, frame: stop.set())
    registry = CollectorRegistry()
    counters = MetricsSink(registry)  # the node's events, and this process's own (a resume's skip)
    app = runtime.app(sinks=(counters,))
    app.metrics = registry
    # A burst of changes wakes the node once per window, not once each (wake_coalescing.py).
    wake_node = CoalescedWake(lambda: _signal_node(node_pid))
    app.node.on_notes = lambda: _changed_here(app.changes.changed, wake_node.changed)
    relay = RelayReader(relay_fd, [counters], app.changes.changed, ended=stop.set)
    relay.start()
    # SIGHUP comes from the node's process once it applied a reload: this process applies it too.
    reload_on_sighup(app, runtime.config_path)
    config = app.config
    dashboard_links = links.Links()
    host = parse_listen(config.node.listen)[0]
    asgi = create_app(app, host=host, links=dashboard_links, view=relay)
    http = Serving(asgi, listening, on_exit=stop.set)
    try:
        http.start()
    except RuntimeError as error:
        say(_log, str(error), logging.ERROR)
        return 1
    yield_to_the_node()  # once started: its imports at full speed, so a front that died is back soon
    say(_log, f"listening on {http.url} (HTTP API, /metrics, MCP at /mcp, dashboard at /ui/)",
        url=http.url, pid=os.getpid())  # fmt: skip
    # `cronwright dashboard` finds this process, and signs its one-time links, with the key in this file.
    key_file = links.key_file(config.store_url, config.node.listen)
    try:
        links.publish(key_file, http.url, dashboard_links.key)
    except OSError as error:
        say(_log, f"no dashboard link for `cronwright dashboard`: cannot write {key_file}: {error}",
            logging.WARNING, path=str(key_file))  # fmt: skip
    stop.wait()  # a signal handler, the relay's end or the server's end sets it; no timeout, no polling
    links.withdraw(key_file, dashboard_links.key)
    app.changes.close()  # ends the dashboard's event streams, which would hold up the HTTP server's stop
    http.stop()
    runtime.close()
    return 0


def yield_to_the_node() -> None:
    """Lowers the CPU priority of every thread of this process below the node's (on Linux each thread
    has its own nice level and policy, and a thread starts with its creator's, so the threads started
    later inherit it). SCHED_BATCH too: a front's thread woken by a request does not preempt a running
    node thread for it. Without /proc (not Linux), the calling thread alone. Where the system refuses,
    the fronts run as they would have."""
    try:
        threads = [int(task) for task in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    batch = getattr(os, "SCHED_BATCH", None)
    for thread in threads:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile, or a refusal
            level = os.getpriority(os.PRIO_PROCESS, thread)
            os.setpriority(os.PRIO_PROCESS, thread, min(level + FRONTS_NICENESS, 19))
        if batch is not None:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(thread, batch, os.sched_param(0))


def _changed_here(changed: Callable[[], None], wake_node: Callable[[], None]) -> None:
    """A change made here (or notifications written): the dashboards here show it, and the node wakes."""
    changed()
    wake_node()


def _signal_node(node_pid: int) -> None:
    if os.getppid() != node_pid:
        return  # the node's process is gone (its pid may be another's now): the relay's end stops this one
    with contextlib.suppress(OSError):
        os.kill(node_pid, signal.SIGUSR1)


if __name__ == "__main__":
    main()
