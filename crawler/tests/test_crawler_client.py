"""HttpPlatformClient against a scripted HTTP server on loopback (no database, no simulator):
the URLs it asks, and how each kind of answer becomes a result or a PlatformError."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from taskpool_crawler.client import HttpPlatformClient, PlatformError


class Script:
    """What the server answers next: (status, body bytes, headers, seconds to sleep first)."""

    def __init__(self) -> None:
        self.answer: tuple[int, bytes, dict[str, str], float] = (200, b"{}", {}, 0.0)
        self.paths: list[str] = []

    def reply(
        self,
        status: int,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answer = (status, data, headers or {}, delay)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], stop: threading.Event) -> Iterator[str]:
    """A threaded server of `handler` on a free loopback port, its URL (no trailing slash);
    `stop` is set before it shuts down, for handlers that wait on it."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            script.paths.append(self.path)
            status, body, headers, delay = script.answer
            if delay and stop.wait(delay):
                return
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass

    with serving(Handler, stop) as url:
        yield f"{url}/", script


def test_list_stores_asks_the_state_and_returns_the_store_objects(
    server: tuple[str, Script],
) -> None:
    url, script = server
    stores = [
        {
            "platform_store_id": "s1",
            "name": "Green Leaf",
            "state": "AZ",
            "city": "Mesa",
            "menu_url": "https://menus.example/dutchie/green-leaf-mesa",
        }
    ]
    script.reply(200, {"platform": "dutchie", "state": "AZ", "stores": stores})
    client = HttpPlatformClient(url, "dutchie")
    assert client.list_stores("AZ") == stores
    assert script.paths == ["/platforms/dutchie/stores?state=AZ"]


def test_fetch_menu_returns_the_raw_body_unparsed(server: tuple[str, Script]) -> None:
    url, script = server
    script.reply(200, b'{"products": [')  # cut short: the client does not judge it
    client = HttpPlatformClient(url, "jane")
    assert client.fetch_menu("12 34/5") == b'{"products": ['
    assert script.paths == ["/platforms/jane/stores/12%2034%2F5/menu"]


def test_fetch_image_returns_the_bytes_and_type_within_a_bound(server: tuple[str, Script]) -> None:
    url, script = server
    script.reply(200, b"\x89PNG image", headers={"Content-Type": "image/png"})
    client = HttpPlatformClient(url, "jane")
    assert client.fetch_image(f"{url}images/flower-1.png", 100) == (b"\x89PNG image", "image/png")
    assert script.paths == ["/images/flower-1.png"]
    with pytest.raises(PlatformError, match="over the 4 allowed: refused unread") as raised:
        client.fetch_image(f"{url}images/flower-1.png", 4)
    assert not raised.value.retryable
    script.reply(404, {"error": "no image"})
    with pytest.raises(PlatformError, match="HTTP 404") as raised:
        client.fetch_image(f"{url}images/gone.png", 100)
    assert not raised.value.retryable


def test_resolve_returns_the_store_id_or_none_for_an_unknown_url(
    server: tuple[str, Script],
) -> None:
    url, script = server
    client = HttpPlatformClient(url, "jane")
    script.reply(200, {"platform_store_id": 4711})
    assert client.resolve("https://menus.example/jane/a b?x=1") == "4711"
    assert script.paths[-1] == (
        "/platforms/jane/resolve?menu_url=https%3A%2F%2Fmenus.example%2Fjane%2Fa+b%3Fx%3D1"
    )
    script.reply(404, {"error": "no store on jane has the menu URL", "status": 404})
    assert client.resolve("https://menus.example/jane/nowhere") is None


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_retryable(server: tuple[str, Script], status: int) -> None:
    url, script = server
    script.reply(status, {"error": "internal server error", "status": status})
    with pytest.raises(PlatformError) as raised:
        HttpPlatformClient(url, "dutchie").fetch_menu("s1")
    error = raised.value
    assert error.retryable and error.status == status
    assert f"HTTP {status}: internal server error" in str(error)
    assert "/platforms/dutchie/stores/s1/menu" in str(error)


def test_429_is_retryable_and_keeps_retry_after(server: tuple[str, Script]) -> None:
    url, script = server
    script.reply(429, {"error": "too many requests"}, headers={"Retry-After": "7"})
    with pytest.raises(PlatformError) as raised:
        HttpPlatformClient(url, "dutchie").list_stores("CA")
    assert raised.value.retryable
    assert raised.value.status == 429
    assert raised.value.retry_after == 7.0


@pytest.mark.parametrize("status", [400, 403, 404, 410])
def test_client_errors_are_not_retryable(server: tuple[str, Script], status: int) -> None:
    url, script = server
    script.reply(status, b"<html>nope</html>")
    with pytest.raises(PlatformError) as raised:
        HttpPlatformClient(url, "dutchie").fetch_menu("gone")
    assert not raised.value.retryable
    assert raised.value.status == status
    assert "<html>nope</html>" in str(raised.value)


def test_a_slow_answer_is_a_retryable_timeout(server: tuple[str, Script]) -> None:
    url, script = server
    script.reply(200, {"stores": []}, delay=5)
    client = HttpPlatformClient(url, "dutchie", timeout=0.3)
    started = time.monotonic()
    with pytest.raises(PlatformError) as raised:
        client.list_stores("AZ")
    assert time.monotonic() - started < 3
    assert raised.value.retryable and raised.value.status is None
    assert "no answer within 0.3 s" in str(raised.value)


def test_no_server_is_a_retryable_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(PlatformError) as raised:
        HttpPlatformClient(f"http://127.0.0.1:{port}", "dutchie", timeout=2).fetch_menu("s1")
    assert raised.value.retryable
    assert "refused" in str(raised.value).lower()


def test_a_listing_that_is_not_json_is_retryable(server: tuple[str, Script]) -> None:
    url, script = server
    script.reply(200, b"<html><h1>502 Bad Gateway</h1></html>")
    with pytest.raises(PlatformError) as raised:
        HttpPlatformClient(url, "dutchie").list_stores("AZ")
    assert raised.value.retryable
    assert "not JSON" in str(raised.value)
    script.reply(200, {"stores": "none"})
    with pytest.raises(PlatformError, match="no list of store objects"):
        HttpPlatformClient(url, "dutchie").list_stores("AZ")


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="TASKPOOL_PLATFORM_URL"):
        HttpPlatformClient("", "dutchie")
    with pytest.raises(ValueError, match="positive"):
        HttpPlatformClient("http://127.0.0.1:1", "dutchie", timeout=0)


class Streamer:
    """A loopback server that sends a body of `size` bytes a chunk at a time, without a
    Content-Length (the client learns the size only by reading), `pause` seconds between
    chunks, and counts the bytes the client took."""

    def __init__(self, size: int, chunk: int, pause: float = 0.0, declare: bool = False) -> None:
        self.size = size
        self.chunk = chunk
        self.pause = pause
        self.declare = declare
        self.served = 0
        self.stop = threading.Event()


@pytest.fixture
def streamer() -> Iterator[tuple[str, Streamer]]:
    """The URL of a server whose /slow answers at once ({}) and whose other paths stream as the
    fixture's Streamer says (set its fields before asking)."""
    stream = Streamer(0, 1)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.endswith("/quick"):
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
                return
            self.send_response(200)
            if stream.declare:
                self.send_header("Content-Length", str(stream.size))
            self.end_headers()
            left = stream.size
            try:
                while left > 0 and not stream.stop.is_set():
                    piece = b"x" * min(stream.chunk, left)
                    self.wfile.write(piece)
                    self.wfile.flush()
                    stream.served += len(piece)
                    left -= len(piece)
                    if stream.pause and stream.stop.wait(stream.pause):
                        return
            except OSError:
                pass

    with serving(Handler, stream.stop) as url:
        yield f"{url}/", stream


MIB = 1024 * 1024


def test_a_menu_over_its_bound_is_refused_as_soon_as_reading_passes_it(
    streamer: tuple[str, Streamer],
) -> None:
    url, stream = streamer
    stream.size, stream.chunk = 256 * MIB, 64 * 1024
    client = HttpPlatformClient(url, "dutchie", timeout=30, max_menu_bytes=1 * MIB)
    with pytest.raises(PlatformError) as raised:
        client.fetch_menu("s1")
    assert not raised.value.retryable and raised.value.status is None
    assert "over the 1048576 bytes allowed" in str(raised.value)
    assert "/platforms/dutchie/stores/s1/menu" in str(raised.value)
    time.sleep(0.5)
    # What the client read, plus what the kernel's socket buffers took: far short of the body.
    assert stream.served < 1 * MIB + 32 * MIB < stream.size


def test_a_menu_that_declares_a_length_over_its_bound_is_refused_unread(
    streamer: tuple[str, Streamer],
) -> None:
    url, stream = streamer
    stream.size, stream.chunk, stream.declare = 64 * MIB, 64 * 1024, True
    with pytest.raises(PlatformError, match=f"is {64 * MIB} bytes, over the {MIB} allowed"):
        HttpPlatformClient(url, "dutchie", max_menu_bytes=MIB).fetch_menu("s1")


def test_a_menu_within_its_bound_is_read_whole(streamer: tuple[str, Streamer]) -> None:
    url, stream = streamer
    stream.size, stream.chunk = 3 * MIB + 17, 100_000
    body = HttpPlatformClient(url, "dutchie", max_menu_bytes=4 * MIB).fetch_menu("s1")
    assert body == b"x" * (3 * MIB + 17)


def test_the_default_bound_holds_listings_and_resolves_too(streamer: tuple[str, Streamer]) -> None:
    url, stream = streamer
    stream.size, stream.chunk = 64 * MIB, 256 * 1024
    client = HttpPlatformClient(url, "dutchie")
    assert client.max_menu_bytes == 8 * MIB
    with pytest.raises(PlatformError, match=f"over the {8 * MIB} bytes allowed"):
        client.list_stores("AZ")
    with pytest.raises(PlatformError, match=f"over the {8 * MIB} bytes allowed"):
        client.resolve("https://example.test/menu")


def test_a_server_dripping_bytes_is_cut_at_the_deadline_and_the_other_requests_go_on(
    streamer: tuple[str, Streamer],
) -> None:
    url, stream = streamer
    # A byte every 0.1 s: each read gets a byte long before a per-read timeout of 1 s.
    stream.size, stream.chunk, stream.pause = 10_000, 1, 0.1
    client = HttpPlatformClient(url, "dutchie", timeout=1)
    outcome: dict[str, Any] = {}

    def fetch() -> None:
        try:
            client.fetch_menu("s1")
        except PlatformError as error:
            outcome["error"] = error

    dripping = threading.Thread(target=fetch)
    dripping.start()
    quick = [client.get(f"{url}quick") for _ in range(5)]
    dripping.join(timeout=20)
    assert not dripping.is_alive()
    assert quick == [b"{}"] * 5
    error = outcome["error"]
    assert error.retryable and error.status is None
    assert "no answer within 1 s" in str(error)
    assert 0 < stream.served < stream.size


def test_a_bad_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_menu_bytes"):
        HttpPlatformClient("http://127.0.0.1:1", "dutchie", max_menu_bytes=0)


@pytest.fixture
def keep_alive() -> Iterator[tuple[str, list[int]]]:
    """The URL of an HTTP/1.1 server that keeps connections open, and the client port of each
    request it answered: /moved redirects to /menu, /slow waits 5 s before its headers, any
    other path answers {} at once."""
    ports: list[int] = []
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            ports.append(self.client_address[1])
            if self.path.endswith("/moved"):
                self.send_response(302)
                self.send_header("Location", self.path.replace("/moved", "/menu"))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.path.endswith("/slow") and stop.wait(5):
                return
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    with serving(Handler, stop) as url:
        yield url, ports


def test_requests_one_after_the_other_share_one_pooled_connection(keep_alive: tuple[str, list[int]]) -> None:
    url, ports = keep_alive
    clients = [HttpPlatformClient(url, "dutchie"), HttpPlatformClient(url, "jane")]
    for client in clients * 3:
        assert client.get(f"{url}/quick") == b"{}"
    assert len(ports) == 6 and len(set(ports)) == 1


def test_a_redirect_is_followed(keep_alive: tuple[str, list[int]]) -> None:
    url, ports = keep_alive
    assert HttpPlatformClient(url, "dutchie").get(f"{url}/stores/moved") == b"{}"
    assert len(ports) == 2


def test_the_deadline_holds_on_a_pooled_connection_and_the_pool_goes_on(keep_alive: tuple[str, list[int]]) -> None:
    url, ports = keep_alive
    client = HttpPlatformClient(url, "dutchie", timeout=0.5)
    assert client.get(f"{url}/quick") == b"{}"
    started = time.monotonic()
    with pytest.raises(PlatformError, match="no answer within 0.5 s") as raised:
        client.get(f"{url}/slow")
    assert time.monotonic() - started < 3
    assert raised.value.retryable and raised.value.status is None
    assert client.get(f"{url}/quick") == b"{}"
    assert ports[1] == ports[0]
