"""A TCP relay on loopback that can freeze: a fault injector for frozen servers.

`Relay(host, port)` listens on a free loopback port and forwards every connection made to it to
host:port, both ways, from one thread. `freeze()` stops it forwarding (and accepting) while the
sockets stay open: the peers' kernels still acknowledge what is sent, and nothing comes back, as
with a server whose processes are stopped (SIGSTOP) or a host that hangs. `thaw()` forwards again.
"""

from __future__ import annotations

import selectors
import socket
import threading

_CHUNK = 65536


class Relay:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        # How many connections it has forwarded.
        self.accepted = 0
        self._frozen = threading.Event()
        self._stopped = threading.Event()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._run, name="relay", daemon=True)
        self._thread.start()

    def freeze(self) -> None:
        self._frozen.set()

    def thaw(self) -> None:
        self._frozen.clear()

    def close(self) -> None:
        """Stop relaying and close every socket (connects are refused from now on); again: nothing."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._thread.join(timeout=5)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        while not self._stopped.is_set():
            if self._frozen.is_set():
                self._stopped.wait(0.05)
                continue
            for key, _events in self._selector.select(timeout=0.05):
                if key.fileobj is self._listener:
                    self._accept()
                else:
                    self._forward(key.fileobj, key.data)  # type: ignore[arg-type]

    def _accept(self) -> None:
        try:
            client, _address = self._listener.accept()
        except BlockingIOError:
            return
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        for one, other in ((client, server), (server, client)):
            one.setblocking(True)
            self._selector.register(one, selectors.EVENT_READ, other)
        self.accepted += 1

    def _forward(self, source: socket.socket, destination: socket.socket) -> None:
        try:
            data = source.recv(_CHUNK)
            if data:
                destination.sendall(data)
                return
        except OSError:
            pass
        for sock in (source, destination):
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError):
                pass
            sock.close()
