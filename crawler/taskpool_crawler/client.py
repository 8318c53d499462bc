"""The platform interface the handlers crawl, and its HTTP implementation.

A platform lists its stores by state, serves each store's menu, and resolves a menu URL to the
store's id on the platform. `PlatformClient` is that interface; `HttpPlatformClient` speaks the
simulator's HTTP API (`pyworker simulator`):

    GET /platforms/{platform}/stores?state=XX               {"stores": [{"platform_store_id", ...}]}
    GET /platforms/{platform}/stores/{platform_store_id}/menu   the menu JSON (returned raw)
    GET /platforms/{platform}/resolve?menu_url=URL          {"platform_store_id"}
    GET <a menu product's image_url>                       the image's bytes and Content-Type

To crawl a real platform, implement the four methods (raising PlatformError for what went
wrong) and install a factory with `taskpool_crawler.handlers.set_client_factory`.

Given a `ProxyPool`, every request (`get`, which any other platform request may call too) goes
through the pool's next proxy. A failure of the proxy itself (it cannot be reached, it answers
407, 502, 503 or 504 itself, no answer within the timeout, the connection breaks) is reported,
resting the proxy, and the request is tried through the next one, at most `proxy_tries` proxies
in all; an answer the platform gave through a proxy (a 404, 429, 500) is the platform's and
counts as the proxy's success. When no proxy could carry it, ProxyUnavailable (retryable).

Every answer is bounded in size and in time, so that one platform can neither fill a worker's
memory nor hold one of its slots for ever. The body is read in chunks and refused as soon as it
passes its bound (a JSON answer, menus included: `max_menu_bytes`; an image: the bound its caller
gives), or at once when its Content-Length says it will: PlatformError, not retryable, the
platform's answer (not a proxy's failure). `timeout` is one deadline for each try of a request,
direct or through one proxy: connecting, the headers and every read of the body; a socket
timeout alone would bound each read, and a server dripping a byte at a time would never reach
it. At the deadline a watchdog shuts the connection down, whatever it is waiting for, and the
try fails, retryable (through a proxy, as the proxy's failure: the next proxy gets a deadline of
its own). A request so takes at most proxy_tries deadlines in all.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import httpx2

USER_AGENT = "taskpool-crawler/0.1"
# Error bodies are quoted in messages up to this many characters.
BODY_EXCERPT_CHARS = 200
# How many proxies one request may try before it fails (each failing one is rested).
DEFAULT_PROXY_TRIES = 3
# Statuses a proxy answers itself when it cannot do its job: its credentials refused, or the
# gateway statuses (it could not reach the platform, or not in time, or it is overloaded).
PROXY_FAILURE_STATUSES = frozenset({407, 502, 503, 504})
# The most a JSON answer (a menu, a store listing, a resolve) may be, by default: a menu is well
# under a megabyte, and twenty of these at once, parsed, still fit a worker of 512 MiB.
DEFAULT_MAX_MENU_BYTES = 8 * 1024 * 1024
# A body is read this much at a time, so that reading stops near its bound.
READ_CHUNK_BYTES = 64 * 1024
# An error answer's body is read this far, for the message that quotes it.
ERROR_BODY_MAX_BYTES = 64 * 1024
# The connection pool of each httpx client (the direct one, one per proxy): a worker's slots
# (--concurrency) share it, and a request waits for a free connection within its deadline.
MAX_CONNECTIONS = 64
MAX_IDLE_CONNECTIONS = 16
IDLE_CONNECTION_SECONDS = 30.0
# The proxies whose client (and idle connections) the process keeps at once.
PROXY_CLIENTS_KEPT = 32
# Redirects followed, as urllib did, up to its limit.
MAX_REDIRECTS = 10


class PlatformError(Exception):
    """A platform request failed.

    retryable: whether asking again later may work (HTTP 429 and 5xx, timeouts, connection
    errors, a listing that is not JSON) or not (404 and the other 4xx). status is the HTTP
    status when there was one; retry_after the seconds a 429 or 503 asked to wait, if it said.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


class ProxyUnavailable(PlatformError):
    """No proxy could carry a request: every proxy of the platform is rested, or each one tried
    failed. Retryable; a failure of the proxies, not of the platform (its circuit breaker is not
    told). retry_after, when every proxy is rested: the seconds until the first is back."""


@dataclass(frozen=True)
class Proxy:
    """A proxy to send one request through. label is url with its credentials masked: what
    messages and logs show."""

    id: int
    url: str
    label: str


class ProxyPool(Protocol):
    """Where a client's proxies come from (taskpool_crawler.proxies.DatabaseProxies: the rows of
    crawler_proxies)."""

    def take(self, platform: str) -> Proxy | None:
        """The proxy the platform's next request goes through; None to go direct (it has none).
        ProxyUnavailable when it has proxies but every one is rested."""
        ...

    def report(self, proxy: Proxy, succeeded: bool, error: str | None = None) -> None:
        """How the request through `proxy` went, as far as the proxy is concerned."""
        ...


class _ProxyFailed(Exception):
    """The proxy, not the platform, failed a request (internal to HttpPlatformClient.get)."""


class PlatformClient(Protocol):
    """What the handlers need of a platform. `platform` is its name in taskpool."""

    platform: str

    def list_stores(self, state: str) -> list[dict[str, Any]]:
        """The stores open in `state`: dicts with platform_store_id, name, state, city and
        menu_url (the fields upsert_discovered_stores takes)."""
        ...

    def fetch_menu(self, platform_store_id: str) -> bytes:
        """The store's menu, the raw body as the platform sent it (saved as it is, then parsed).
        PlatformError(retryable=False) when the platform does not know the store."""
        ...

    def resolve(self, menu_url: str) -> str | None:
        """The platform_store_id of the store whose menu is at `menu_url`; None when the
        platform knows no such store."""
        ...

    def fetch_image(self, url: str, max_bytes: int) -> tuple[bytes, str]:
        """The bytes and Content-Type of the image at `url` (a menu's image_url).
        PlatformError(retryable=False) for a 404, or for an answer over `max_bytes` (refused
        unread past that)."""
        ...


class HttpPlatformClient:
    """PlatformClient over the simulator's HTTP API (httpx, over connections pooled for the
    whole process), through the proxies of `proxies` when given. `timeout`: the seconds each
    try of a request may take, all of it; `max_menu_bytes`: the most a JSON answer may be."""

    def __init__(
        self,
        base_url: str,
        platform: str,
        timeout: float = 10,
        *,
        proxies: ProxyPool | None = None,
        proxy_tries: int = DEFAULT_PROXY_TRIES,
        max_menu_bytes: int = DEFAULT_MAX_MENU_BYTES,
    ) -> None:
        if not base_url:
            raise ValueError("the platform base URL is empty: set TASKPOOL_PLATFORM_URL")
        if timeout <= 0:
            raise ValueError(f"the timeout must be positive, not {timeout}")
        if proxy_tries < 1:
            raise ValueError(f"proxy_tries must be at least 1, not {proxy_tries}")
        if max_menu_bytes < 1:
            raise ValueError(f"max_menu_bytes must be at least 1, not {max_menu_bytes}")
        self.base_url = base_url.rstrip("/")
        self.platform = platform
        self.timeout = timeout
        self.proxies = proxies
        self.proxy_tries = proxy_tries
        self.max_menu_bytes = max_menu_bytes

    def __repr__(self) -> str:
        return (
            f"HttpPlatformClient({self.base_url!r}, {self.platform!r}, timeout={self.timeout},"
            f" max_menu_bytes={self.max_menu_bytes})"
        )

    def _url(self, *segments: str, query: dict[str, str] | None = None) -> str:
        path = "/".join(
            quote(segment, safe="") for segment in ("platforms", self.platform, *segments)
        )
        return f"{self.base_url}/{path}" + (f"?{urlencode(query)}" if query else "")

    def list_stores(self, state: str) -> list[dict[str, Any]]:
        url = self._url("stores", query={"state": state})
        document = _json_document(self.get(url), url)
        stores = document.get("stores") if isinstance(document, dict) else None
        if not isinstance(stores, list) or not all(isinstance(s, dict) for s in stores):
            raise PlatformError(
                f"GET {url}: the answer has no list of store objects under 'stores'",
                retryable=True,
            )
        return stores

    def fetch_menu(self, platform_store_id: str) -> bytes:
        return self.get(self._url("stores", str(platform_store_id), "menu"))

    def resolve(self, menu_url: str) -> str | None:
        url = self._url("resolve", query={"menu_url": menu_url})
        try:
            body = self.get(url)
        except PlatformError as error:
            if error.status == 404:
                return None
            raise
        document = _json_document(body, url)
        store_id = document.get("platform_store_id") if isinstance(document, dict) else None
        if (
            not isinstance(store_id, (str, int))
            or isinstance(store_id, bool)
            or str(store_id) == ""
        ):
            raise PlatformError(f"GET {url}: the answer has no platform_store_id", retryable=True)
        return str(store_id)

    def fetch_image(self, url: str, max_bytes: int) -> tuple[bytes, str]:
        return self.get_with_type(url, accept="image/*", max_bytes=max_bytes)

    def get(self, url: str) -> bytes:
        """The body of a 200 answer to GET `url`, at most max_menu_bytes; PlatformError for
        anything else."""
        return self.get_with_type(url)[0]

    def get_with_type(
        self, url: str, accept: str = "application/json", max_bytes: int | None = None
    ) -> tuple[bytes, str]:
        """The body and Content-Type of a 200 answer to GET `url`, each try of it within
        `timeout` seconds; PlatformError for anything else, and (not retryable) for a body over
        `max_bytes` (max_menu_bytes when None), read no further.

        Through the next proxy of the pool, if there is one; a proxy that fails is reported and
        the next one tried, up to proxy_tries in all, then ProxyUnavailable. Any request to the
        platform (a menu, an image) goes through here; the caller waits its turn of the
        platform's rate limit first, once, however many proxies it takes.
        """
        if max_bytes is None:
            max_bytes = self.max_menu_bytes
        if self.proxies is None:
            return self._get(url, None, accept, max_bytes)
        failures: list[str] = []
        for _ in range(self.proxy_tries):
            try:
                proxy = self.proxies.take(self.platform)
            except ProxyUnavailable as unavailable:
                tried = f" (tried: {'; '.join(failures)})" if failures else ""
                raise ProxyUnavailable(
                    f"GET {url}: {unavailable.message}{tried}",
                    retryable=True,
                    retry_after=unavailable.retry_after,
                ) from unavailable
            if proxy is None:
                return self._get(url, None, accept, max_bytes)
            try:
                answer = self._get(url, proxy, accept, max_bytes)
            except _ProxyFailed as failed:
                problem = str(failed)
                self.proxies.report(proxy, False, problem)
                failures.append(f"proxy {proxy.id} ({proxy.label}): {problem}")
                continue
            except PlatformError:
                self.proxies.report(proxy, True)
                raise
            self.proxies.report(proxy, True)
            return answer
        raise ProxyUnavailable(
            f"GET {url}: {len(failures)} proxies failed: {'; '.join(failures)}", retryable=True
        )

    def _get(
        self, url: str, proxy: Proxy | None, accept: str, max_bytes: int
    ) -> tuple[bytes, str]:
        """One try of GET `url`, direct or through `proxy`, within its own deadline;
        _ProxyFailed when the proxy failed it."""
        connections = _CONNECTIONS.client(proxy.url if proxy is not None else None)
        with _Deadline(self.timeout) as deadline:
            try:
                return self._fetch(connections, url, accept, max_bytes, deadline)
            except PlatformError as error:
                # No status and retryable: the connection through the proxy failed (an answer over
                # max_bytes has no status either, but is the platform's, and not retryable).
                proxy_failed = error.status in PROXY_FAILURE_STATUSES or (
                    error.status is None and error.retryable
                )
                if proxy is not None and proxy_failed:
                    raise _ProxyFailed(_without_url(error.message, url)) from error
                raise

    def _fetch(
        self, connections: httpx2.Client, url: str, accept: str, max_bytes: int, deadline: _Deadline
    ) -> tuple[bytes, str]:
        too_late = PlatformError(f"GET {url}: no answer within {self.timeout:g} s", retryable=True)
        # identity: the body is kept as the platform sent it, and bounded as it came.
        headers = {"Accept": accept, "Accept-Encoding": "identity"}
        try:
            with connections.stream(
                "GET",
                url,
                headers=headers,
                timeout=deadline.remaining(),
                extensions={"trace": deadline.trace},
            ) as response:
                deadline.watch_stream(response.extensions.get("network_stream"))
                if deadline.cut:
                    raise too_late
                if not 200 <= response.status_code < 300:
                    raise _http_error(url, response)
                body = _bounded_body(response, url, max_bytes)
                content_type = response.headers.get("Content-Type", "")
                # Before the connection goes back to the pool: a cut now would break the next
                # request's connection instead of this one's.
                deadline.disarm()
        except httpx2.TimeoutException as error:
            raise too_late from error
        except httpx2.TooManyRedirects as error:
            raise PlatformError(f"GET {url}: more than {MAX_REDIRECTS} redirects", retryable=False) from error
        except httpx2.HTTPError as error:
            if deadline.cut:
                raise too_late from error
            # Refused, unreachable, a proxy that would not tunnel, a connection dropped mid-answer.
            raise PlatformError(f"GET {url}: {_transport_problem(error)}", retryable=True) from error
        if deadline.cut:
            # The watchdog ended a body that had no length: what was read is cut short.
            raise too_late
        return body, content_type


class _Connections:
    """The process's HTTP connection pools: one httpx2.Client going direct, and one per proxy
    (httpx binds a client to its proxy), each made on first use and shared by every
    HttpPlatformClient and thread. The least recently used proxy's client is dropped past
    PROXY_CLIENTS_KEPT, unclosed: a request may still be using it, and its connections close
    when it is collected."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: OrderedDict[str | None, httpx2.Client] = OrderedDict()

    def client(self, proxy_url: str | None) -> httpx2.Client:
        with self._lock:
            client = self._clients.get(proxy_url)
            if client is None:
                client = self._clients[proxy_url] = httpx2.Client(
                    proxy=proxy_url,
                    # The system's CA certificates, as urllib and OpenSSL use, not certifi's.
                    verify=_TLS,
                    limits=httpx2.Limits(
                        max_connections=MAX_CONNECTIONS,
                        max_keepalive_connections=MAX_IDLE_CONNECTIONS,
                        keepalive_expiry=IDLE_CONNECTION_SECONDS,
                    ),
                    follow_redirects=True,
                    max_redirects=MAX_REDIRECTS,
                    headers={"User-Agent": USER_AGENT},
                )
                proxied = [key for key in self._clients if key is not None]
                if len(proxied) > PROXY_CLIENTS_KEPT:
                    del self._clients[proxied[0]]
            self._clients.move_to_end(proxy_url)
            return client

    def forget(self) -> None:
        """Drop every client without closing it: in a forked child, the sockets are the
        parent's."""
        self._clients = OrderedDict()
        self._lock = threading.Lock()


# The default TLS checks, the CA certificates loaded once for every request of the process.
_TLS = ssl.create_default_context()
_CONNECTIONS = _Connections()
os.register_at_fork(after_in_child=_CONNECTIONS.forget)


class _Deadline:
    """The moment a request must be over by, and its watchdog: at that moment it shuts down
    the request's connection (the one it last watched), waking whatever read waits on it; `cut`
    tells that it did. A context manager: leaving it stops the watchdog, and so does `disarm`.

    It watches a new connection from the moment it is open (`trace`, httpx's trace hook), and
    a pooled one from its answer's headers (`watch_stream`): waiting for those headers is bounded
    by the read timeout, which is the time the deadline had left when the request started."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends_at = time.monotonic() + seconds
        self.cut = False
        self._armed = True
        self._connection: socket.socket | None = None
        self._lock = threading.Lock()
        self._watchdog = threading.Timer(seconds, self._cut_connection)
        self._watchdog.daemon = True

    def __enter__(self) -> _Deadline:
        self._watchdog.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disarm()

    def remaining(self) -> float:
        """Seconds left, never quite 0 (a socket timeout of 0 would mean non-blocking)."""
        return max(self.ends_at - time.monotonic(), 0.001)

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self.watch_stream(info.get("return_value"))

    def watch_stream(self, stream: Any) -> None:
        """Watch the socket under an httpcore network stream (None, or a stream without one:
        nothing)."""
        connection = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(connection, socket.socket):
            self.watch(connection)

    def watch(self, connection: socket.socket) -> None:
        with self._lock:
            self._connection = connection
            if self.cut:
                _shut_down(connection)

    def disarm(self) -> None:
        with self._lock:
            self._armed = False
            self._watchdog.cancel()

    def _cut_connection(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self.cut = True
            if self._connection is not None:
                _shut_down(self._connection)


def _shut_down(connection: socket.socket) -> None:
    # The plain socket's shutdown, even under TLS: it wakes a blocked read (which then sees the
    # connection end) without touching the TLS state another thread is using.
    try:
        socket.socket.shutdown(connection, socket.SHUT_RDWR)
    except OSError:
        pass  # closed already: the request ended as the deadline came


def _bounded_body(response: httpx2.Response, url: str, max_bytes: int) -> bytes:
    """The response's body, read a chunk at a time; past max_bytes (its Content-Length says so,
    or reading finds it) PlatformError, not retryable, the rest unread."""
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise PlatformError(
            f"GET {url}: the answer is {declared} bytes, over the {max_bytes} allowed: refused unread",
            retryable=False,
        )
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_raw(READ_CHUNK_BYTES):
        size += len(chunk)
        if size > max_bytes:
            raise PlatformError(
                f"GET {url}: the answer is over the {max_bytes} bytes allowed: refused, read no further",
                retryable=False,
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _without_url(message: str, url: str) -> str:
    """A request's error message without its leading "GET url: " (the proxy's record says what
    went wrong, not which request)."""
    prefix = f"GET {url}: "
    return message[len(prefix):] if message.startswith(prefix) else message


def _http_error(url: str, response: httpx2.Response) -> PlatformError:
    """The PlatformError for an answer that is not a success: 429 and 5xx are worth another try,
    4xx are not. Its body is read up to ERROR_BODY_MAX_BYTES, for the message."""
    status = response.status_code
    body = bytearray()
    try:
        for chunk in response.iter_raw(READ_CHUNK_BYTES):
            body += chunk
            if len(body) >= ERROR_BODY_MAX_BYTES:
                break
    except httpx2.HTTPError:
        pass  # the status says enough
    detail = _error_detail(bytes(body[:ERROR_BODY_MAX_BYTES]))
    retry_after = _retry_after(response.headers.get("Retry-After"))
    message = f"GET {url}: HTTP {status}" + (f": {detail}" if detail else "")
    retryable = status == 429 or status >= 500
    return PlatformError(message, retryable=retryable, status=status, retry_after=retry_after)


def _transport_problem(error: httpx2.HTTPError) -> str:
    """What went wrong below HTTP, as the OS or the proxy said it (httpx's message, or the name
    of its kind when it has none); a connection that dropped mid-answer says so."""
    text = str(error).strip() or type(error).__name__
    if isinstance(error, (httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError)):
        return f"the connection broke: {type(error).__name__}: {text}"
    return text


def _error_detail(body: bytes) -> str:
    """The message of an error body: its JSON "error" field, else its start."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if isinstance(document, dict) and isinstance(document.get("error"), str):
        text = document["error"]
    text = " ".join(text.split())
    return text if len(text) <= BODY_EXCERPT_CHARS else text[: BODY_EXCERPT_CHARS - 1] + "…"


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (the delta-seconds form; an HTTP date is ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _json_document(body: bytes, url: str) -> Any:
    """A listing or resolve answer parsed; PlatformError (retryable) when it is not JSON."""
    try:
        return json.loads(body)
    except ValueError as error:
        raise PlatformError(
            f"GET {url}: the answer is not JSON ({error}): {_error_detail(body)!r}",
            retryable=True,
        ) from error
