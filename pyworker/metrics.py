"""Prometheus metrics: the pool's, read from the database at scrape time, and a worker's own.

- `database_metrics(database)`: the samples of `taskpool_metrics()` (one query) in the Prometheus
  text format, through `DatabaseCollector`; the dashboard serves it at `/metrics`.
- `WorkerMetrics` and `ProbeServer`: what `pyworker --metrics-port N` serves: `/metrics` (the
  worker's own counters, on a registry of its own, not prometheus_client's global one),
  `/healthz` (the dispatcher loop turns) and `/readyz` (the database answers with the schema
  version this worker needs, and the worker's listener is not down for long).

docs/metrics.md lists every metric, its labels and what to alert on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST, choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pyworker.db import Database
from pyworker.deadlines import PROBE_TIMEOUT_SECONDS, call_within
from pyworker.errors import DatabaseUnavailable
from pyworker.logs import event

log = logging.getLogger("pyworker")


class DatabaseCollector(Collector):
    """The samples of taskpool_metrics(), read from `database` at each collect: a family per
    metric, its type and help text as the database gives them."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def collect(self) -> Iterator[Metric]:
        families: dict[str, tuple[Metric, list[str]]] = {}
        for row in self.database.metrics():
            name, labels = row["metric"], row["labels"]
            if name not in families:
                label_names = list(labels)
                if row["kind"] == "counter":
                    # The family's name is without _total: prometheus_client adds it to the sample.
                    family: Metric = CounterMetricFamily(name.removesuffix("_total"), row["help"], labels=label_names)
                else:
                    family = GaugeMetricFamily(name, row["help"], labels=label_names)
                families[name] = (family, label_names)
            family, label_names = families[name]
            family.add_metric([labels[label] for label in label_names], row["value"])
        for family, _label_names in families.values():
            yield family


def database_metrics(database: Database) -> tuple[bytes, str]:
    """The pool's metrics in the Prometheus text format, read now with one query, and their
    Content-Type. Raises what the query raises (DatabaseUnavailable when the database does not
    answer): the server answers the scrape with an error, and Prometheus marks the target down."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(database))
    return generate_latest(registry), CONTENT_TYPE_LATEST


# How a worker's attempt ended: the `outcome` field of its log line (docs/worker.md).
OUTCOMES = ("completed", "retried", "failed", "cancelled", "released", "lost")

# Handler durations from a millisecond to an hour (the default run timeout).
DURATION_BUCKETS = (0.001, 0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

# The worker's connections, by what they do (the label of pyworker_database_reconnects_total).
CONNECTIONS = ("dispatcher", "recorder", "heartbeat", "listener")

# The listener's states (the label of pyworker_listener_state): LISTENing; not listening (before
# its first connection, or since it lost one); none at all (--pooled without a listen URL: it polls).
LISTENER_STATES = ("connected", "reconnecting", "disabled")


class WorkerMetrics:
    """A worker's own metrics, on a registry of their own. Always kept (an increment costs
    about a microsecond); served only with --metrics-port."""

    def __init__(self, roles: Iterable[str]) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.tasks = Counter(
            "pyworker_tasks", "Attempts this worker ended, by role and outcome (the outcome of its log line).",
            ["role", "outcome"], registry=registry,
        )
        self.handler_duration = Histogram(
            "pyworker_handler_duration_seconds", "How long handlers ran, from their start to their outcome.",
            ["role"], buckets=DURATION_BUCKETS, registry=registry,
        )
        self.in_flight = Gauge(
            "pyworker_tasks_in_flight", "Tasks whose handler runs now.", ["role"], registry=registry
        )
        self.claims = Counter(
            "pyworker_claims", "Claim calls (claim_and_start_tasks), those that found nothing included.",
            ["role"], registry=registry,
        )
        self.claimed = Counter("pyworker_tasks_claimed", "Tasks claimed.", ["role"], registry=registry)
        self.heartbeat_failures = Counter(
            "pyworker_heartbeat_failures", "Heartbeat rounds that failed (the database did not answer or refused).",
            registry=registry,
        )
        self.reconnects = Counter(
            "pyworker_database_reconnects", "Connections opened again after one was lost, by what they serve.",
            ["connection"], registry=registry,
        )
        self.event_loop_lag = Gauge(
            "pyworker_event_loop_lag_seconds",
            "How long the async handlers' event loop keeps a callback waiting (the longest of the"
            " current loop and any replaced one a handler still blocks); 0 before the first async handler.",
            registry=registry,
        )
        self.event_loops_replaced = Counter(
            "pyworker_event_loops_replaced",
            "Event loops replaced because an async handler blocked one past --loop-block-limit-seconds.",
            registry=registry,
        )
        self.abandoned_threads = Gauge(
            "pyworker_abandoned_threads",
            "Handler threads left behind still running (a sync handler past its abort, an event loop a"
            " handler blocks); at --max-abandoned-threads the worker stops claiming.",
            registry=registry,
        )
        self.listener_state = Gauge(
            "pyworker_listener_state",
            "1 for the state the listener's LISTEN connection is in (connected, reconnecting, disabled),"
            " 0 for the others.",
            ["state"], registry=registry,
        )
        self.listener_state_since = Gauge(
            "pyworker_listener_state_since_timestamp_seconds",
            "When the listener entered its current state (Unix time).",
            registry=registry,
        )
        self.listener_last_heard = Gauge(
            "pyworker_listener_last_heard_timestamp_seconds",
            "When the listener last heard from the database (Unix time; 0: never): its LISTEN, a"
            " notification, or the answer to its idle check (every 10 s).",
            registry=registry,
        )
        # Every series from the start, at 0 (an alert on a rate sees it before the first event),
        # each bound once: labels() takes a lock and builds a key, twice the cost of an increment.
        roles = tuple(roles)
        self._ended = {(role, outcome): self.tasks.labels(role, outcome) for role in roles for outcome in OUTCOMES}
        self._durations = {role: self.handler_duration.labels(role) for role in roles}
        self._claims = {role: self.claims.labels(role) for role in roles}
        self._claimed = {role: self.claimed.labels(role) for role in roles}
        for role in roles:
            self.in_flight.labels(role)
        for connection in CONNECTIONS:
            self.reconnects.labels(connection)

    def ended(self, role: str, outcome: str) -> None:
        """An attempt of the role ended so (one of OUTCOMES)."""
        self._ended[(role, outcome)].inc()

    def ran(self, role: str, seconds: float) -> None:
        """A handler of the role ran this long."""
        self._durations[role].observe(seconds)

    def claimed_tasks(self, role: str, count: int) -> None:
        """A claim call for the role took `count` tasks (0: it found none)."""
        self._claims[role].inc()
        self._claimed[role].inc(count)

    def reconnected(self, connection: str) -> Callable[[], None]:
        """The callback a Database of that connection calls when it connects again."""
        return self.reconnects.labels(connection).inc


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
