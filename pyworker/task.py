"""A task as its handler sees it: the row of worker_tasks its worker claimed, and the attempt's
abort signal. A handler module imports this (through `from pyworker import Task`) and nothing of
the worker's SQL: the database behind `task.database()` is its worker's (pyworker/connections.py).
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyworker.errors import TaskpoolError

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import DictRow

    from pyworker.connections import AttemptConnection
    from pyworker.db import DatabaseT


class AbortSignal:
    """Fires when the worker must stop the running attempt; handlers poll or wait on it.

    reason: `cancelled` (an operator cancelled the task), `taken_by_another_worker` (the attempt
    was recovered and may run elsewhere), `not_found` (the task is gone), `timeout` (the role's
    run_timeout passed), `shutdown` (the worker is stopping and hands the task back), and for an
    async handler `blocked_event_loop` (it held the event loop too long: its attempt fails) or
    `event_loop_replaced` (another handler did: the task is handed back).
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    def fire(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    @property
    def fired(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the signal fires or `timeout` seconds pass; True when it fired."""
        return self._event.wait(timeout)


@dataclass
class Task:
    """A row of worker_tasks, as claim_task returns it, plus the attempt's abort signal."""

    id: int
    role: str
    dispensary_id: int | None
    platform: str | None
    status: str
    priority: int
    scheduled_for: datetime
    payload: dict[str, Any]
    dedupe_key: str | None
    worker_id: str | None
    attempt: int
    # The claim's own token (random, new at every claim): every call on the task passes it
    # with the attempt, so a claim the database forgot (lost WAL) is never taken for this one.
    claim_token: uuid.UUID | None
    claimed_at: datetime | None
    started_at: datetime | None
    last_heartbeat_at: datetime | None
    cancel_requested_at: datetime | None
    completed_at: datetime | None
    result: Any
    error_message: str | None
    retry_count: int
    max_retries: int
    created_at: datetime
    updated_at: datetime
    # String-to-string metadata its enqueuer sent along (worker_tasks.headers, e.g. a W3C
    # traceparent); {} when none. The task whose completion enqueued it (a follow-up), if any.
    headers: dict[str, str] = field(default_factory=dict)
    parent_id: int | None = None
    abort: AbortSignal = field(default_factory=AbortSignal, compare=False, repr=False)
    # The attempt's own database connection, lent by its worker (None outside a worker).
    lease: AttemptConnection | None = field(default=None, compare=False, repr=False)

    def connection(self) -> psycopg.Connection[DictRow]:
        """This attempt's own connection (autocommit, rows as dicts), borrowed from the worker's
        pool at the first call, the same one for the rest of the attempt, given back when the
        attempt ends (rolled back if left in a transaction): no other handler ever uses it while
        this attempt holds it. TaskpoolError outside a worker (no database is behind the task)."""
        return self._lease().get()

    def database(self, kind: type[DatabaseT] | None = None) -> DatabaseT:
        """A Database (or `kind`, a subclass of it, such as a package's own) whose every call,
        and every transaction(), runs on this attempt's own connection (connection())."""
        return self._lease().connections.database(kind, self.connection)

    def _lease(self) -> AttemptConnection:
        if self.lease is None:
            raise TaskpoolError(
                f"task {self.id} has no database connection: it is not run by a worker"
                " (pyworker.testing.run_handler runs without a database; test with the taskpool"
                " fixture's drain)"
            )
        return self.lease

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Task:
        task = cls(**{name: row[name] for name in TASK_COLUMNS})
        # NULL for a task enqueued without headers.
        task.headers = dict(task.headers or {})
        return task


# The columns of worker_tasks a Task holds: all its fields but the attempt's own, its abort
# signal and its connection.
TASK_COLUMNS = tuple(f.name for f in dataclasses.fields(Task) if f.name not in ("abort", "lease"))
