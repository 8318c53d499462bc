"""The connection a test handler records what it did through, in the worker process.

Its own connection, not the worker's: a fault aimed at the worker's sessions must not take the
record with it, and the record must say what really ran, whatever the worker later manages to
tell the database. One per process, shared by the handler's threads under a lock.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psycopg

from pyworker.config import POOLED_ENVVAR
from pyworker.db import pooled_connection_options
from pyworker.environment import lookup


def pooled_from_environment() -> bool:
    """Whether TASKPOOL_POOLED says DATABASE_URL goes through a transaction pooler (a true value
    as click reads one: 1, true, yes, on), as the worker tells its handlers."""
    return (lookup(POOLED_ENVVAR) or "").strip().lower() in {"1", "true", "t", "yes", "y", "on"}


class Recorder:
    """Runs one statement at a time on a connection to $DATABASE_URL (through a transaction
    pooler when $TASKPOOL_POOLED says so, as a worker's handlers are), reconnecting while it
    fails for up to `patience` seconds (at least one reconnection)."""

    def __init__(self, application_name: str, *, patience: float = 0.0) -> None:
        self.application_name = f"{application_name} {os.environ.get('TASKPOOL_WORKER_ID', '')}".strip()
        self.patience = patience
        self._lock = threading.Lock()
        self._conn: psycopg.Connection | None = None

    def __call__(self, query: str, params: Any = None) -> Any:
        """Run `query`; the first column of its first row, or None when it returns no rows."""
        deadline = time.monotonic() + self.patience
        attempt = 0
        with self._lock:
            while True:
                attempt += 1
                try:
                    if self._conn is None or self._conn.closed or self._conn.broken:
                        self._conn = psycopg.connect(
                            os.environ["DATABASE_URL"],
                            autocommit=True,
                            connect_timeout=5,
                            application_name=self.application_name,
                            **pooled_connection_options(pooled_from_environment()),
                        )
                    cursor = self._conn.execute(query, params)
                    return cursor.fetchone()[0] if cursor.description else None
                except psycopg.OperationalError:
                    if attempt > 1:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.2)
