"""A worker's probes over HTTP, served only when `pyworker --metrics-port N` asks: `/metrics`
(the worker's own counters, on its registry, not prometheus_client's global one), `/healthz`
(the dispatcher loop turns: liveness) and `/readyz` (the database answers with the schema
version the worker needs, and its listener is not down for long: readiness).

The worker reaches this module only through its hook (`run_worker(config, serve_probes=serve)`,
which the CLI passes when the option is given): a worker that serves no probes loads no HTTP
server. docs/metrics.md lists every metric, its labels and what to alert on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from pyworker.admin.worker_metrics import ListenerState, PrometheusMetrics
from pyworker.db import Database
from pyworker.deadlines import DEFAULT_CONNECT_TIMEOUT, PROBE_CONNECT_TIMEOUT, PROBE_TIMEOUT_SECONDS
from pyworker.errors import ConfigurationError, DatabaseUnavailable, TaskpoolError
from pyworker.logs import event
from pyworker.runtime import BACKOFF_MAX

if TYPE_CHECKING:
    from pyworker.worker import Worker

log = logging.getLogger("pyworker")

T = TypeVar("T")

# /healthz answers 503 once the dispatcher has not turned for this long: longer than its longest
# sleep, and than a database call retried while the database is away or frozen (a call's deadline,
# a connect timeout and a backoff between tries), so that an outage alone never fails liveness.
LOOP_STALLED_AFTER_SECONDS = 60.0
# /readyz answers 503 once the listener has not been listening for this long (the worker still
# polls, every --poll-interval-ms, but wakes no sooner). Longer than a reconnection that goes well
# after a failover: a backoff pause (at most 10 s) then a connect that may wait out a dead first
# host of a multi-host URL (its connect_timeout, 10 s).
LISTENER_UNREADY_AFTER_SECONDS = 30.0


def serve(worker: Worker) -> AbstractContextManager[ProbeServer]:
    """Count the worker's metrics from now on (they become its `metrics`), and serve them with
    its probes on its --metrics-port while the block runs (the worker's run)."""
    port = worker.config.metrics_port
    if port is None:
        raise ConfigurationError("the worker has no metrics port to serve its probes on")
    metrics = worker.metrics = PrometheusMetrics(worker)
    return _serving(worker, port, metrics)


@contextmanager
def _serving(worker: Worker, port: int, metrics: PrometheusMetrics) -> Iterator[ProbeServer]:
    try:
        probes = ProbeServer(
            port, metrics.registry, lambda: liveness(worker), lambda: readiness(worker, metrics.listener)
        )
    except OSError as error:
        raise ConfigurationError(f"cannot serve metrics on port {port}: {error.strerror}") from error
    probes.start()
    try:
        yield probes
    finally:
        probes.stop()


def liveness(worker: Worker) -> str | None:
    """/healthz: None while the worker's dispatcher turns, no event loop is blocked past the
    limit, and the worker may claim, else why not (read from the probe's thread)."""
    config = worker.config
    now = time.monotonic()
    stalled = now - worker.last_turn
    # A call may take its deadline, then a connect its timeout, then the backoff its pause.
    if stalled > max(LOOP_STALLED_AFTER_SECONDS, config.call_timeout + DEFAULT_CONNECT_TIMEOUT + BACKOFF_MAX + 10):
        return f"the worker's loop has not turned for {stalled:.0f} s"
    for loop in worker.event_loops():
        blocked_for = loop.blocked_for
        if blocked_for > config.loop_block_limit:
            culprit = loop.blocked_by
            return (
                f"the event loop has been blocked for {blocked_for:.0f} s"
                + (f" by the handler of task {culprit.id}" if culprit is not None else "")
                + (" (a new loop runs the other async handlers)" if loop.retired else "")
            )
    abandoned = worker.abandoned_threads()
    if abandoned >= config.max_abandoned_threads:
        return (
            f"{abandoned} handler threads are left behind, still running (--max-abandoned-threads"
            f" {config.max_abandoned_threads}): not claiming until one returns"
        )
    retry_at = worker.thread_retry_at
    if retry_at is not None and now < retry_at:
        return "a handler thread could not start (the process is at its thread limit): not claiming for now"
    return None


def readiness(worker: Worker, listener: ListenerState) -> str | None:
    """/readyz: None when the database answers with a schema the worker can use (on a
    connection of its own, each probe) and its `listener` has not been down longer than
    LISTENER_UNREADY_AFTER_SECONDS, else why not."""
    if worker.stopping:
        return "the worker is stopping"
    probe = Database(
        worker.config.database_url,
        application_name=f"pyworker {worker.config.worker_id} probe",
        call_timeout=PROBE_TIMEOUT_SECONDS,
        connect_timeout=PROBE_CONNECT_TIMEOUT,
    )
    try:
        probe.check_schema()
    except TaskpoolError as error:
        return str(error)
    finally:
        probe.close()
    down_for = listener.down_for()
    if down_for > LISTENER_UNREADY_AFTER_SECONDS:
        since = time.strftime("%H:%M:%S UTC", time.gmtime(listener.since))
        return (
            f"the listener has not been listening for {down_for:.0f} s (since {since}; not ready past"
            f" {LISTENER_UNREADY_AFTER_SECONDS:g} s): {listener.reason}"
        )
    return None


class ProbeServer:
    """`/metrics`, `/healthz` and `/readyz` on a small threaded HTTP server of the standard
    library, in a daemon thread. `alive()` and `ready()` answer None when all is well, else the
    reason, which the 503 answer carries. `ready()` runs in a thread of its own and answers within
    `ready_timeout` seconds, or /readyz says 503 then, whatever the database does."""

    def __init__(
        self,
        port: int,
        registry: CollectorRegistry,
        alive: Callable[[], str | None],
        ready: Callable[[], str | None],
        host: str = "0.0.0.0",
        ready_timeout: float = PROBE_TIMEOUT_SECONDS,
    ) -> None:
        self.registry = registry
        self.alive = alive
        self.ready = ready
        self.ready_timeout = ready_timeout
        self._server = ThreadingHTTPServer((host, port), _ProbeHandler)
        self._server.daemon_threads = True
        self._server.probes = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics", daemon=True)

    @property
    def port(self) -> int:
        """The bound port: the one asked for, or the one the system chose for port 0."""
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread.start()
        log.info(
            "Serving /metrics, /healthz and /readyz on port %d", self.port, extra=event("metrics_serving")
        )

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def ready_in_time(self) -> str | None:
        """ready()'s answer, or once `ready_timeout` passes, why not: a probe that times out
        tells Kubernetes nothing, a 503 says the pod is not ready."""
        try:
            return call_within(self.ready_timeout, self.ready)
        except DatabaseUnavailable as error:
            return str(error)


class _ProbeHandler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        probes: ProbeServer = self.server.probes  # type: ignore[attr-defined]
        path = urlsplit(self.path).path
        if path == "/metrics":
            encoder, content_type = choose_encoder(self.headers.get("Accept"))
            self._answer(200, encoder(probes.registry), content_type)
        elif path in ("/healthz", "/readyz"):
            problem = probes.alive() if path == "/healthz" else probes.ready_in_time()
            text = "ok\n" if problem is None else f"{problem}\n"
            self._answer(200 if problem is None else 503, text.encode(), "text/plain; charset=utf-8")
        else:
            self._answer(404, b"not found: /metrics, /healthz and /readyz are served here\n", "text/plain; charset=utf-8")

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        # A probe every few seconds is no news: the worker's log keeps to its tasks.
        pass


def call_within(seconds: float, call: Callable[[], T]) -> T:
    """`call()` in a thread of its own: what it returns or raises, or DatabaseUnavailable once
    `seconds` pass (the thread goes on, bounded by its own deadlines). For a probe, which must
    answer before its own timeout, whatever connecting takes."""
    outcome: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome.append((False, error))
        finally:
            done.set()

    threading.Thread(target=run, name="call-within", daemon=True).start()
    if not done.wait(seconds):
        raise DatabaseUnavailable(f"the database did not answer within {seconds:g} s")
    returned, value = outcome[0]
    if not returned:
        raise value
    return value
