"""pyworker.client: enqueue tasks from application code and wait for their results.

`Client(conn)` wraps a psycopg connection that the application owns. `enqueue` and
`enqueue_many` run in that connection's current transaction and never commit: a task is enqueued
exactly when the application's own writes of that transaction commit, and vanishes with them on
a rollback (on an autocommit connection each enqueue commits at once). `Client.connect(url)`
opens an autocommit connection of its own, for scripts. A database away or read-only (a standby,
a demoted primary: SQLSTATE 25006) raises DatabaseUnavailable (DatabaseReadOnly), from psycopg's
error; other errors are psycopg's own.

Everything goes through the SQL functions (enqueue_task, enqueue_specs, cancel_task, retry_task,
register_task_waits, task_chain, ...); the client never writes a task row itself.

Waiting (`wait`, `wait_chain`) LISTENs on the session's channel (task_wait_channel()) and
registers the session as a waiter (register_task_waits): the task's finish notifies that session
only, and a finish nobody waits for notifies no one. The waiter also polls (every
`poll_interval` seconds) in case a notification was missed. Waiting commits its own short
transactions (the registration must be visible to the worker), so it needs the connection idle,
outside a transaction: commit the enqueue first. `AsyncClient` is the same over a
psycopg.AsyncConnection.

Behind a transaction-pooling PgBouncer (docs/pgbouncer.md), a session is not the client's from one
transaction to the next: give `pooled=True` (the connection prepares nothing, as that PgBouncer
requires, when Client.connect opens it; an application's own connection is its business), and a
connection of its own to wait on, to the server itself (`wait_conn`, or Client.connect's
`listen_url`). Without one, a pooled client's wait polls the task's status every `poll_interval`
seconds, registering nothing.

Hooks: every function in `enqueue_hooks` (module-wide) and in a client's `hooks` is called with
each task spec before it is enqueued (a dict with "role", "payload", "headers", ...) and may add
to its "headers" dict: how a tracing module puts a traceparent on every task.

Deadlines: every call the client makes must end within `call_timeout` seconds (None:
TASKPOOL_CALL_TIMEOUT_SECONDS, else 20 s; 0: no deadline), or its connection is cut (its socket
shut down: pyworker/deadlines.py) and the call raises DatabaseUnavailable; a frozen server costs
no more. The connection is then broken: connect again (a pool does). Client.connect's connections
also get libpq's connect_timeout, TCP keepalives and tcp_user_timeout, unless the URL sets them.
"""

from __future__ import annotations

import asyncio
import math
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, is_dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pyworker.db import (
    READ_ONLY_STATE,
    dump_json,
    pooled_connection_options,
    refuse_read_only,
    reported_state,
    require_writable,
)
from pyworker import payloads
from pyworker.deadlines import CallDeadline, bounded, connection_options, default_call_timeout
from pyworker.errors import DatabaseUnavailable, TaskpoolError, translate
from pyworker.handlers import declaration_of

__all__ = [
    "AsyncClient",
    "ChainMember",
    "Client",
    "ClientError",
    "EnqueueHook",
    "TaskCancelled",
    "TaskFailed",
    "TaskInfo",
    "TaskNotFound",
    "WaitTimeout",
    "enqueue_hooks",
]

EnqueueHook = Callable[[dict[str, Any]], None]

# Module-wide hooks, called for every enqueue of every client (after the client's own hooks).
enqueue_hooks: list[EnqueueHook] = []

FINISHED = frozenset({"completed", "failed", "cancelled"})
DEFAULT_POLL_INTERVAL = 5.0
# How soon to register again when a task was being changed at registration (see register_task_waits).
RETRY_REGISTRATION_AFTER = 0.05

SPEC_KEYS = frozenset(
    {
        "role",
        "payload",
        "dispensary_id",
        "store",
        "platform",
        "priority",
        "scheduled_for",
        "delay",
        "dedupe_key",
        "dedupe_window",
        "dedupe_by_content",
        "max_retries",
        "headers",
        "concurrency_key",
        "backoff_base",
        "backoff_cap",
    }
)


class ClientError(TaskpoolError):
    """The client cannot do that."""


class TaskNotFound(ClientError, LookupError):
    """No such task."""


class WaitTimeout(ClientError, TimeoutError):
    """The task did not finish in time."""

    def __init__(self, task_id: int, timeout: float, pending: Sequence[int] = ()) -> None:
        what = f"task {task_id}" if not pending or list(pending) == [task_id] else (
            f"the chain of task {task_id} (still unfinished: {', '.join(map(str, pending))})"
        )
        super().__init__(f"{what} did not finish within {timeout:g} s")
        self.task_id = task_id
        self.timeout = timeout
        self.pending = list(pending)


class TaskFailed(ClientError):
    """The task failed."""

    def __init__(self, task: TaskInfo) -> None:
        super().__init__(f"task {task.id} ({task.role}) failed: {task.error_message}")
        self.task = task
        self.error = task.error_message


class TaskCancelled(ClientError):
    """The task was cancelled."""

    def __init__(self, task: TaskInfo) -> None:
        super().__init__(f"task {task.id} ({task.role}) was cancelled")
        self.task = task


@dataclass(frozen=True)
class TaskInfo:
    """A task as the client reads it back (a row of worker_tasks)."""

    id: int
    role: str
    status: str
    payload: dict[str, Any]
    result: Any
    error_message: str | None
    attempt: int
    retry_count: int
    max_retries: int
    dispensary_id: int | None
    platform: str | None
    priority: int
    scheduled_for: datetime
    dedupe_key: str | None
    parent_id: int | None
    headers: dict[str, str]
    worker_id: str | None
    cancel_requested_at: datetime | None
    created_at: datetime
    completed_at: datetime | None
    # The task's own retry backoff (enqueue's backoff_base, backoff_cap); None: the role's.
    backoff_base: timedelta | None
    backoff_cap: timedelta | None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def __index__(self) -> int:
        """The task's id: a TaskInfo (what enqueue returns) serves wherever an id does."""
        return self.id

    @property
    def attempts(self) -> int:
        """How many times a worker claimed the task."""
        return self.attempt

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TaskInfo:
        values = {f.name: row[f.name] for f in fields(cls) if f.name != "headers"}
        return cls(**values, headers=dict(row["headers"] or {}))


@dataclass(frozen=True)
class ChainMember:
    """A task of a chain (task_chain): depth 0 is the task asked for, below 0 its ancestors,
    above 0 its follow-ups."""

    id: int
    parent_id: int | None
    depth: int
    role: str
    status: str
    dispensary_id: int | None
    created_at: datetime
    completed_at: datetime | None
    error_message: str | None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


_TASK_COLUMNS = sql.SQL(", ").join(
    sql.Identifier(f.name) for f in fields(TaskInfo)
)
_CHAIN_COLUMNS = ", ".join(f.name for f in fields(ChainMember))

ENQUEUE_TASK = sql.SQL(
    "SELECT {columns} FROM enqueue_task(%(role)s::text, %(payload)s::jsonb, %(dispensary_id)s::integer,"
    " %(priority)s::integer,"
    " coalesce(%(scheduled_for)s::timestamptz,"
    " taskpool_now() + make_interval(secs => %(delay)s::double precision)),"
    " %(dedupe_key)s::text, %(max_retries)s::integer, %(platform)s::text, %(headers)s::jsonb,"
    " make_interval(secs => %(backoff_base)s::double precision),"
    " make_interval(secs => %(backoff_cap)s::double precision),"
    " make_interval(secs => %(dedupe_window)s::double precision), coalesce(%(dedupe_by_content)s::boolean, false))"
).format(columns=_TASK_COLUMNS)
# A batch crosses as typed arrays, one a field (River's typed batch parameters), and becomes
# enqueue_specs' task_spec[] in the statement; a "delay" (seconds) becomes its spec's
# scheduled_for on the database's clock. Measured against an array of task_spec rows
# (register_composite): the same work in the database, half the client's CPU, as psycopg dumps
# arrays of plain types in C and composites field by field in Python.
ENQUEUE_SPECS = sql.SQL(
    "SELECT {columns} FROM enqueue_specs(ARRAY("
    "SELECT ROW(s.role, s.payload, s.dispensary_id, s.priority,"
    " coalesce(s.scheduled_for, taskpool_now() + make_interval(secs => s.delay)),"
    " s.dedupe_key, s.max_retries, s.platform, s.headers, make_interval(secs => s.backoff_base),"
    " make_interval(secs => s.backoff_cap), make_interval(secs => s.dedupe_window), s.dedupe_by_content)::task_spec"
    " FROM unnest(%(role)s::text[], %(payload)s::jsonb[], %(dispensary_id)s::integer[], %(priority)s::integer[],"
    " %(scheduled_for)s::timestamptz[], %(delay)s::double precision[], %(dedupe_key)s::text[],"
    " %(max_retries)s::integer[], %(platform)s::text[], %(headers)s::jsonb[],"
    " %(backoff_base)s::double precision[], %(backoff_cap)s::double precision[],"
    " %(dedupe_window)s::double precision[], %(dedupe_by_content)s::boolean[])"
    " WITH ORDINALITY AS s(role, payload, dispensary_id, priority, scheduled_for, delay, dedupe_key, max_retries,"
    " platform, headers, backoff_base, backoff_cap, dedupe_window, dedupe_by_content, n)"
    " ORDER BY s.n))"
).format(columns=_TASK_COLUMNS)
GET_TASKS = sql.SQL("SELECT {columns} FROM worker_tasks_with_history WHERE id = ANY (%(ids)s::bigint[]) ORDER BY id").format(
    columns=_TASK_COLUMNS
)
CANCEL_TASK = sql.SQL("SELECT {columns} FROM cancel_task(%(id)s::bigint)").format(columns=_TASK_COLUMNS)
RETRY_TASK = sql.SQL("SELECT {columns} FROM retry_task(%(id)s::bigint)").format(columns=_TASK_COLUMNS)
TASK_CHAIN = f"SELECT {_CHAIN_COLUMNS} FROM task_chain(%(id)s::bigint)"
WAIT_CHANNEL = "SELECT task_wait_channel() AS channel"
# A pooled client's wait with nowhere to LISTEN: the same answer as REGISTER_WAITS, nothing registered.
POLL_WAITS = (
    "SELECT id AS task_id, parent_id, status, true AS watched FROM task_chain(%(id)s::bigint)"
    " WHERE depth = 0 OR (%(descendants)s::boolean AND depth > 0)"
)
REGISTER_WAITS = (
    "SELECT task_id, parent_id, status, watched"
    " FROM register_task_waits(%(ids)s::bigint[], %(descendants)s::boolean)"
)
UNREGISTER_WAITS = "SELECT unregister_task_waits(%(ids)s::bigint[]) AS ended"


def _seconds(value: float | timedelta | None, name: str) -> float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise ValueError(f"{name} must be a number of seconds or a timedelta, not {value!r}")
    if seconds < 0:
        raise ValueError(f"{name} must not be negative, not {value!r}")
    return float(seconds)


def dump_payload(payload_type: type | None, payload: Any) -> Any:
    """The payload to enqueue: a dataclass instance or a pydantic model as its JSON object, checked
    against `payload_type` when one is declared (an instance of another type, or a mapping that
    does not fit, raises PayloadMismatch); anything else as given."""
    if payload_type is not None and payload is not None and not isinstance(payload, (Mapping, payload_type)):
        raise payloads.PayloadMismatch(
            f"the payload must be a {payload_type.__name__} (or a mapping that fits it), not {type(payload).__name__}"
        )
    if is_dataclass(payload) and not isinstance(payload, type):
        data = asdict(payload)
    elif payloads.is_pydantic_model(type(payload)):
        data = payload.model_dump(mode="json")
    else:
        data = payload
    if payload_type is not None:
        # A dataclass instance is checked too: its constructor checks no type.
        payloads.load(payload_type, {} if data is None else data)
    return data


def _role_and_payload(role: str | Callable[..., Any], payload: Any) -> tuple[str, Any]:
    """The role name and the JSON payload of an enqueue by role name or by declared handler:
    a handler's payload type checks the payload (PayloadMismatch, a ValueError, names the field);
    a dataclass or pydantic payload becomes its JSON object."""
    if isinstance(role, str):
        return role, dump_payload(None, payload)
    declaration = declaration_of(role)
    if declaration is None:
        raise ValueError(f"role must be a role name or a handler declared with @handler, not {role!r}")
    return declaration.role, dump_payload(declaration.payload_type, payload)


def _spec(
    role: str | Callable[..., Any], payload: Any, options: Mapping[str, Any], hooks: Iterable[EnqueueHook]
) -> dict[str, Any]:
    """One task spec as enqueue_tasks takes it, the hooks applied; delay in seconds."""
    unknown = set(options) - SPEC_KEYS
    if unknown:
        raise ValueError(f"unknown enqueue option(s): {', '.join(sorted(unknown))}")
    role, payload = _role_and_payload(role, payload)
    store = options.get("store")
    dispensary_id = options.get("dispensary_id")
    if store is not None and dispensary_id is not None and store != dispensary_id:
        raise ValueError("give the store as store or as dispensary_id, not both")
    if options.get("scheduled_for") is not None and options.get("delay") is not None:
        raise ValueError("give scheduled_for or delay, not both")
    headers = options.get("headers")
    spec: dict[str, Any] = {
        "role": role,
        "payload": {} if payload is None else payload,
        "headers": {} if headers is None else dict(headers) if isinstance(headers, Mapping) else headers,
    }
    # The task's own concurrency key travels as its header of that name (concurrency_limits).
    concurrency_key = options.get("concurrency_key")
    if concurrency_key is not None:
        if not isinstance(spec["headers"], dict):
            raise ValueError("give concurrency_key with headers as a mapping, or as its header alone")
        named = spec["headers"].get("concurrency_key")
        if named is not None and named != concurrency_key:
            raise ValueError("give the concurrency key as concurrency_key or as its header, not both")
        spec["headers"]["concurrency_key"] = concurrency_key
    for key in ("platform", "priority", "dedupe_key", "max_retries"):
        if options.get(key) is not None:
            spec[key] = options[key]
    dedupe_window = _seconds(options.get("dedupe_window"), "dedupe_window")
    if dedupe_window is not None:
        spec["dedupe_window"] = dedupe_window
    if options.get("dedupe_by_content"):
        spec["dedupe_by_content"] = True
    if store is not None or dispensary_id is not None:
        spec["dispensary_id"] = store if store is not None else dispensary_id
    scheduled_for = options.get("scheduled_for")
    if scheduled_for is not None:
        spec["scheduled_for"] = scheduled_for.isoformat() if isinstance(scheduled_for, datetime) else scheduled_for
    delay = _seconds(options.get("delay"), "delay")
    if delay is not None:
        spec["delay"] = delay
    # The task's own retry backoff, in seconds as enqueue_tasks takes it; enqueue checks the range.
    for key in ("backoff_base", "backoff_cap"):
        seconds = _seconds(options.get(key), key)
        if seconds is not None:
            spec[key] = seconds
    for hook in (*hooks, *enqueue_hooks):
        hook(spec)
    return spec


def _enqueue_params(spec: Mapping[str, Any]) -> dict[str, Any]:
    headers = spec.get("headers")
    return {
        "role": spec["role"],
        "payload": Jsonb(spec.get("payload"), dumps=dump_json),
        "dispensary_id": spec.get("dispensary_id"),
        "priority": spec.get("priority"),
        "scheduled_for": spec.get("scheduled_for"),
        "delay": spec.get("delay"),
        "dedupe_key": spec.get("dedupe_key"),
        "dedupe_window": spec.get("dedupe_window"),
        "dedupe_by_content": spec.get("dedupe_by_content"),
        "max_retries": spec.get("max_retries"),
        "platform": spec.get("platform"),
        "headers": None if headers is None else Jsonb(headers, dumps=dump_json),
        "backoff_base": spec.get("backoff_base"),
        "backoff_cap": spec.get("backoff_cap"),
    }


# A batch's fields, an array each, as ENQUEUE_SPECS binds them. A value must be of its array's
# type (or None), else the batch is refused here, naming the spec as the database would (tasks[N]).
_BATCH_FIELDS = (
    "role", "payload", "dispensary_id", "priority", "scheduled_for", "delay", "dedupe_key", "max_retries",
    "platform", "headers", "backoff_base", "backoff_cap", "dedupe_window", "dedupe_by_content",
)
_INTEGER_FIELDS = frozenset({"dispensary_id", "priority", "max_retries"})
_INT4 = range(-(2**31), 2**31)


def _batch_value(key: str, value: Any, n: int) -> Any:
    if key in ("payload", "headers"):
        # no headers: NULL, as the database stores an empty object
        return Jsonb(value, dumps=dump_json) if value or key == "payload" else None
    if key in _INTEGER_FIELDS and (isinstance(value, bool) or not isinstance(value, int) or value not in _INT4):
        raise ValueError(f"tasks[{n}]: {key} must be an integer, not {value!r}")
    if key in ("dedupe_key", "platform") and not isinstance(value, str):
        raise ValueError(f"tasks[{n}]: {key} must be a string, not {value!r}")
    if key == "scheduled_for" and not isinstance(value, datetime):
        try:
            return datetime.fromisoformat(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"tasks[{n}]: scheduled_for must be a datetime or an ISO 8601 string, not {value!r}"
            ) from None
    return value


def _enqueue_many_params(specs: Iterable[Mapping[str, Any]], hooks: Iterable[EnqueueHook]) -> dict[str, list[Any]]:
    """enqueue_many's specs, built (_spec, the hooks applied), as ENQUEUE_SPECS binds them: an
    array a field, in spec order."""
    built = []
    for spec in specs:
        options = dict(spec)
        built.append(_spec(options.pop("role", None), options.pop("payload", None), options, hooks))
    columns: dict[str, list[Any]] = {key: [None] * len(built) for key in _BATCH_FIELDS}
    for n, spec in enumerate(built):
        for key, value in spec.items():
            column = columns.get(key)
            if column is None:  # a hook's addition: a batch has no place for it
                raise ValueError(f"tasks[{n}]: unknown field {key!r}")
            if value is not None:
                column[n] = _batch_value(key, value, n)
    return columns


def _check_wait_args(timeout: float | None, poll_interval: float) -> float | None:
    timeout = _seconds(timeout, "timeout")
    if _seconds(poll_interval, "poll_interval") == 0:
        raise ValueError("poll_interval must be more than 0 seconds")
    return timeout


def _check_idle(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    if conn.info.transaction_status != TransactionStatus.IDLE:
        raise ClientError(
            "waiting needs the connection outside a transaction: commit first"
            " (a task enqueued in an open transaction cannot run before it commits)"
        )


def _wait_connection(conn: Any, pooled: bool, wait_conn: Any) -> Any:
    """The connection waits LISTEN on: `wait_conn`, else `conn` unless it is pooled (None: waits poll)."""
    if wait_conn is not None or pooled:
        return wait_conn
    return conn


def _deadlines(call_timeout: float | None, *conns: Any) -> dict[int, CallDeadline]:
    """The deadline of each connection the client calls on, by id(); none with a timeout of 0."""
    seconds = default_call_timeout() if call_timeout is None else call_timeout
    if not seconds:
        return {}
    return {id(conn): CallDeadline(conn, seconds) for conn in conns if conn is not None}


@contextmanager
def _within_deadline(deadlines: dict[int, CallDeadline], conn: Any) -> Iterator[None]:
    """The block's calls on `conn` (sync or async), all together, within its deadline;
    DatabaseUnavailable when the deadline cut them."""
    deadline = deadlines.get(id(conn))
    try:
        with bounded(deadline):
            yield
    except psycopg.Error as error:
        if deadline is None or not deadline.passed:
            raise
        raise DatabaseUnavailable(deadline.reason) from error


def _outcome(task_id: int, tasks: list[TaskInfo]) -> Any:
    """The root's result, or the first failed or cancelled member's exception."""
    by_id = {task.id: task for task in tasks}
    for task in [by_id[task_id], *(t for t in tasks if t.id != task_id)]:
        if task.status == "failed":
            raise TaskFailed(task)
        if task.status == "cancelled":
            raise TaskCancelled(task)
    return by_id[task_id].result


class _Waiting:
    """The bookkeeping of one wait: which tasks, which are unfinished, when to look again."""

    def __init__(self, task_id: int, timeout: float | None, poll_interval: float, chain: bool) -> None:
        self.task_id = task_id
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.chain = chain
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.registered: set[int] = set()
        self.ids: list[int] = []
        self.unfinished: list[int] = []

    def take(self, rows: list[dict[str, Any]]) -> float | None:
        """Read a registration's answer: None when every task is finished, else how long to
        sleep before looking again. Raises TaskNotFound, WaitTimeout."""
        if not any(row["task_id"] == self.task_id for row in rows):
            raise TaskNotFound(f"task {self.task_id} does not exist")
        self.ids = [row["task_id"] for row in rows]
        self.unfinished = [row["task_id"] for row in rows if row["status"] not in FINISHED]
        self.registered.update(self.unfinished)
        if not self.unfinished:
            return None
        remaining = math.inf if self.deadline is None else self.deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout(self.task_id, self.timeout or 0.0, self.unfinished)
        watched = all(row["watched"] for row in rows if row["status"] not in FINISHED)
        return min(self.poll_interval if watched else RETRY_REGISTRATION_AFTER, remaining)


@contextmanager
def _unavailable_raised() -> Iterator[None]:
    """psycopg's errors as they are, but DatabaseUnavailable (from the psycopg error) when the
    database is away or read-only (a standby, or a primary a failover demoted): the application
    can tell "try again later" from a call the database refuses."""
    try:
        yield
    except psycopg.Error as error:
        translated = translate(error)
        if isinstance(translated, DatabaseUnavailable):
            raise translated from error
        raise


class Client:
    """Enqueue, inspect and wait for tasks through the application's own psycopg connection."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        hooks: Iterable[EnqueueHook] = (),
        pooled: bool = False,
        wait_conn: psycopg.Connection[Any] | None = None,
        call_timeout: float | None = None,
    ) -> None:
        """`pooled`: `conn` goes through a transaction pooler, so waits need `wait_conn` (an
        autocommit connection to the server itself) to LISTEN on, or poll without it.
        `call_timeout`: each call's deadline (see the module's docstring)."""
        self.conn = conn
        self.hooks: list[EnqueueHook] = list(hooks)
        self.wait_conn = _wait_connection(conn, pooled, wait_conn)
        self._deadlines = _deadlines(call_timeout, conn, self.wait_conn)
        self._owns_connection = False

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        hooks: Iterable[EnqueueHook] = (),
        pooled: bool = False,
        listen_url: str | None = None,
        call_timeout: float | None = None,
    ) -> Client:
        """A client on a new autocommit connection (each enqueue commits at once), and one to
        `listen_url` for waits if given (see the module's docstring on `pooled`); close() it.
        DatabaseUnavailable when the server cannot be reached (DatabaseReadOnly: it takes no writes)."""
        with _unavailable_raised():
            conn = psycopg.connect(url, autocommit=True, **connection_options(url), **pooled_connection_options(pooled))
            try:
                require_writable(conn)
                wait_conn = (
                    psycopg.connect(listen_url, autocommit=True, **connection_options(listen_url)) if listen_url else None
                )
            except BaseException:
                conn.close()
                raise
        client = cls(conn, hooks=hooks, pooled=pooled, wait_conn=wait_conn, call_timeout=call_timeout)
        client._owns_connection = True
        return client

    def close(self) -> None:
        """Close the connections connect() opened; an application's connections stay open."""
        if self._owns_connection:
            self.conn.close()
            if self.wait_conn is not None:
                self.wait_conn.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(
        self, query: Any, params: Mapping[str, Any] | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[dict[str, Any]]:
        conn = conn or self.conn
        with _unavailable_raised(), _within_deadline(self._deadlines, conn), conn.cursor(row_factory=dict_row) as cur:
            cur.execute(query, params)
            return cur.fetchall()

    # Enqueue: in the caller's transaction

    def enqueue(
        self,
        role: str | Callable[..., Any],
        payload: Any = None,
        *,
        dispensary_id: int | None = None,
        store: int | None = None,
        platform: str | None = None,
        priority: int | None = None,
        scheduled_for: datetime | None = None,
        delay: float | timedelta | None = None,
        dedupe_key: str | None = None,
        dedupe_window: float | timedelta | None = None,
        dedupe_by_content: bool = False,
        max_retries: int | None = None,
        headers: Mapping[str, str] | None = None,
        backoff_base: float | timedelta | None = None,
        backoff_cap: float | timedelta | None = None,
        concurrency_key: str | None = None,
    ) -> TaskInfo:
        """Enqueue one task in the connection's current transaction (enqueue_task); the new task,
        or the task that holds its dedupe key already: the key's active task, or with
        `dedupe_window` (seconds or a timedelta) the task of the key made in the window's
        period, finished or not. `dedupe_by_content=True` makes the key of the role, store and
        payload (task_spec_hash). backoff_base and backoff_cap (seconds or a timedelta) give the
        task its own retry backoff; None, the role's. `concurrency_key` names the task's own
        key of concurrency_limits (its header of that name; "proxy:NAME" is proxy NAME): no more
        of the key's tasks run at once than its limit.

        `role` may be the handler itself (a function @handler declared): then a payload type it
        declares checks the payload here, and a ValueError naming the field refuses one that does
        not fit. A dataclass or pydantic payload is sent as its JSON object."""
        options = {
            "dispensary_id": dispensary_id, "store": store, "platform": platform, "priority": priority,
            "scheduled_for": scheduled_for, "delay": delay, "dedupe_key": dedupe_key,
            "dedupe_window": dedupe_window, "dedupe_by_content": dedupe_by_content,
            "max_retries": max_retries, "headers": headers, "backoff_base": backoff_base, "backoff_cap": backoff_cap,
            "concurrency_key": concurrency_key,
        }
        spec = _spec(role, payload, options, self.hooks)
        return TaskInfo.from_row(self._rows(ENQUEUE_TASK, _enqueue_params(spec))[0])

    def enqueue_many(self, specs: Iterable[Mapping[str, Any]]) -> list[TaskInfo]:
        """Enqueue several tasks in one statement (enqueue_specs), all or nothing, in the
        connection's current transaction. Each spec is a dict of enqueue's arguments ("role",
        "payload", "store", "delay", "headers", ...)."""
        rows = self._rows(ENQUEUE_SPECS, _enqueue_many_params(specs, self.hooks))
        return [TaskInfo.from_row(row) for row in rows]

    # Inspect and act

    def get(self, task_id: int | TaskInfo) -> TaskInfo | None:
        """The task, or None when there is no such task."""
        task_id = operator.index(task_id)
        rows = self._rows(GET_TASKS, {"ids": [task_id]})
        return TaskInfo.from_row(rows[0]) if rows else None

    def cancel(self, task_id: int | TaskInfo) -> TaskInfo:
        """cancel_task: a pending task is cancelled, a claimed or running one asked to stop."""
        task_id = operator.index(task_id)
        return TaskInfo.from_row(self._rows(CANCEL_TASK, {"id": task_id})[0])

    def retry(self, task_id: int | TaskInfo) -> TaskInfo:
        """retry_task: a failed or cancelled task back to pending, with a fresh retry budget."""
        task_id = operator.index(task_id)
        return TaskInfo.from_row(self._rows(RETRY_TASK, {"id": task_id})[0])

    def chain(self, task_id: int | TaskInfo) -> list[ChainMember]:
        """task_chain: the task's ancestors, the task (depth 0) and its follow-ups, tree order."""
        task_id = operator.index(task_id)
        return [ChainMember(**row) for row in self._rows(TASK_CHAIN, {"id": task_id})]

    # Wait: in short transactions of its own, on an idle connection

    def wait(
        self,
        task_id: int | TaskInfo,
        timeout: float | timedelta | None = None,
        *,
        chain: bool = False,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> Any:
        """Wait for the task to finish and return its result; raise TaskFailed (its error in
        .error) or TaskCancelled, or WaitTimeout after timeout seconds (None: no limit).

        With chain=True, wait until the task and every follow-up below it have finished; then
        raise for the first failed or cancelled member (the task itself first), else return the
        task's result."""
        task_id = operator.index(task_id)
        tasks = self._wait(task_id, timeout, poll_interval, chain)
        return _outcome(task_id, tasks)

    def wait_chain(
        self, task_id: int | TaskInfo, timeout: float | timedelta | None = None, *, poll_interval: float = DEFAULT_POLL_INTERVAL
    ) -> list[TaskInfo]:
        """Wait until the task and all its follow-ups have finished; all of them, in id order
        (the task first), whatever their outcome. WaitTimeout after timeout seconds."""
        task_id = operator.index(task_id)
        return self._wait(task_id, timeout, poll_interval, True)

    def _wait(self, task_id: int, timeout: Any, poll_interval: float, chain: bool) -> list[TaskInfo]:
        state = _Waiting(task_id, _check_wait_args(timeout, poll_interval), poll_interval, chain)
        _check_idle(self.conn)
        conn = self.wait_conn
        if conn is None:
            return self._poll(state)
        _check_idle(conn)
        with _within_deadline(self._deadlines, conn), conn.transaction():
            channel = self._rows(WAIT_CHANNEL, conn=conn)[0]["channel"]
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        try:
            while True:
                with _within_deadline(self._deadlines, conn), conn.transaction():
                    rows = self._rows(REGISTER_WAITS, {"ids": [task_id], "descendants": chain}, conn)
                sleep = state.take(rows)
                if sleep is None:
                    break
                for notify in conn.notifies(timeout=sleep, stop_after=1):
                    if notify.channel == channel:
                        break
        finally:
            if conn.info.transaction_status == TransactionStatus.IDLE and not conn.closed:
                with _within_deadline(self._deadlines, conn), conn.transaction():
                    if state.registered:
                        conn.execute(UNREGISTER_WAITS, {"ids": sorted(state.registered)})
                    conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(channel)))
        with _within_deadline(self._deadlines, conn), conn.transaction():
            rows = self._rows(GET_TASKS, {"ids": state.ids}, conn)
        return [TaskInfo.from_row(row) for row in rows]

    def _poll(self, state: _Waiting) -> list[TaskInfo]:
        """Wait by reading the tasks' status every poll_interval seconds, on the pooled connection."""
        while (sleep := state.take(self._rows(POLL_WAITS, {"id": state.task_id, "descendants": state.chain}))) is not None:
            time.sleep(sleep)
        return [TaskInfo.from_row(row) for row in self._rows(GET_TASKS, {"ids": state.ids})]


class AsyncClient:
    """Client over a psycopg.AsyncConnection: the same calls, awaited."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        *,
        hooks: Iterable[EnqueueHook] = (),
        pooled: bool = False,
        wait_conn: psycopg.AsyncConnection[Any] | None = None,
        call_timeout: float | None = None,
    ) -> None:
        """As Client."""
        self.conn = conn
        self.hooks: list[EnqueueHook] = list(hooks)
        self.wait_conn = _wait_connection(conn, pooled, wait_conn)
        self._deadlines = _deadlines(call_timeout, conn, self.wait_conn)
        self._owns_connection = False

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        hooks: Iterable[EnqueueHook] = (),
        pooled: bool = False,
        listen_url: str | None = None,
        call_timeout: float | None = None,
    ) -> AsyncClient:
        """As Client.connect."""
        with _unavailable_raised():
            conn = await psycopg.AsyncConnection.connect(
                url, autocommit=True, **connection_options(url), **pooled_connection_options(pooled)
            )
            try:
                state = reported_state(conn)
                if state is None:
                    async with conn.cursor(row_factory=dict_row) as cur:
                        state = await (await cur.execute(READ_ONLY_STATE)).fetchone()
                refuse_read_only(conn, state)
                wait_conn = (
                    await psycopg.AsyncConnection.connect(listen_url, autocommit=True, **connection_options(listen_url))
                    if listen_url
                    else None
                )
            except BaseException:
                await conn.close()
                raise
        client = cls(conn, hooks=hooks, pooled=pooled, wait_conn=wait_conn, call_timeout=call_timeout)
        client._owns_connection = True
        return client

    async def close(self) -> None:
        if self._owns_connection:
            await self.conn.close()
            if self.wait_conn is not None:
                await self.wait_conn.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _rows(
        self, query: Any, params: Mapping[str, Any] | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[dict[str, Any]]:
        conn = conn or self.conn
        with _unavailable_raised(), _within_deadline(self._deadlines, conn):
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(query, params)
                return await cur.fetchall()

    async def enqueue(
        self,
        role: str | Callable[..., Any],
        payload: Any = None,
        *,
        dispensary_id: int | None = None,
        store: int | None = None,
        platform: str | None = None,
        priority: int | None = None,
        scheduled_for: datetime | None = None,
        delay: float | timedelta | None = None,
        dedupe_key: str | None = None,
        dedupe_window: float | timedelta | None = None,
        dedupe_by_content: bool = False,
        max_retries: int | None = None,
        headers: Mapping[str, str] | None = None,
        backoff_base: float | timedelta | None = None,
        backoff_cap: float | timedelta | None = None,
        concurrency_key: str | None = None,
    ) -> TaskInfo:
        """As Client.enqueue."""
        options = {
            "dispensary_id": dispensary_id, "store": store, "platform": platform, "priority": priority,
            "scheduled_for": scheduled_for, "delay": delay, "dedupe_key": dedupe_key,
            "dedupe_window": dedupe_window, "dedupe_by_content": dedupe_by_content,
            "max_retries": max_retries, "headers": headers, "backoff_base": backoff_base, "backoff_cap": backoff_cap,
            "concurrency_key": concurrency_key,
        }
        spec = _spec(role, payload, options, self.hooks)
        return TaskInfo.from_row((await self._rows(ENQUEUE_TASK, _enqueue_params(spec)))[0])

    async def enqueue_many(self, specs: Iterable[Mapping[str, Any]]) -> list[TaskInfo]:
        """As Client.enqueue_many."""
        rows = await self._rows(ENQUEUE_SPECS, _enqueue_many_params(specs, self.hooks))
        return [TaskInfo.from_row(row) for row in rows]

    async def get(self, task_id: int | TaskInfo) -> TaskInfo | None:
        task_id = operator.index(task_id)
        rows = await self._rows(GET_TASKS, {"ids": [task_id]})
        return TaskInfo.from_row(rows[0]) if rows else None

    async def cancel(self, task_id: int | TaskInfo) -> TaskInfo:
        task_id = operator.index(task_id)
        return TaskInfo.from_row((await self._rows(CANCEL_TASK, {"id": task_id}))[0])

    async def retry(self, task_id: int | TaskInfo) -> TaskInfo:
        task_id = operator.index(task_id)
        return TaskInfo.from_row((await self._rows(RETRY_TASK, {"id": task_id}))[0])

    async def chain(self, task_id: int | TaskInfo) -> list[ChainMember]:
        task_id = operator.index(task_id)
        return [ChainMember(**row) for row in await self._rows(TASK_CHAIN, {"id": task_id})]

    async def wait(
        self,
        task_id: int | TaskInfo,
        timeout: float | timedelta | None = None,
        *,
        chain: bool = False,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> Any:
        """As Client.wait."""
        task_id = operator.index(task_id)
        tasks = await self._wait(task_id, timeout, poll_interval, chain)
        return _outcome(task_id, tasks)

    async def wait_chain(
        self, task_id: int | TaskInfo, timeout: float | timedelta | None = None, *, poll_interval: float = DEFAULT_POLL_INTERVAL
    ) -> list[TaskInfo]:
        """As Client.wait_chain."""
        task_id = operator.index(task_id)
        return await self._wait(task_id, timeout, poll_interval, True)

    async def _wait(self, task_id: int, timeout: Any, poll_interval: float, chain: bool) -> list[TaskInfo]:
        state = _Waiting(task_id, _check_wait_args(timeout, poll_interval), poll_interval, chain)
        _check_idle(self.conn)
        conn = self.wait_conn
        if conn is None:
            return await self._poll(state)
        _check_idle(conn)
        with _within_deadline(self._deadlines, conn):
            async with conn.transaction():
                channel = (await self._rows(WAIT_CHANNEL, conn=conn))[0]["channel"]
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        try:
            while True:
                with _within_deadline(self._deadlines, conn):
                    async with conn.transaction():
                        rows = await self._rows(REGISTER_WAITS, {"ids": [task_id], "descendants": chain}, conn)
                sleep = state.take(rows)
                if sleep is None:
                    break
                async for notify in conn.notifies(timeout=sleep, stop_after=1):
                    if notify.channel == channel:
                        break
        finally:
            if conn.info.transaction_status == TransactionStatus.IDLE and not conn.closed:
                with _within_deadline(self._deadlines, conn):
                    async with conn.transaction():
                        if state.registered:
                            await conn.execute(UNREGISTER_WAITS, {"ids": sorted(state.registered)})
                        await conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(channel)))
        with _within_deadline(self._deadlines, conn):
            async with conn.transaction():
                rows = await self._rows(GET_TASKS, {"ids": state.ids}, conn)
        return [TaskInfo.from_row(row) for row in rows]

    async def _poll(self, state: _Waiting) -> list[TaskInfo]:
        """As Client._poll."""
        while (
            sleep := state.take(await self._rows(POLL_WAITS, {"id": state.task_id, "descendants": state.chain}))
        ) is not None:
            await asyncio.sleep(sleep)
        return [TaskInfo.from_row(row) for row in await self._rows(GET_TASKS, {"ids": state.ids})]
