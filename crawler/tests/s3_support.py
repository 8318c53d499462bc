"""An S3-compatible server on loopback for the crawler's tests: moto's standalone server (the S3
HTTP API, in memory), and a TCP relay in front of it that can cut a PUT part-way through its body,
as a server or a network that fails mid-upload would."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field

from moto.server import ThreadedMotoServer

# moto checks no signature: any key pair will do, and the region is boto3's default one.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "taskpool-test",
    "AWS_SECRET_ACCESS_KEY": "taskpool-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class MotoS3:
    """moto's S3 server in a thread of this process, on a free loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoS3:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()


@dataclass
class CuttingRelay:
    """A TCP relay to `upstream_port` on loopback. While `cutting` is set, a PUT request is
    passed on up to its headers and half the body bytes it sent first, then both connections
    are closed: the server sees a body cut short, the client a connection gone."""

    upstream_port: int
    cutting: threading.Event = field(default_factory=threading.Event)
    cuts: int = 0
    _listener: socket.socket = field(init=False)
    _closed: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        # A client sends a request's headers, then its body, and waits for the answer before its
        # next request on the connection: a request starts at the start of a chunk.
        cut_after_headers = False
        try:
            while chunk := client.recv(65536):
                if cut_after_headers or (self.cutting.is_set() and chunk.startswith(b"PUT ")):
                    end = chunk.find(b"\r\n\r\n")
                    headers, body = (chunk[: end + 4], chunk[end + 4 :]) if end >= 0 else (b"", chunk)
                    if not body:
                        upstream.sendall(headers)
                        cut_after_headers = True
                        continue
                    upstream.sendall(headers + body[: len(body) // 2])
                    self.cuts += 1
                    break
                upstream.sendall(chunk)
        except OSError:
            pass
        finally:
            for end_point in (client, upstream):
                _close(end_point)

    @staticmethod
    def _responses(upstream: socket.socket, client: socket.socket) -> None:
        try:
            while chunk := upstream.recv(65536):
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            for end_point in (client, upstream):
                _close(end_point)


def _close(end_point: socket.socket) -> None:
    try:
        end_point.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    end_point.close()
