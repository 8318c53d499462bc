"""A real worker in the test's own thread: drain() runs one in drain mode (Worker(until_empty=True))
until no task of its roles is ready, as the `taskpool` fixture's drain does (docs/testing.md)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from pyworker import environment, handlers
from pyworker.config import WORKER_ID_ENVVAR, WorkerConfig, default_worker_id
from pyworker.environment import RENAMED
from pyworker.errors import ConfigurationError
from pyworker.worker import Worker


class DrainTimeout(TimeoutError):
    """drain() stopped its worker at its timeout, the queue not empty yet."""


def drain(
    database_url: str,
    roles: str | Sequence[str] | None = None,
    registry: handlers.Registry = handlers.registry,
    *,
    timeout: float = 60.0,
    worker_id: str | None = None,
    **settings: Any,
) -> int:
    """Run a real worker in this thread until no task of `roles` is ready; how many attempts ran.

    One worker in drain mode (Worker(until_empty=True)) serving every role of `roles` (those of
    `registry` when None), so a role's follow-ups for another role run too. The queue is empty
    when nothing is ready *now*: tasks scheduled for later (a retry's backoff, a snooze, a
    scheduled_for) stay pending; move the clock (set_taskpool_clock_offset) and drain again to
    run them. `settings` are WorkerConfig's (concurrency, prefetch, heartbeat_interval: 1 s here,
    shutdown_grace: 0 s here). While it runs, DATABASE_URL and TASKPOOL_WORKER_ID in os.environ name the
    worker's database and id, as for a worker process. DrainTimeout after `timeout` seconds, once
    the worker has stopped as on SIGTERM (its running task aborted and handed back).
    """
    if roles is None:
        roles = registry.roles
        if not roles:
            raise ConfigurationError("drain: no handler is registered, so there is no role to drain")
    elif isinstance(roles, str):
        roles = [roles]
    roles = list(roles)
    if not roles:
        raise ConfigurationError("drain: no role given")
    settings.setdefault("heartbeat_interval", 1.0)
    settings.setdefault("shutdown_grace", 0.0)
    worker_id = worker_id or f"drain-{default_worker_id()}"
    try:
        config = WorkerConfig(database_url=database_url, roles=tuple(roles), worker_id=worker_id, **settings)
    except ValueError as error:
        raise ConfigurationError(f"drain: {error}") from error
    saved = {name: os.environ.get(name) for name in ("DATABASE_URL", WORKER_ID_ENVVAR, RENAMED[WORKER_ID_ENVVAR])}
    os.environ["DATABASE_URL"] = database_url
    environment.export(WORKER_ID_ENVVAR, worker_id)
    try:
        worker = Worker(config, registry, until_empty=True)
        timer = threading.Timer(timeout, worker.request_stop)
        timer.daemon = True
        timer.start()
        try:
            worker.run()
        finally:
            timer.cancel()
        if worker.stopping:
            busy = ", ".join(map(repr, worker.roles_with_work))
            raise DrainTimeout(
                f"drain: the queue was not empty after {timeout:g} s"
                + (f" (role {busy} still had work)" if busy else "")
            )
        return worker.taken
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
