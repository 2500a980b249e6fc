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

`cut()` is a network partition on demand, whatever the client is doing: every relayed connection is
closed at once and every new one refused, until `heal()` lets new connections through again.
`cut_when_sent(marker)` arms the same partition to start the moment a client sends a statement whose
SQL holds `marker`, in a query, a parse, or a bind of a statement prepared with it: that message is never
relayed, so its transaction never commits. `struck` is set once it has.

`hang()` is a stall rather than a partition: no byte is relayed either way from then on, but every
connection is kept open (and new ones are accepted, and wait too), so a client waits for an answer
that does not come, with no error to tell it, until `resume()` lets the held bytes through again.
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
        self._cut_marker: bytes | None = None  # a partition armed by `cut_when_sent`
        self.struck = threading.Event()
        self._flowing = threading.Event()  # cleared by `hang`: nothing is relayed until `resume`
        self._flowing.set()
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
            self._cut_marker = None

    def cut(self) -> None:
        """A partition: closes every relayed connection, both ways, and refuses new ones until `heal()`."""
        with self._lock:
            self._cut_marker = None
            self.refusing = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _close(sock)
        self.struck.set()

    def cut_when_sent(self, marker: bytes) -> None:
        """Arms a `cut()` that starts as a client sends a statement whose SQL holds `marker` (which is
        then never relayed): the partition catches that client in the middle of its write."""
        with self._lock:
            self._cut_marker = marker
            self.struck.clear()

    def heal(self) -> None:
        """Ends a `cut()`: new connections are relayed again (those it closed stay closed)."""
        with self._lock:
            self.refusing = False

    def hang(self) -> None:
        """A stall: from now on no byte is relayed either way, and no connection is closed (new ones are
        accepted, and wait too), until `resume()`."""
        self._flowing.clear()

    def resume(self) -> None:
        """Ends a `hang()`: what the connections held is relayed, and relaying goes on."""
        self._flowing.set()

    @property
    def hung(self) -> bool:
        return not self._flowing.is_set()

    def relayed_ports(self) -> set[int]:
        """The local ports of this proxy's open connections to the server (as the server sees them,
        its `client_port`): which backends serve this proxy's clients."""
        ports: set[int] = set()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with suppress(OSError):
                if sock.getpeername()[:2] == self._upstream:
                    ports.add(sock.getsockname()[1])
        return ports

    def close(self) -> None:
        self._closed.set()
        self._flowing.set()  # a hung link, let go, finds its sockets closed and ends
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
                # A cut that came while this connection was being made refuses it too: a connection
                # relayed past a cut would let its client through the partition.
                refusing = self.refusing
                if not refusing:
                    self._sockets += [client, server]
            if refusing:
                _close(client)
                _close(server)
                continue
            link = _Link(client, server, self._cut_now, self._cut_if_marked, self._flowing)
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

    def _cut_if_marked(self, sql: bytes) -> bool:
        """Whether the statement `sql`, about to be relayed, starts the armed partition (and starts it)."""
        with self._lock:
            marked = self._cut_marker is not None and self._cut_marker in sql
        if marked:
            self.cut()
        return marked


class _Link:
    """One client connection and its server connection."""

    def __init__(
        self,
        client: socket.socket,
        server: socket.socket,
        cut_now: Callable[[tuple[socket.socket, ...]], bool],
        cut_if_marked: Callable[[bytes], bool],
        flowing: threading.Event | None = None,
    ) -> None:
        self.client, self.server = client, server
        self._flowing = flowing  # while clear (a `hang`), nothing is relayed
        self._cut_now = cut_now
        self._cut_if_marked = cut_if_marked
        # The SQL of each statement this connection prepared, by name ("" for the unnamed one), so that
        # a bind of a prepared statement is known by its SQL too (psycopg prepares frequent ones).
        self._prepared: dict[bytes, bytes] = {}
        self._muted = threading.Event()  # set once a COMMIT's reply is to be lost
        self._answered = threading.Event()  # the server answered that COMMIT: cut now

    def client_to_server(self) -> None:
        stream = _Messages(self.client, startup=True)
        try:
            for kind, message in stream:
                self._wait_flowing()
                if self._cut_if_marked(self._statement(kind, message[5:])):
                    return  # the partition started: this message is never relayed
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

    def _statement(self, kind: bytes, body: bytes) -> bytes:
        """The SQL that a client message runs or prepares, b"" for any other message."""
        if kind == b"Q":
            return body
        if kind == b"P":  # Parse: the statement's name, then its SQL
            name, sql = body.split(b"\0", 2)[:2]
            self._prepared[name] = sql
            return sql
        if kind == b"B":  # Bind: the portal's name, then the name of the statement it runs
            statement = body.split(b"\0", 2)[1]
            return self._prepared.get(statement, b"")
        return b""

    def server_to_client(self) -> None:
        try:
            for kind, message in _Messages(self.server, startup=False):
                self._wait_flowing()
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

    def _wait_flowing(self) -> None:
        """Holds a message while the proxy hangs (its connection kept open), and lets it go on resume."""
        if self._flowing is not None:
            self._flowing.wait()

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
