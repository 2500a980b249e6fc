"""Where serve listens: node.listen as a host and a port, and the listening socket, bound by the node's
process before anything runs (a bad or busy address fails at once) and served by its fronts' process.
Apart from asgi.py, so that the node's process binds it without importing the HTTP stack."""

from __future__ import annotations

import socket

__all__ = ["listening", "parse_listen"]


def parse_listen(listen: str) -> tuple[str, int]:
    """`host:port` (`[::1]:8765` for IPv6) as a host and a port; port 0 picks a free one."""
    host, sep, port = listen.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"node.listen {listen!r} is not host:port, such as 127.0.0.1:8765")
    return host, int(port)


def listening(listen: str) -> socket.socket:
    """A socket bound to `listen` (node.listen) and listening; ValueError or OSError if it cannot be."""
    return _bind(*parse_listen(listen))


def _bind(host: str, port: int) -> socket.socket:
    # IPPROTO_TCP, not 0 as socket.create_server has it: asyncio sets TCP_NODELAY only on connections of a
    # socket that says it is TCP, and without it every small reply waits 40 ms for a delayed ACK.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock
