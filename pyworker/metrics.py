"""What a worker counts as it runs: the calls its runtime makes, which count nothing here. A
worker served with `pyworker --metrics-port N` counts them for Prometheus instead
(pyworker.admin.worker_metrics.PrometheusMetrics, handed over through the serve_probes hook), so
that a worker without the port loads no metrics library. docs/metrics.md lists the metrics."""

from __future__ import annotations

from collections.abc import Callable


def _uncounted() -> None:
    pass


class WorkerMetrics:
    """What the worker's runtime tells its metrics."""

    def ended(self, role: str, outcome: str) -> None:
        """An attempt of the role ended so: completed, retried, failed, cancelled, released or lost
        (the `outcome` of its log line)."""

    def ran(self, role: str, seconds: float) -> None:
        """A handler of the role ran this long."""

    def claimed_tasks(self, role: str, count: int) -> None:
        """A claim call for the role took `count` tasks (0: it found none)."""

    def reconnected(self, connection: str) -> Callable[[], None]:
        """The callback a Database of that connection calls when it connects again."""
        return _uncounted

    def heartbeat_failed(self) -> None:
        """A heartbeat round failed (the database did not answer or refused)."""

    def listener_connected(self) -> None:
        """The listener LISTENs (again)."""

    def listener_heard(self) -> None:
        """The listener heard from the database: a notification, or the answer to its check."""

    def listener_lost(self, reason: str) -> None:
        """The listener is not listening, for `reason`."""

    def event_loop_replaced(self) -> None:
        """An async handler blocked the event loop past the limit: a new loop replaced it."""
