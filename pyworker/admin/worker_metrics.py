"""A worker's own Prometheus metrics (`PrometheusMetrics`), on a registry of their own, not
prometheus_client's global one: counted only when `pyworker --metrics-port N` serves them
(pyworker.admin.probes, with /healthz and /readyz), which hands them to the worker as its
`metrics`; a worker without the port counts nothing (pyworker.metrics.WorkerMetrics) and loads
no prometheus_client. The pool's metrics, read from the database, are pyworker.admin.metrics'.

docs/metrics.md lists every metric, its labels and what to alert on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from pyworker.metrics import WorkerMetrics

if TYPE_CHECKING:
    from pyworker.worker import Worker


# How a worker's attempt ended: the `outcome` field of its log line (docs/worker.md).
OUTCOMES = ("completed", "retried", "failed", "cancelled", "released", "lost")

# Handler durations from a millisecond to an hour (the default run timeout).
DURATION_BUCKETS = (0.001, 0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

# The worker's connections, by what they do (the label of pyworker_database_reconnects_total).
CONNECTIONS = ("dispatcher", "recorder", "heartbeat", "listener")

# The listener's states (the label of pyworker_listener_state): LISTENing; not listening (before
# its first connection, or since it lost one); none at all (--pooled without a listen URL: it polls).
LISTENER_STATES = ("connected", "reconnecting", "disabled")


class ListenerState:
    """The worker's listener connection as /metrics and /readyz see it: its state (LISTENER_STATES) and
    since when, when it last heard from the database, and why it is not listening. Written by
    the listener thread only and read by the probes' threads: each change is one assignment of
    a tuple, so a reader never sees half of one."""

    def __init__(self, enabled: bool) -> None:
        self._state = ("reconnecting" if enabled else "disabled", time.monotonic(), time.time())
        self.reason = "not connected yet"
        self.last_heard = 0.0

    @property
    def state(self) -> str:
        return self._state[0]

    @property
    def since(self) -> float:
        """When it entered its state (Unix time)."""
        return self._state[2]

    def down_for(self) -> float:
        """How long it has not been listening, in seconds (0 while connected or disabled)."""
        state, entered, _wall = self._state
        return time.monotonic() - entered if state == "reconnecting" else 0.0

    def connected(self) -> None:
        self._state = ("connected", time.monotonic(), time.time())
        self.heard()

    def heard(self) -> None:
        self.last_heard = time.time()

    def lost(self, reason: str) -> None:
        """It is not listening, for `reason`; since when it stopped, if it was listening."""
        self.reason = " ".join(reason.split())
        if self.state != "reconnecting":
            self._state = ("reconnecting", time.monotonic(), time.time())



class PrometheusMetrics(WorkerMetrics):
    """A worker's own metrics, on a registry of their own (an increment costs about a
    microsecond); its gauges read the worker's state at each scrape."""

    def __init__(self, worker: Worker) -> None:
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
        roles = worker.roles
        self._ended = {(role, outcome): self.tasks.labels(role, outcome) for role in roles for outcome in OUTCOMES}
        self._durations = {role: self.handler_duration.labels(role) for role in roles}
        self._claims = {role: self.claims.labels(role) for role in roles}
        self._claimed = {role: self.claimed.labels(role) for role in roles}
        for role in roles:
            self.in_flight.labels(role).set_function(lambda role=role: worker.running(role))
        for connection in CONNECTIONS:
            self.reconnects.labels(connection)
        enabled = worker.config.listen_url is not None and not worker.until_empty
        listener = self.listener = ListenerState(enabled)
        for state in LISTENER_STATES:
            self.listener_state.labels(state).set_function(lambda state=state: listener.state == state)
        self.listener_state_since.set_function(lambda: listener.since)
        self.listener_last_heard.set_function(lambda: listener.last_heard)
        self.event_loop_lag.set_function(lambda: max((loop.lag for loop in worker.event_loops()), default=0.0))
        self.abandoned_threads.set_function(worker.abandoned_threads)

    def ended(self, role: str, outcome: str) -> None:
        self._ended[(role, outcome)].inc()

    def ran(self, role: str, seconds: float) -> None:
        self._durations[role].observe(seconds)

    def claimed_tasks(self, role: str, count: int) -> None:
        self._claims[role].inc()
        self._claimed[role].inc(count)

    def reconnected(self, connection: str) -> Callable[[], None]:
        return self.reconnects.labels(connection).inc

    def heartbeat_failed(self) -> None:
        self.heartbeat_failures.inc()

    def listener_connected(self) -> None:
        self.listener.connected()

    def listener_heard(self) -> None:
        self.listener.heard()

    def listener_lost(self, reason: str) -> None:
        self.listener.lost(reason)

    def event_loop_replaced(self) -> None:
        self.event_loops_replaced.inc()
