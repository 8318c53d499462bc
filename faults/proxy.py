"""A PostgreSQL wire proxy that loses answers: the fault a real network makes and
pg_terminate_backend cannot (a call that committed, whose answer never arrives).

Workers connect through it (their DATABASE_URL names its port). It reads the client's messages
to know which taskpool function each call runs (Parse names the text, Bind the prepared
statement), and when a call of a chosen function is picked, it forwards the call, lets the
server run and commit it, and then drops the connection instead of forwarding the answer: the
worker's call is in doubt. The server flushes a call's answer only once it is done (at Sync,
after the commit), so the first bytes back are the sign that it committed.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable

# The untyped messages that can open a connection: SSLRequest and GSSENCRequest come before the
# startup message, which is untyped too.
NEGOTIATION_CODES = (80877103, 80877104)


class Proxy:
    """Listens on 127.0.0.1 (an ephemeral port); forwards to (host, port)."""

    def __init__(self, host: str, port: int, points: tuple[str, ...], probability: float, seed: int = 3) -> None:
        self.target = (host, port)
        self.points = points
        self.probability = probability
        self.enabled = True
        self.cuts: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closing = False
        threading.Thread(target=self._accept, daemon=True, name="proxy").start()

    def close(self) -> None:
        self._closing = True
        self._listener.close()

    def _pick(self, point: str) -> bool:
        with self._lock:
            return self.enabled and self._rng.random() < self.probability

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            _Link(self, client, server).start()


class _Link:
    """One proxied connection: two pumps, and the call in doubt, if any."""

    def __init__(self, proxy: Proxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = server
        self.statements: dict[bytes, bytes] = {}
        self.armed: str | None = None

    def start(self) -> None:
        threading.Thread(target=self._upstream, daemon=True).start()
        threading.Thread(target=self._downstream, daemon=True).start()

    def _close(self) -> None:
        for sock in (self.client, self.server):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _point(self, query: bytes) -> str | None:
        return next((p for p in self.proxy.points if p.encode() in query), None)

    def _upstream(self) -> None:
        """Client to server: forward each message; note which call a Parse/Bind/Query runs."""
        buffer = b""
        untyped = True
        try:
            while True:
                data = self.client.recv(65536)
                if not data:
                    break
                buffer += data
                while True:
                    if untyped:
                        if len(buffer) < 8:
                            break
                        length, code = struct.unpack("!II", buffer[:8])
                        if len(buffer) < length:
                            break
                        untyped = code in NEGOTIATION_CODES
                        buffer = buffer[length:]
                        continue
                    if len(buffer) < 5:
                        break
                    kind = buffer[:1]
                    length = struct.unpack("!I", buffer[1:5])[0]
                    if len(buffer) < 1 + length:
                        break
                    self._inspect(kind, buffer[5 : 1 + length])
                    buffer = buffer[1 + length :]
                self.server.sendall(data)
        except OSError:
            pass
        self._close()

    def _inspect(self, kind: bytes, body: bytes) -> None:
        point = None
        if kind == b"P":
            name, query = body.split(b"\0", 2)[:2]
            self.statements[name] = query
            point = self._point(query) if name == b"" else None
        elif kind == b"B":
            statement = body.split(b"\0", 2)[1]
            point = self._point(self.statements.get(statement, b""))
        elif kind == b"Q":
            point = self._point(body)
        if point is not None and self.armed is None and self.proxy._pick(point):
            self.armed = point

    def _downstream(self) -> None:
        """Server to client: forward, unless the call in flight was picked: then its answer is lost."""
        try:
            while True:
                data = self.server.recv(65536)
                if not data:
                    break
                if self.armed is not None:
                    with self.proxy._lock:
                        self.proxy.cuts[self.armed] += 1
                    break
                self.client.sendall(data)
        except OSError:
            pass
        self._close()


def watch(stop: threading.Event, step: Callable[[], None], interval: float) -> threading.Thread:
    """Run `step` every `interval` seconds in a thread until `stop` is set."""

    def loop() -> None:
        while not stop.wait(interval):
            step()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread
