"""The pool's metrics for Prometheus, read from the database at scrape time: the samples of
`taskpool_metrics()` (one query) in the Prometheus text format, through `DatabaseCollector`. The
dashboard serves them at `/metrics`; a worker serves only its own (pyworker.admin.worker_metrics).

docs/metrics.md lists every metric, its labels and what to alert on.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pyworker.db import Database

TASKPOOL_METRICS = "SELECT metric, kind, help, labels, value FROM taskpool_metrics()"


class DatabaseCollector(Collector):
    """The samples of taskpool_metrics(), read from `database` at each collect: a family per
    metric, its type and help text as the database gives them."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def collect(self) -> Iterator[Metric]:
        families: dict[str, tuple[Metric, list[str]]] = {}
        for row in self.database.query(TASKPOOL_METRICS):
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
