"""A TCP proxy between a store and PostgreSQL that loses the server's reply to COMMIT: a real wire fault.

It listens on 127.0.0.1 only, on a port of its own, and relays every byte both ways, reading the
PostgreSQL wire protocol (v3) as it goes. While `drop_commit_replies` is above zero, a client's query
(`Q`) or parse (`P`) message that holds COMMIT is relayed to the server (a parse with the messages that
follow it up to its Sync, as a pipeline sends them), and what the server answers is read, up to its
ReadyForQuery, so the commit has landed; then both sides are cut and the answer is never
relayed. The client sees its connection drop after COMMIT: it cannot know that the commit landed.

With `refuse_after_cut`, the proxy then cuts every other connection too, and refuses every new one
(accepts and closes it) until `restore()`: the server is out of reach, so a read back cannot tell.
Clients must connect with `sslmode=disable` (see `url`): an encrypted stream could not be read.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from contextlib import suppress
from urllib.parse import urlsplit, urlunsplit

import pg

# A cut waits this long at most for the server's answer to the COMMIT it relayed.
ANSWER_WAIT = 5.0


class CommitReplyDropper:
    def __init__(self, server_url: str) -> None:
        parts = urlsplit(server_url)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._server_url = server_url
        self._lock = threading.Lock()
        self.drop_commit_replies = 0  # how many more COMMIT replies to lose
        self.refuse_after_cut = False
        self.refusing = False
        self.cuts = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="pg-proxy", daemon=True)
        self._thread.start()

    def url(self, store_url: str) -> str:
        """`store_url` (a URL of the test server, with its query) pointed at this proxy, unencrypted."""
        parts = urlsplit(store_url)
        user = f"{parts.username}@" if parts.username else ""
        proxied = urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))
        return pg.with_params(proxied, sslmode="disable", gssencmode="disable")

    def lose_commit_replies(self, count: int, refuse_after_cut: bool = False) -> None:
        with self._lock:
            self.drop_commit_replies = count
            self.refuse_after_cut = refuse_after_cut

    def restore(self) -> None:
        """No more faults: COMMIT replies are relayed, and new connections are let through again."""
        with self._lock:
            self.drop_commit_replies = 0
            self.refuse_after_cut = False
            self.refusing = False

    def close(self) -> None:
        self._closed.set()
        self._thread.join(5)
        self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _close(sock)

    # -- relaying ----------------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                refusing = self.refusing
            if refusing:
                _close(client)
                continue
            try:
                server = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            for sock in (client, server):
                sock.settimeout(None)
                # Relayed at once: small messages held back for an ACK would slow every query ~40 ms.
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._sockets += [client, server]
            link = _Link(client, server, self._cut_now)
            for target in (link.client_to_server, link.server_to_client):
                threading.Thread(target=target, name="pg-proxy-link", daemon=True).start()

    def _cut_now(self, keep: tuple[socket.socket, ...]) -> bool:
        """Whether this COMMIT's reply is to be lost (and counts it); `keep` is the link that asks."""
        with self._lock:
            if self.drop_commit_replies <= 0:
                return False
            self.drop_commit_replies -= 1
            self.cuts += 1
            if self.refuse_after_cut:
                self.refusing = True
                for sock in self._sockets:
                    if sock not in keep:
                        _close(sock)
            return True


class _Link:
    """One client connection and its server connection."""

    def __init__(
        self,
        client: socket.socket,
        server: socket.socket,
        cut_now: Callable[[tuple[socket.socket, ...]], bool],
    ) -> None:
        self.client, self.server = client, server
        self._cut_now = cut_now
        self._muted = threading.Event()  # set once a COMMIT's reply is to be lost
        self._answered = threading.Event()  # the server answered that COMMIT: cut now

    def client_to_server(self) -> None:
        stream = _Messages(self.client, startup=True)
        try:
            for kind, message in stream:
                commit = kind in (b"Q", b"P") and b"COMMIT" in message[5:].upper()
                if commit and self._cut_now((self.client, self.server)):
                    self._muted.set()
                    self.server.sendall(message)
                    if kind == b"P":
                        # The extended protocol (a pipeline): the COMMIT parsed runs once its Bind and
                        # Execute have followed, at the Sync; relay up to it, so that it does land.
                        for more, rest in stream:
                            self.server.sendall(rest)
                            if more == b"S":
                                break
                    self._answered.wait(ANSWER_WAIT)
                    return
                self.server.sendall(message)
        except OSError:
            pass
        finally:
            self._close()

    def server_to_client(self) -> None:
        try:
            for kind, message in _Messages(self.server, startup=False):
                if self._muted.is_set():
                    if kind == b"Z":  # ReadyForQuery: the COMMIT is done, and its answer is lost
                        self._answered.set()
                        return
                    continue
                self.client.sendall(message)
        except OSError:
            pass
        finally:
            self._answered.set()
            self._close()

    def _close(self) -> None:
        _close(self.client)
        _close(self.server)


class _Messages:
    """The messages of one direction of a v3 stream, whole: (type byte, the bytes as they came).

    The client's first message (the startup packet) has no type byte; it is given the type b"".
    """

    def __init__(self, sock: socket.socket, startup: bool) -> None:
        self._sock = sock
        self._startup = startup
        self._buffer = b""

    def __iter__(self) -> _Messages:
        return self

    def __next__(self) -> tuple[bytes, bytes]:
        if self._startup:
            self._startup = False
            (length,) = struct.unpack("!i", self._take(4, peek=True))
            return b"", self._take(length)
        header = self._take(5, peek=True)
        (length,) = struct.unpack("!i", header[1:5])
        return header[:1], self._take(1 + length)

    def _take(self, count: int, peek: bool = False) -> bytes:
        while len(self._buffer) < count:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise StopIteration
            self._buffer += chunk
        taken = self._buffer[:count]
        if not peek:
            self._buffer = self._buffer[count:]
        return taken


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()
