"""The simulated platform over HTTP: JSON endpoints, an admin API and injectable faults.

Endpoints (JSON in and out; errors are {"error": message, "status": code}):

    GET  /health                                        {"ok": true, "clock_hours": h}
    GET  /platforms/{p}/stores[?state=XX]               the stores open now (all states without
                                                        state): {"platform", "state", "stores"}
    GET  /platforms/{p}/stores/{platform_store_id}/menu the menu now: {"platform",
                                                        "platform_store_id", "clock_hours",
                                                        "products"}; 404 for an unknown store or
                                                        one not open yet
    GET  /platforms/{p}/resolve?menu_url=URL            {"platform_store_id"}; 404 when no open
                                                        store has that URL
    GET  /platforms/{p}/images/{name}                   a product image (image/png), the menus'
                                                        image_url; 404 for an unknown name. A
                                                        broken image (the simulator's
                                                        broken_image_share) answers 404, or 200
                                                        with bytes that are not an image, or
                                                        200 with the PNG cut short, every time
    POST /admin/clock   {"advance_hours": 4}            {"clock_hours": new}
    POST /admin/faults  {"platform": p, <settings>}     the platform's fault settings
    GET  /admin/state                                   clock, platforms, store counts, faults,
                                                        request counters

An unknown platform is a 404 on every /platforms/ endpoint. Fault settings are per platform:
`latency_ms` (sleep before answering), `error_rate` (the share of requests that fail) with
`error_kinds` (any of "500", "429" (with Retry-After), "timeout" (sleep 30 s, then 504, so a
client with a shorter timeout times out)), `corrupt_rate` (the share of the others that answer
200 with a truncated or non-JSON body) and `down` (every request answers 500). A POST sets any
subset of them. Faults apply to the platform endpoints only, never to /health or /admin.

Whether a request fails, how, and how a body is corrupted are drawn from a random.Random seeded
with (seed, platform, the platform's request number), so the same requests in the same order
fail the same way in every run. Each platform request is counted by outcome (ok, not_found,
bad_request, error_500, error_429, timeout, corrupt, down) in /admin/state; a broken image
counts as not_found or corrupt. A menu's image paths are made absolute with the server's URL.

`serve(simulator)` starts a server in a background thread and returns it; `stop()` (or leaving
its `with` block) wakes the requests that sleep (latency, timeout), closes idle connections and
joins every thread.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from taskpool_crawler.simulator.model import (
    Simulator,
    UnknownImage,
    UnknownPlatform,
    UnknownStore,
    encode,
)

log = logging.getLogger("taskpool_crawler.simulator")

ERROR_KINDS = ("500", "429", "timeout")
OUTCOMES = (
    "ok", "not_found", "bad_request", "error_500", "error_429", "timeout", "corrupt", "down",
)
# A "timeout" fault answers after this long (unless the server stops first).
TIMEOUT_FAULT_SECONDS = 30.0
RETRY_AFTER_SECONDS = 1
# stop() lets requests in flight finish this long before closing their connections.
STOP_GRACE_SECONDS = 0.5
MAX_BODY_BYTES = 1 << 20
# What a broken image that is "not an image" answers instead of its PNG.
NOT_AN_IMAGE_BODY = b"<html><body><h1>Image unavailable</h1></body></html>\n"


@dataclass(frozen=True)
class _Raw:
    """A platform answer that is not JSON (an image): its body, its content type, its outcome."""

    body: bytes
    content_type: str
    outcome: str = "ok"


@dataclass
class FaultSettings:
    """One platform's faults (all off by default)."""

    latency_ms: float = 0
    error_rate: float = 0.0
    error_kinds: list[str] = field(default_factory=lambda: list(ERROR_KINDS))
    corrupt_rate: float = 0.0
    down: bool = False

    def updated(self, settings: dict[str, Any]) -> FaultSettings:
        """A copy with `settings` applied; ValueError names a bad key or value."""
        unknown = sorted(set(settings) - set(asdict(self)))
        if unknown:
            raise ValueError(
                f"unknown fault setting(s) {', '.join(unknown)}; the settings are"
                f" {', '.join(asdict(self))}"
            )
        new = FaultSettings(**{**asdict(self), **settings})
        if not _is_number(new.latency_ms) or new.latency_ms < 0:
            raise ValueError(f"latency_ms must be a number >= 0, not {new.latency_ms!r}")
        for name in ("error_rate", "corrupt_rate"):
            rate = getattr(new, name)
            if not _is_number(rate) or not 0 <= rate <= 1:
                raise ValueError(f"{name} must be a number from 0 to 1, not {rate!r}")
            setattr(new, name, float(rate))
        kinds = new.error_kinds
        if isinstance(kinds, str) or not isinstance(kinds, (list, tuple)):
            raise ValueError(f"error_kinds must be a list of {', '.join(ERROR_KINDS)}")
        kinds = [str(kind) for kind in kinds]
        if not kinds or any(kind not in ERROR_KINDS for kind in kinds):
            raise ValueError(
                f"error_kinds must be a non-empty list of {', '.join(ERROR_KINDS)}, not {kinds!r}"
            )
        new.error_kinds = kinds
        if not isinstance(new.down, bool):
            raise ValueError(f"down must be true or false, not {new.down!r}")
        return new


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that joins its request threads on close and knows its connections."""

    daemon_threads = False
    block_on_close = True
    app: SimulatorServer

    def __init__(self, address: tuple[str, int], app: SimulatorServer) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.app = app
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)


class SimulatorServer:
    """The HTTP server of a Simulator, on a background thread. See the module docstring."""

    def __init__(self, simulator: Simulator, host: str = "127.0.0.1", port: int = 0) -> None:
        self.simulator = simulator
        self._lock = threading.Lock()
        self._faults = {p: FaultSettings() for p in simulator.platforms}
        self._requests = {p: 0 for p in simulator.platforms}
        self._outcomes = {p: dict.fromkeys(OUTCOMES, 0) for p in simulator.platforms}
        self.stopping = threading.Event()
        self._httpd = _HTTPServer((host, port), self)
        self.host = host
        self.port: int = self._httpd.server_address[1]
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> SimulatorServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"simulator-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: wake sleeping requests, close connections, join every thread."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self.stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while time.monotonic() < deadline:
            with self._httpd.connections_lock:
                if not self._httpd.connections:
                    break
            time.sleep(0.01)
        with self._httpd.connections_lock:
            left = list(self._httpd.connections)
        for connection in left:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()  # joins the request threads

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # The admin API, in Python

    def advance(self, hours: float) -> float:
        """Move the simulator's clock forward; the new clock (hours)."""
        return self.simulator.advance(hours)

    def set_faults(self, platform: str, **settings: Any) -> dict[str, Any]:
        """Change any of a platform's fault settings; the platform's settings."""
        self.simulator.check_platform(platform)
        with self._lock:
            self._faults[platform] = self._faults[platform].updated(settings)
            return {"platform": platform, **asdict(self._faults[platform])}

    def faults(self, platform: str) -> dict[str, Any]:
        self.simulator.check_platform(platform)
        with self._lock:
            return {"platform": platform, **asdict(self._faults[platform])}

    def state(self) -> dict[str, Any]:
        """The simulator's summary, with fault settings and request counters per platform."""
        summary = self.simulator.summary()
        with self._lock:
            summary["faults"] = {p: asdict(f) for p, f in self._faults.items()}
            summary["requests"] = {
                p: {"total": self._requests[p], **self._outcomes[p]} for p in self._requests
            }
        return summary

    # For the handler

    def next_request(self, platform: str) -> tuple[FaultSettings, random.Random]:
        """Count a platform request; its fault settings and its seeded random generator."""
        with self._lock:
            self._requests[platform] += 1
            number = self._requests[platform]
            faults = self._faults[platform]
        return faults, random.Random(f"faults:{self.simulator.seed}:{platform}:{number}")

    def count(self, platform: str, outcome: str) -> None:
        with self._lock:
            self._outcomes[platform][outcome] += 1


def serve(simulator: Simulator, host: str = "127.0.0.1", port: int = 0) -> SimulatorServer:
    """Serve `simulator` on host:port (0: a free port) from a background thread; the server."""
    return SimulatorServer(simulator, host, port).start()


class _Reply(Exception):
    """An answer other than 200, raised from the routing code."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    server_version = "taskpool-simulator/0.1"
    # An idle connection is dropped after this long.
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    # Dispatch

    def _handle(self, method: str) -> None:
        try:
            self._dispatch(method)
        except Exception:
            log.exception("simulator: %s %s failed", method, self.path)
            self._send_error(_Reply(500, "the simulator failed (a bug): see its log"))

    def _dispatch(self, method: str) -> None:
        parts = urlsplit(self.path)
        segments = [unquote(s) for s in parts.path.strip("/").split("/")]
        query = parse_qs(parts.query)
        if segments[0] == "platforms" and len(segments) >= 2:
            self._platform_request(method, segments[1], segments[2:], query)
            return
        try:
            status, document = self._route(method, segments)
        except _Reply as reply:
            self._send_error(reply)
            return
        self._send(status, encode(document))

    def _route(self, method: str, segments: list[str]) -> tuple[int, Any]:
        app = self.server.app
        if segments == ["health"]:
            self._allow(method, "GET")
            return 200, {"ok": True, "clock_hours": app.simulator.clock_hours}
        if segments == ["admin", "state"]:
            self._allow(method, "GET")
            return 200, app.state()
        if segments == ["admin", "clock"]:
            self._allow(method, "POST")
            body = self._json_body()
            if set(body) != {"advance_hours"}:
                raise _Reply(400, 'the body must be {"advance_hours": <hours >= 0>}')
            try:
                return 200, {"clock_hours": app.advance(body["advance_hours"])}
            except ValueError as error:
                raise _Reply(400, str(error)) from error
        if segments == ["admin", "faults"]:
            self._allow(method, "POST")
            body = self._json_body()
            platform = body.pop("platform", None)
            if not isinstance(platform, str):
                raise _Reply(400, 'the body needs "platform": the platform whose faults to set')
            try:
                return 200, app.set_faults(platform, **body)
            except UnknownPlatform as error:
                raise _Reply(404, str(error)) from error
            except ValueError as error:
                raise _Reply(400, str(error)) from error
        raise _Reply(404, f"no such endpoint: {self.path}")

    def _platform_request(
        self, method: str, platform: str, rest: list[str], query: dict[str, list[str]]
    ) -> None:
        app = self.server.app
        if platform not in app.simulator.platforms:
            self._send_error(_Reply(404, str(UnknownPlatform(platform))))
            return
        faults, rng = app.next_request(platform)
        # Drawn whatever the settings, so a request's fate depends on its number alone.
        fail, kind_draw, corrupt, corrupt_how = (rng.random() for _ in range(4))
        if faults.latency_ms and app.stopping.wait(faults.latency_ms / 1000):
            return
        if faults.down:
            app.count(platform, "down")
            self._send_error(_Reply(500, f"{platform} is down"))
            return
        if fail < faults.error_rate:
            kind = faults.error_kinds[int(kind_draw * len(faults.error_kinds))]
            if kind == "500":
                app.count(platform, "error_500")
                self._send_error(_Reply(500, "internal server error"))
            elif kind == "429":
                app.count(platform, "error_429")
                self._send_error(
                    _Reply(429, "too many requests",
                           {"Retry-After": str(RETRY_AFTER_SECONDS)})
                )
            else:
                app.count(platform, "timeout")
                if not app.stopping.wait(TIMEOUT_FAULT_SECONDS):
                    self._send_error(_Reply(504, "gateway timeout"))
            return
        try:
            document = self._platform_route(method, platform, rest, query)
        except _Reply as reply:
            app.count(platform, "not_found" if reply.status == 404 else "bad_request")
            self._send_error(reply)
            return
        content_type = None
        if isinstance(document, _Raw):
            body, content_type = document.body, document.content_type
            if document.outcome != "ok":
                app.count(platform, document.outcome)
                self._send(200, body, content_type=content_type)
                return
        else:
            body = encode(document)
        if corrupt < faults.corrupt_rate:
            app.count(platform, "corrupt")
            if corrupt_how < 0.5:
                body = body[: len(body) // 2]
            else:
                body = b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"
        else:
            app.count(platform, "ok")
        self._send(200, body, content_type=content_type)

    def _platform_route(
        self, method: str, platform: str, rest: list[str], query: dict[str, list[str]]
    ) -> Any:
        simulator = self.server.app.simulator
        try:
            if rest == ["stores"]:
                self._allow(method, "GET")
                state = _one(query, "state")
                stores = simulator.stores(platform, state)
                return {
                    "platform": platform,
                    "state": state.upper() if state is not None else None,
                    "stores": [store.to_json() for store in stores],
                }
            if len(rest) == 3 and rest[0] == "stores" and rest[2] == "menu":
                self._allow(method, "GET")
                menu = simulator.menu(platform, rest[1])
                for product in menu["products"]:
                    if product["image_url"] is not None:
                        product["image_url"] = self.server.app.url + product["image_url"]
                return menu
            if len(rest) == 2 and rest[0] == "images":
                self._allow(method, "GET")
                return self._image(platform, rest[1])
            if rest == ["resolve"]:
                self._allow(method, "GET")
                menu_url = _one(query, "menu_url")
                if not menu_url:
                    raise _Reply(400, "resolve needs ?menu_url=URL")
                return {"platform_store_id": simulator.resolve(platform, menu_url)}
        except (UnknownStore, UnknownImage) as error:
            raise _Reply(404, str(error)) from error
        raise _Reply(404, f"no such endpoint: {self.path}")

    def _image(self, platform: str, name: str) -> _Raw:
        """An image's PNG, or what its breakage answers instead."""
        simulator = self.server.app.simulator
        data = simulator.image(platform, name)
        broken = simulator.broken_image(name)
        if broken == "not_found":
            raise _Reply(404, f"image {name!r} is gone from {platform}")
        if broken == "not_an_image":
            return _Raw(NOT_AN_IMAGE_BODY, "image/png", outcome="corrupt")
        if broken == "truncated":
            return _Raw(data[: len(data) // 2], "image/png", outcome="corrupt")
        return _Raw(data, "image/png")

    # Helpers

    def _allow(self, method: str, allowed: str) -> None:
        if method != allowed:
            raise _Reply(405, f"{method} not allowed here (only {allowed})", {"Allow": allowed})

    def _json_body(self) -> dict[str, Any]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise _Reply(400, "bad Content-Length") from None
        if length > MAX_BODY_BYTES:
            raise _Reply(413, f"the body is over {MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as error:
            raise _Reply(400, f"the body is not JSON: {error}") from error
        if not isinstance(body, dict):
            raise _Reply(400, "the body must be a JSON object")
        return body

    def _send_error(self, reply: _Reply) -> None:
        self._send(
            reply.status, encode({"error": reply.message, "status": reply.status}), reply.headers
        )

    def _send(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type or "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            log.debug("the client left before the answer")


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise _Reply(400, f"give {name} once")
    return values[0]
