"""The queue core's SQL, one taskpool function call per method.

Values always travel as parameters with explicit casts; nothing is formatted into SQL text.
A `Database` owns one autocommit connection (every call is its own short transaction, so a
transaction-mode pooler works, given pooled=True) and is used by one thread. A lost connection, or
a call past its deadline (pyworker/deadlines.py), raises DatabaseUnavailable; the next call
connects again. A handler's Database (`task.database()`) is on
its attempt's own connection instead, borrowed from its worker's pool (pyworker/connections.py).
The crawler's SQL is in its own package (taskpool_crawler.db), pg_cron's in pyworker.cron.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import pq, sql
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb, set_json_loads

from pyworker.deadlines import (
    DEFAULT_CONNECT_TIMEOUT,
    CallDeadline,
    bounded,
    connection_options,
    default_call_timeout,
)
from pyworker.errors import (
    DatabaseReadOnly,
    DatabaseUnavailable,
    NotFound,
    Refused,
    SchemaMismatch,
    SchemaMissing,
    TaskLost,
    TaskpoolError,
    translate,
)

if TYPE_CHECKING:
    from pyworker.connections import AttemptConnection

# The schema version (taskpool_schema_version()) this pyworker was written against.
REQUIRED_SCHEMA_VERSION = (0, 7, 0)
# The schedules, the tick, resync planning and capacity came with this one.
SCHEDULES_SCHEMA_VERSION = (0, 2, 0)


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
        connections = self._lease().connections
        database_class = Database if kind is None else kind
        return database_class(connections.url, pooled=connections.pooled, connection=self.connection)

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
        task = cls(**{name: row[name] for name in _TASK_COLUMNS if name not in _OPTIONAL_COLUMNS})
        # A schema before headers and parent_id returns neither.
        task.headers = dict(row.get("headers") or {})
        task.parent_id = row.get("parent_id")
        return task

    def as_json(self) -> dict[str, Any]:
        """The task as JSON-ready data (what a subprocess handler reads on stdin)."""
        # Not dataclasses.asdict: it deep-copies every field, and the abort signal holds a lock.
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _NOT_COLUMNS}
        return {k: _json_ready(v) for k, v in data.items()}


def _json_ready(value: Any) -> Any:
    """A task field as JSON holds it: times in ISO 8601, the claim_token as its text."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


# The attempt's own: its abort signal and its connection.
_NOT_COLUMNS = frozenset({"abort", "lease"})
_TASK_COLUMNS = tuple(f.name for f in dataclasses.fields(Task) if f.name not in _NOT_COLUMNS)
_OPTIONAL_COLUMNS = frozenset({"headers", "parent_id"})

# Worker side
CLAIM_AND_START_TASKS = (
    "SELECT * FROM claim_and_start_tasks(%(role)s::text, %(worker_id)s::text, %(max_tasks)s::integer)"
)
MARK_WORKER_WAITING = "SELECT mark_worker_waiting(%(worker_id)s::text, %(role)s::text) AS marked"
WORKER_WAKE_CHANNEL = "SELECT worker_wake_channel(%(worker_id)s::text) AS channel"
COMPLETE_TASKS = (
    "SELECT task_id, status FROM complete_tasks(%(worker_id)s::text, %(completions)s::jsonb)"
)
# Every call on a claimed task names its claim: the task, the worker, the attempt and the claim_token.
_CLAIM = "%(task_id)s::bigint, %(worker_id)s::text, %(attempt)s::integer, %(claim_token)s::uuid"
HEARTBEAT_TASK = f"SELECT heartbeat_task({_CLAIM}) AS answer"
HEARTBEAT_TASKS = (
    "SELECT task_id, answer"
    " FROM heartbeat_tasks(%(worker_id)s::text, %(task_ids)s::bigint[], %(attempts)s::integer[],"
    " %(claim_tokens)s::uuid[])"
)
COMPLETE_TASK = f"SELECT status FROM complete_task({_CLAIM}, %(result)s::jsonb, %(follow_ups)s::jsonb)"
FAIL_TASK = (
    f"SELECT * FROM fail_task({_CLAIM},"
    " %(error_message)s::text, %(retryable)s::boolean, error_details => %(error_details)s::text,"
    " error_data => %(error_data)s::jsonb)"
)
SNOOZE_TASK = (
    f"SELECT * FROM snooze_task({_CLAIM},"
    " taskpool_now() + make_interval(secs => %(seconds)s::double precision))"
)
RELEASE_TASK = f"SELECT * FROM release_task({_CLAIM})"
REGISTER_WORKER = (
    "SELECT * FROM register_worker(%(worker_id)s::text, %(roles)s::text[], %(host)s::text, %(pid)s::integer,"
    " %(concurrency)s::integer)"
)
HEARTBEAT_WORKER = "SELECT heartbeat_worker(%(worker_id)s::text) AS known"
DEREGISTER_WORKER = "SELECT deregister_worker(%(worker_id)s::text) AS known"
SCHEMA_VERSION = "SELECT taskpool_schema_version() AS version"

# Operator side
ENQUEUE_TASKS = "SELECT * FROM enqueue_tasks(%(tasks)s::jsonb)"
# `list`'s filters, each left out when NULL: the page and its count read the same tasks. The
# error filter is a case-insensitive substring (strpos: no LIKE pattern to escape).
_TASK_FILTERS = (
    " WHERE (%(role)s::text IS NULL OR role = %(role)s::text)"
    "   AND (%(status)s::text IS NULL OR status = %(status)s::text)"
    "   AND (%(store)s::integer IS NULL OR dispensary_id = %(store)s::integer)"
    "   AND (%(error)s::text IS NULL OR strpos(lower(error_message), lower(%(error)s::text)) > 0)"
)
LIST_TASKS = (
    "SELECT id, role, dispensary_id, status, priority, attempt, retry_count, max_retries,"
    " scheduled_for, worker_id, created_at, updated_at, error_message"
    " FROM worker_tasks" + _TASK_FILTERS
    + " ORDER BY id DESC LIMIT %(limit)s::integer OFFSET %(offset)s::integer"
)
COUNT_TASKS = "SELECT count(*) AS tasks FROM worker_tasks" + _TASK_FILTERS
GET_TASK = "SELECT * FROM worker_tasks WHERE id = %(task_id)s::bigint"
TASK_CHAIN = (
    "SELECT id, parent_id, depth, role, status, dispensary_id, created_at, completed_at, error_message"
    " FROM task_chain(%(task_id)s::bigint)"
)
TASK_ATTEMPTS = (
    "SELECT attempt, worker_id, claimed_at, started_at, last_heartbeat_at, ended_at, outcome,"
    " error_message, error_details, error_data FROM worker_task_attempts WHERE task_id = %(task_id)s::bigint ORDER BY attempt"
)
COUNTS = (
    "SELECT role, status, count(*) AS tasks FROM worker_tasks GROUP BY role, status"
    " ORDER BY role, status"
)
RECOVER_STALE = "SELECT recover_stale_tasks(%(threshold_minutes)s::integer) AS recovered"
RECOVER_STALE_OF_ROLE = "SELECT recover_stale_tasks_of_role(%(role)s::text) AS recovered"
CANCEL_TASK = "SELECT * FROM cancel_task(%(task_id)s::bigint)"
RETRY_TASK = "SELECT * FROM retry_task(%(task_id)s::bigint)"
MARK_TASK_COMPLETED = "SELECT * FROM mark_task_completed(%(task_id)s::bigint, %(result)s::jsonb)"
DELETE_TASK = "SELECT * FROM delete_task(%(task_id)s::bigint)"
# The filters of tasks_matching, retry_tasks and cancel_tasks.
TASK_FILTER = (
    "role => %(role)s::text, status => %(status)s::text, store => %(store)s::bigint,"
    " platform => %(platform)s::text, error_like => %(error_like)s::text,"
    " created_before => %(created_before)s::timestamptz, created_after => %(created_after)s::timestamptz"
)
TASKS_MATCHING_COUNT = f"SELECT count(*) AS tasks FROM tasks_matching({TASK_FILTER}) t WHERE t.status = ANY(%(statuses)s)"
TASKS_MATCHING_SAMPLE = (
    "SELECT t.id, t.role, t.status, t.dispensary_id, t.platform, t.created_at, t.error_message"
    f" FROM tasks_matching({TASK_FILTER}) t WHERE t.status = ANY(%(statuses)s) LIMIT %(limit)s"
)
BULK_TASK_ACTION = {
    "retry": f"SELECT retry_tasks({TASK_FILTER}, max_tasks => %(batch_size)s::integer) AS tasks",
    "cancel": f"SELECT cancel_tasks({TASK_FILTER}, max_tasks => %(batch_size)s::integer) AS tasks",
}
# What each bulk action takes: a status filter outside these selects nothing it could act on.
BULK_ACTION_STATUSES = {"retry": ["failed", "cancelled"], "cancel": ["pending", "claimed", "running"]}
PRUNE_TASKS_IN_BATCHES = (
    "CALL prune_tasks_in_batches(%(older_than)s::interval, %(batch_size)s::integer,"
    " %(max_tasks)s::integer)"
)
COUNT_PRUNABLE_TASKS = "SELECT count_prunable_tasks(%(older_than)s::interval) AS tasks"
# Retention policies (retention_policies): applied, counted, listed, changed
APPLY_RETENTION_IN_BATCHES = (
    "CALL apply_retention_in_batches(%(max_batches)s::integer, %(max_seconds)s::numeric,"
    " %(pause_ratio)s::numeric)"
)
COUNT_RETENTION = "SELECT * FROM count_retention()"
RETENTION_POLICIES = "SELECT * FROM retention_policies ORDER BY name"
SET_RETENTION_POLICY = (
    "SELECT * FROM set_retention_policy(%(name)s::text, keep => %(keep)s::interval,"
    " enabled => %(enabled)s::boolean, batch_size => %(batch_size)s::integer,"
    " statuses => %(statuses)s::text[])"
)
ROLES = "SELECT role FROM task_roles ORDER BY role"
# A role's settings, as create_role, update_role and diff_role take them (task_roles' columns).
ROLE_FIELDS = {
    "description": "text",
    "max_retries": "integer",
    "stale_threshold": "interval",
    "run_timeout": "interval",
    "backoff_base": "interval",
    "backoff_cap": "interval",
    "backoff_multiplier": "numeric",
    "backoff_jitter": "text",
    "max_payload_bytes": "integer",
    "requires_store": "boolean",
}
ROLE_ROWS = (
    "SELECT role, description, max_retries, stale_threshold, run_timeout, backoff_base, backoff_cap,"
    " backoff_multiplier, backoff_jitter, max_payload_bytes, requires_store, paused_at, paused_by, pause_reason,"
    " created_at FROM task_roles ORDER BY role"
)
REMOVE_ROLE = "SELECT * FROM remove_role(%(role)s::text, %(force)s::boolean)"
PARSE_INTERVAL = "SELECT %(text)s::text::interval AS value"
WORKERS = "SELECT * FROM v_workers ORDER BY role, worker_id"

# Schedules, planning, capacity and health
TICK_SCHEDULES = "SELECT tick_schedules() AS report"
SCHEDULES = "SELECT * FROM task_schedules ORDER BY name"
# The fields create_schedule and update_schedule take by name, with their SQL types.
SCHEDULE_FIELDS = {
    "kind": "text",
    "every": "interval",
    "cron": "text",
    "interval_hours": "integer",
    "time_zone": "text",
    "payload": "jsonb",
    "state_code": "text",
    "priority": "integer",
    "batches": "integer",
    "planner": "text",
    "enabled": "boolean",
    "next_run_at": "timestamptz",
}
DELETE_SCHEDULE = "SELECT * FROM delete_schedule(%(name)s::text)"
TRIGGER_SCHEDULE = "SELECT * FROM trigger_schedule(%(name)s::text)"
WORKER_CAPACITY_ROWS = "SELECT * FROM v_worker_capacity ORDER BY role"
WORKER_CAPACITY_ROW = "SELECT * FROM v_worker_capacity WHERE role = %(role)s::text"
TASK_COUNTS = "SELECT role, status, tasks FROM v_task_counts ORDER BY role, status"
ACTIVE_WORKERS = "SELECT * FROM v_active_workers ORDER BY role, worker_id"
STUCK_TASKS = "SELECT * FROM v_stuck_tasks ORDER BY last_heartbeat_at, id"
XMIN_HORIZON = "SELECT * FROM v_xmin_horizon"
WORKER_CAPACITY = "SELECT worker_capacity(%(role)s::text) AS capacity"
TASK_THROUGHPUT = "SELECT * FROM task_throughput(%(hours)s::integer)"
HEALTH_CHECKS = (
    "SELECT * FROM taskpool_health(%(max_tick_age)s::interval, %(max_snapshot_age)s::interval)"
)
# Pausing a role, disabling a platform: what the claim hands out
PAUSE_ROLE = (
    "SELECT role, paused_at, paused_by, pause_reason FROM pause_role(%(role)s::text, %(reason)s::text)"
)
RESUME_ROLE = "SELECT role, paused_at, paused_by, pause_reason FROM resume_role(%(role)s::text)"
DISABLE_PLATFORM = (
    "SELECT platform, enabled, disabled_at, disabled_by, disable_reason"
    " FROM disable_platform(%(platform)s::text, %(reason)s::text)"
)
ENABLE_PLATFORM = (
    "SELECT platform, enabled, disabled_at, disabled_by, disable_reason"
    " FROM enable_platform(%(platform)s::text)"
)

# Stores (the mutual-exclusion keys) and platform governance (rate limits, circuit breaker)
STORE_EXISTS = "SELECT EXISTS (SELECT FROM dispensaries WHERE id = %(store_id)s::integer) AS found"
PLATFORMS = "SELECT * FROM v_platforms ORDER BY platform"
PLATFORM_EVENTS = (
    "SELECT id, platform, event, at, consecutive_failures, error_message FROM platform_events"
    " ORDER BY at DESC, id DESC LIMIT %(limit)s::integer"
)
ACQUIRE_PLATFORM_REQUEST = "SELECT acquire_platform_request(%(platform)s::text) AS wait_seconds"
RECORD_PLATFORM_RESULT = (
    "SELECT record_platform_result(%(platform)s::text, %(succeeded)s::boolean,"
    " %(error_message)s::text) AS circuit"
)


def parse_schema_version(version: Any) -> tuple[int, ...]:
    """taskpool_schema_version()'s MAJOR.MINOR.PATCH as numbers; SchemaMismatch naming the text
    when it is no such thing."""
    parts = version.split(".") if isinstance(version, str) else []
    if len(parts) != 3 or not all(part.isascii() and part.isdigit() for part in parts):
        raise SchemaMismatch(
            f"the taskpool schema reports version {version!r}, which is not MAJOR.MINOR.PATCH:"
            " this database's taskpool_schema_version() is not one pyworker knows"
        )
    return tuple(int(part) for part in parts)


class NotJson(ValueError):
    """A value JSON cannot hold: the message says where in the value and why."""


@dataclass(frozen=True)
class JsonText:
    """JSON already written: dump_json copies it as it is."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class UnreadableJson(JsonText):
    """A json or jsonb value Python cannot load (nested too deeply, a number too long): its text
    as the database wrote it, and why it could not be loaded."""

    reason: str


_JSON_KINDS = (
    "JSON holds objects, arrays, strings, numbers, booleans and null;"
    " dates, datetimes, Decimals and UUIDs are written as JSON too"
)


# Where a value is in what dump_json writes: (the place of its container, its key or index),
# the outermost (None, name). Spelled out only for an error: a path per value would cost as much
# as the dump.
_Place = tuple[Any, Any]


class _PlaceName:
    """A place's path (`result['key'][0]`), spelled out when formatted."""

    def __init__(self, place: _Place) -> None:
        self.place = place

    def __str__(self) -> str:
        steps = []
        container, key = self.place
        while container is not None:
            steps.append(f"[{key!r}]")
            container, key = container
        return key + "".join(reversed(steps))


def dump_json(
    value: Any,
    *,
    name: str = "value",
    indent: int | None = None,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """JSON text of `value`, numbers exact: a Decimal's digits as they are (json.dumps knows no
    Decimal, and a float would round it), dates and datetimes as ISO 8601 strings, UUIDs as
    strings, JsonText as it is; `default(value)` stands for any other value. NotJson, naming the
    place in `value` (`name['key'][0]`) and why, for what JSON or PostgreSQL cannot hold: a NaN
    or infinite number, a NUL character, a lone surrogate, a value of another type.

    Written with a stack, not recursion: any depth that loaded can be written back.
    """
    parts: list[str] = []
    # Text to write as it is, or (value, its place, its nesting level, default applied).
    stack: list[str | tuple[Any, _Place, int, bool]] = [(value, (None, name), 0, False)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        value, place, level, defaulted = item
        path = _PlaceName(place)
        if value is None:
            parts.append("null")
        elif value is True or value is False:
            parts.append("true" if value else "false")
        elif isinstance(value, JsonText):
            parts.append(value.text)
        elif isinstance(value, str):
            parts.append(_json_string(value, path))
        elif isinstance(value, int):
            try:
                parts.append(int.__repr__(value))
            except ValueError as error:
                limit = str(error).split(";")[0]
                raise NotJson(f"{path} is an integer too long to write: {limit}") from None
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise NotJson(f"{path} is {value!r}: JSON has no such number")
            parts.append(float.__repr__(value))
        elif isinstance(value, Decimal):
            if not value.is_finite():
                raise NotJson(f"{path} is {value!r}: JSON has no such number")
            parts.append(str(value))
        elif isinstance(value, (datetime, date)):
            parts.append(json.dumps(value.isoformat()))
        elif isinstance(value, uuid.UUID):
            parts.append(json.dumps(str(value)))
        elif isinstance(value, dict):
            members = [
                (_json_key(key, path) + ": ", (place, key), member) for key, member in value.items()
            ]
            stack += _reversed_container("{", "}", members, indent, level)
        elif isinstance(value, (list, tuple)):
            members = [("", (place, index), member) for index, member in enumerate(value)]
            stack += _reversed_container("[", "]", members, indent, level)
        elif default is not None and not defaulted:
            try:
                stack.append((default(value), place, level, True))
            except TypeError:
                raise NotJson(f"{path} is of type {type(value).__name__} ({_JSON_KINDS})") from None
        else:
            raise NotJson(f"{path} is of type {type(value).__name__} ({_JSON_KINDS})")
    return "".join(parts)


def _reversed_container(
    opening: str, closing: str, members: list[tuple[str, _Place, Any]], indent: int | None, level: int
) -> list[str | tuple[Any, _Place, int, bool]]:
    """An object's or array's pieces, last first (for dump_json's stack): the brackets, the
    separators and keys as text, the members as values to write."""
    if not members:
        return [opening + closing]
    if indent is None:
        first, between, last = "", ", ", ""
    else:
        first = between = "\n" + " " * (indent * (level + 1))
        between = "," + between
        last = "\n" + " " * (indent * level)
    pieces: list[str | tuple[Any, _Place, int, bool]] = [opening]
    for number, (key, path, member) in enumerate(members):
        pieces += [(between if number else first) + key, (member, path, level + 1, False)]
    pieces.append(last + closing)
    return pieces[::-1]


def _json_key(key: Any, path: _PlaceName) -> str:
    """An object key as JSON text: a string, or a number, boolean or null as json.dumps writes it."""
    if isinstance(key, str):
        return _json_string(key, path, key=True)
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(json.dumps(key))
    raise NotJson(f"{path} has a key of type {type(key).__name__} ({key!r}): JSON keys are strings")


def _json_string(text: str, path: _PlaceName, *, key: bool = False) -> str:
    """A string as JSON text; NotJson for one PostgreSQL cannot store (`key`: an object key)."""
    if "\x00" in text:
        where = f"a key of {path}" if key else path
        raise NotJson(f"{where} holds a NUL character, which PostgreSQL cannot store")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        where = f"a key of {path}" if key else path
        raise NotJson(f"{where} is not valid Unicode: {error.reason} at position {error.start}") from None
    return json.dumps(text, ensure_ascii=False)


def _exact_int(text: str) -> int | Decimal:
    """A JSON integer: an int, or a Decimal when it has more digits than Python's int reads."""
    try:
        return int(text)
    except ValueError:
        return Decimal(text)


def load_exact_json(text: str | bytes) -> Any:
    """JSON text as Python values, every number exact: fractions and integers too long for an
    int as Decimal. Raises ValueError for text that is not JSON, RecursionError for nesting
    deeper than Python reads."""
    return json.loads(text, parse_float=Decimal, parse_int=_exact_int)


def _loaded_or_unreadable(loads: Callable[[str | bytes], Any], data: str | bytes) -> Any:
    """`loads(data)`; UnreadableJson, never an error, for a value Python cannot load: the row it
    is in must still reach the caller (a worker fails that task alone; the CLI prints it)."""
    try:
        return loads(data)
    except RecursionError:
        reason = "JSON nested too deeply for Python to read"
    except ValueError as error:
        reason = str(error).split(";")[0]
    text = data.decode() if isinstance(data, bytes) else data
    return UnreadableJson(text, reason)


# The json and jsonb loaders (module functions, not closures: psycopg keeps them per function).
def _load_json(data: str | bytes) -> Any:
    return _loaded_or_unreadable(json.loads, data)


def _load_exact_json(data: str | bytes) -> Any:
    return _loaded_or_unreadable(load_exact_json, data)


def _loaded_or_text(loader: type[Loader]) -> type[Loader]:
    """`loader`, loading a time Python cannot hold ('infinity', a year past 9999) as the text
    PostgreSQL wrote: any stored row can be read and printed.

    It wraps the loader rather than subclass it: the loaders of psycopg's C implementation (what
    psycopg[binary] registers) cannot be subclassed, and the pure-Python ones parse a timestamp
    about five times slower, which a worker claiming thousands of tasks a second pays for."""

    class OrText(Loader):
        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self._loader = loader(oid, context)

        def load(self, data: Buffer) -> Any:
            try:
                return self._loader.load(data)
            except psycopg.DataError:
                return bytes(data).decode()

    OrText.__name__ = OrText.__qualname__ = f"{loader.__name__}OrText"
    return OrText


def _time_loaders() -> dict[str, type[Loader]]:
    """The time loaders psycopg registers by default (its C ones when it has them), each wrapped
    by _loaded_or_text."""
    types = psycopg.adapters.types
    return {
        name: _loaded_or_text(psycopg.adapters.get_loader(types[name].oid, pq.Format.TEXT))
        for name in ("timestamptz", "timestamp", "date")
    }


_TIME_LOADERS = _time_loaders()


def configure_connection(conn: psycopg.Connection[Any], *, exact_numbers: bool) -> None:
    """What every taskpool connection loads its JSON and times with (see Database)."""
    set_json_loads(_load_exact_json if exact_numbers else _load_json, conn)
    for type_name, loader in _TIME_LOADERS.items():
        conn.adapters.register_loader(type_name, loader)


# What a server reports at connect (from PostgreSQL 14 on) that says it takes no writes, and the
# query that asks a server that does not report them.
READ_ONLY_SETTINGS = ("in_hot_standby", "default_transaction_read_only")
READ_ONLY_STATE = (
    "SELECT CASE WHEN pg_is_in_recovery() THEN 'on' ELSE 'off' END AS in_hot_standby,"
    " current_setting('transaction_read_only') AS default_transaction_read_only"
)


def read_only_reason(state: Mapping[str, str | None]) -> str | None:
    """Why a server whose READ_ONLY_SETTINGS are `state` takes no writes; None when it does."""
    if state["in_hot_standby"] == "on":
        return "it is a standby (in recovery)"
    if state["default_transaction_read_only"] == "on":
        return "its transactions are read-only (default_transaction_read_only is on)"
    return None


AnyConnection = psycopg.Connection[Any] | psycopg.AsyncConnection[Any]


def reported_state(conn: AnyConnection) -> dict[str, str | None] | None:
    """The READ_ONLY_SETTINGS the server reported at connect; None when it did not report them."""
    state = {name: conn.info.parameter_status(name) for name in READ_ONLY_SETTINGS}
    return None if None in state.values() else state


def require_writable(conn: psycopg.Connection[Any]) -> None:
    """DatabaseReadOnly when the connection reached a standby or a read-only server: nothing can
    be written there (a multi-host URL without target_session_attrs=read-write, or a single host
    a failover demoted). The caller closes it; a later connect may reach the new primary."""
    state = reported_state(conn)
    if state is None:
        with conn.cursor(row_factory=dict_row) as cursor:
            state = cursor.execute(READ_ONLY_STATE).fetchone()
    refuse_read_only(conn, state)


def refuse_read_only(conn: AnyConnection, state: Mapping[str, str | None]) -> None:
    """DatabaseReadOnly when `state` (READ_ONLY_SETTINGS) says the server takes no writes."""
    reason = read_only_reason(state)
    if reason is not None:
        raise DatabaseReadOnly(f"the server at {conn.info.host}:{conn.info.port} is read-only: {reason}")


def storable_text(text: str) -> str:
    """`text` as PostgreSQL's text can hold it: NULs and lone surrogates as backslash escapes."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


class Database:
    """One connection to the taskpool database, and a method per SQL call."""

    def __init__(
        self,
        url: str,
        *,
        application_name: str = "pyworker",
        exact_numbers: bool = False,
        pooled: bool = False,
        on_reconnect: Callable[[], object] | None = None,
        connection: Callable[[], psycopg.Connection] | None = None,
        call_timeout: float | None = None,
        connect_timeout: int = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        """`exact_numbers`: load JSON numbers as Decimal (every digit kept, as the CLI prints
        them) rather than int and float (what handlers get). `pooled`: `url` goes through a
        transaction-pooling PgBouncer, so nothing is prepared: psycopg prepares a statement on its
        sixth run, on whichever server connection that transaction got, and PgBouncer before 1.21
        does not carry prepared statements over to the others (docs/pgbouncer.md).
        `on_reconnect`: called each time a connection is opened after the first (a worker counts
        them in its metrics). `connection`: where each call takes its connection instead of
        opening its own (a handler's attempt: Task.database()); close() then leaves it be.
        `call_timeout`: each call's deadline in seconds (pyworker/deadlines.py), past which its
        connection is cut and the call raises DatabaseUnavailable; None: TASKPOOL_CALL_TIMEOUT_SECONDS
        or 20 s; 0: none. A borrowed connection's calls have none here: the attempt's run timeout
        bounds them. `connect_timeout`: libpq's, in seconds (per host)."""
        self.url = url
        self.application_name = application_name
        self.exact_numbers = exact_numbers
        self.pooled = pooled
        self.on_reconnect = on_reconnect
        self._borrowed = connection
        self.call_timeout = default_call_timeout() if call_timeout is None else call_timeout
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection | None = None
        self._deadline: CallDeadline | None = None
        self._connected_before = False

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._deadline = None

    def connect(self) -> psycopg.Connection:
        """The open connection, opened now if there is none or the last one broke."""
        if self._borrowed is not None:
            return self._borrowed()
        conn = self._conn
        deadline = self._deadline
        # A connection whose call was cut, or to a server another connection's call was cut on.
        stuck = deadline is not None and (deadline.passed or deadline.suspect)
        if conn is None or conn.closed or conn.broken or stuck:
            self.close()
            try:
                self._conn = psycopg.connect(
                    self.url,
                    autocommit=True,
                    row_factory=dict_row,
                    application_name=self.application_name,
                    **connection_options(self.url, connect_timeout=self.connect_timeout),
                    **pooled_connection_options(self.pooled),
                )
            except psycopg.Error as error:
                raise translate(error) from error
            try:
                with self._translated():
                    require_writable(self._conn)
            except DatabaseUnavailable:
                self.close()
                raise
            configure_connection(self._conn, exact_numbers=self.exact_numbers)
            if self.call_timeout:
                self._deadline = CallDeadline(self._conn, self.call_timeout)
            if self._connected_before and self.on_reconnect is not None:
                self.on_reconnect()
            self._connected_before = True
        return self._conn

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as error:
            deadline = self._deadline
            if deadline is not None and deadline.passed:
                self.close()
                raise DatabaseUnavailable(
                    f"the database did not answer within {deadline.seconds:g} s (the call's deadline):"
                    " its connection was cut"
                ) from error
            translated = translate(error)
            if isinstance(translated, DatabaseUnavailable):
                self.close()
            raise translated from error

    def _rows(
        self, query: str | sql.Composable, params: dict[str, Any] | None = None, *, bounded: bool = True
    ) -> list[dict[str, Any]]:
        """The rows of one call, within the call's deadline unless not `bounded` (an operator's
        long procedure: pruning, retention)."""
        conn = self.connect()
        deadline = self._deadline if bounded else None
        with self._translated():
            if deadline is None:
                return conn.execute(query, params).fetchall()
            enclosing = deadline.arm()
            try:
                return conn.execute(query, params).fetchall()
            finally:
                deadline.disarm(enclosing)

    def _one(
        self, query: str | sql.Composable, params: dict[str, Any] | None = None, *, bounded: bool = True
    ) -> dict[str, Any] | None:
        rows = self._rows(query, params, bounded=bounded)
        return rows[0] if rows else None

    # For packages built on taskpool (the crawler, pyworker.cron): their own SQL on this
    # connection, with its errors translated as pyworker's are.

    def query(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of `query` (parameters as `%(name)s::type`), as dicts."""
        return self._rows(query, params)

    def query_one(self, query: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The first row of `query`, or None."""
        return self._one(query, params)

    # Start-up

    def where(self) -> str:
        """Which database this is, as `dbname on host:port` (never the password a URL may hold)."""
        info = self.connect().info
        return f"{info.dbname} on {info.host}:{info.port}"

    def schema_version(self) -> str:
        """taskpool_schema_version(), whatever it says; SchemaMissing when there is none."""
        return self._one(SCHEMA_VERSION)["version"]

    def check_schema(self, required: tuple[int, ...] = REQUIRED_SCHEMA_VERSION) -> str:
        """The schema version, or SchemaMissing saying what to run when it is absent or older
        than `required`; SchemaMismatch when it is of a newer major version (its functions may
        have changed meaning) or no version this pyworker can read."""
        version = self.schema_version()
        found = parse_schema_version(version)
        needed = ".".join(map(str, required))
        if found < required:
            raise SchemaMissing(
                f"the taskpool schema is version {version}; this pyworker needs {needed} or later:"
                " upgrade it with `pyworker schema upgrade` (from a taskpool checkout: `make deploy`)"
            )
        if found[0] > required[0]:
            raise SchemaMismatch(
                f"the taskpool schema is version {version}, a newer major version than this"
                f" pyworker was written for ({needed}, any later {required[0]}.x): upgrade pyworker"
            )
        return version

    def register_worker(
        self, worker_id: str, roles: Sequence[str], host: str, pid: int, concurrency: int
    ) -> list[dict[str, Any]]:
        """Enter the worker in the registry for its roles, with the tasks it runs at once (its
        slots, which capacity counts in); a row per role, in the order given, with the role's
        settings (max_retries, stale_threshold, run_timeout, requires_store).
        InvalidInput for an unknown role."""
        return self._rows(
            REGISTER_WORKER,
            {"worker_id": worker_id, "roles": list(roles), "host": host, "pid": pid, "concurrency": concurrency},
        )

    def metrics(self) -> list[dict[str, Any]]:
        """taskpool_metrics(): a row per sample (metric, kind, help, labels, value)."""
        return self._rows("SELECT metric, kind, help, labels, value FROM taskpool_metrics()")

    def heartbeat_worker(self, worker_id: str) -> bool:
        return self._one(HEARTBEAT_WORKER, {"worker_id": worker_id})["known"]

    def deregister_worker(self, worker_id: str) -> bool:
        return self._one(DEREGISTER_WORKER, {"worker_id": worker_id})["known"]

    # Worker side

    def claim_and_start_tasks(self, role: str, worker_id: str, max_tasks: int) -> list[Task]:
        rows = self._rows(CLAIM_AND_START_TASKS, {"role": role, "worker_id": worker_id, "max_tasks": max_tasks})
        return [Task.from_row(row) for row in rows]

    def complete_tasks(self, worker_id: str, completions: list[dict[str, Any]]) -> dict[int, str]:
        """Records several completions ({task_id, attempt, claim_token, result, follow_ups}) at
        once: each task's answer, completed, lost or not_found."""
        rows = self._rows(
            COMPLETE_TASKS, {"worker_id": worker_id, "completions": Jsonb(completions, dumps=dump_json)}
        )
        return {row["task_id"]: row["status"] for row in rows}

    def mark_worker_waiting(self, worker_id: str, role: str) -> bool:
        """Ask to be woken for the role's next ready task. True when the worker was not marked
        for it yet: it must claim once more before sleeping."""
        return self._one(MARK_WORKER_WAITING, {"worker_id": worker_id, "role": role})["marked"]

    def heartbeat_task(self, task: Task) -> str:
        """continue, cancel_requested, lost or not_found."""
        return self._one(HEARTBEAT_TASK, self._owner(task))["answer"]

    def heartbeat_tasks(self, worker_id: str, tasks: Sequence[Task]) -> dict[int, str]:
        """Heartbeat several tasks of the worker in one call: each task's answer by id, as
        heartbeat_task's (continue, cancel_requested, lost or not_found), or busy (another
        transaction is changing the task right now: it is beaten at the next interval, and the
        answer then says what became of it); at most 1000 tasks."""
        if not tasks:
            return {}
        rows = self._rows(
            HEARTBEAT_TASKS,
            {
                "worker_id": worker_id,
                "task_ids": [task.id for task in tasks],
                "attempts": [task.attempt for task in tasks],
                "claim_tokens": [task.claim_token for task in tasks],
            },
        )
        return {row["task_id"]: row["answer"] for row in rows}

    def complete_task(
        self, task: Task, result: Any = None, follow_ups: list[dict[str, Any]] | None = None
    ) -> None:
        self._owned(
            COMPLETE_TASK,
            task,
            result=None if result is None else Jsonb(result, dumps=dump_json),
            follow_ups=None if follow_ups is None else Jsonb(follow_ups, dumps=dump_json),
        )

    def fail_task(
        self,
        task: Task,
        error_message: str,
        *,
        retryable: bool = True,
        details: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> str:
        """Records a failed attempt, with its details (a traceback) and its data (a JSON object:
        a command's exit code and output tails) if any; returns the task's new status."""
        return self._owned(
            FAIL_TASK,
            task,
            error_message=storable_text(error_message),
            retryable=retryable,
            error_details=None if details is None else storable_text(details),
            error_data=None if data is None else Jsonb(data, dumps=dump_json),
        )

    def snooze_task(self, task: Task, seconds: float) -> None:
        self._owned(SNOOZE_TASK, task, seconds=seconds)

    def release_task(self, task: Task) -> None:
        self._owned(RELEASE_TASK, task)

    @staticmethod
    def _owner(task: Task) -> dict[str, Any]:
        return {
            "task_id": task.id,
            "worker_id": task.worker_id,
            "attempt": task.attempt,
            "claim_token": task.claim_token,
        }

    def _owned(self, query: str, task: Task, **params: Any) -> str:
        """Run a fenced call; TaskLost when the worker no longer holds the claim."""
        try:
            row = self._one(query, {**self._owner(task), **params})
        except Refused as refused:
            raise TaskLost(str(refused)) from refused
        return row["status"]

    # Operator side

    def enqueue_tasks(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._rows(ENQUEUE_TASKS, {"tasks": Jsonb(specs, dumps=dump_json)})

    def list_tasks(
        self,
        *,
        role: str | None = None,
        status: str | None = None,
        store: int | None = None,
        error: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """A page of tasks, newest first; `error`: only those whose error message contains it
        (case-insensitive)."""
        return self._rows(
            LIST_TASKS,
            {"role": role, "status": status, "store": store, "error": error, "limit": limit, "offset": offset},
        )

    def get_task(self, task_id: int) -> dict[str, Any] | None:
        return self._one(GET_TASK, {"task_id": task_id})

    def task_chain(self, task_id: int) -> list[dict[str, Any]]:
        """task_chain: the task's ancestors, the task (depth 0) and its follow-ups."""
        return self._rows(TASK_CHAIN, {"task_id": task_id})

    def task_attempts(self, task_id: int) -> list[dict[str, Any]]:
        return self._rows(TASK_ATTEMPTS, {"task_id": task_id})

    def counts(self) -> list[dict[str, Any]]:
        return self._rows(COUNTS)

    def recover_stale_tasks(self, threshold_minutes: int | None = None) -> int:
        return self._one(RECOVER_STALE, {"threshold_minutes": threshold_minutes})["recovered"]

    def recover_stale_tasks_of_role(self, role: str) -> int | None:
        """Recover the role's stale tasks, unless a recovery of the role ran less than half its
        stale_threshold ago (then None): what a worker does where no tick runs."""
        return self._one(RECOVER_STALE_OF_ROLE, {"role": role})["recovered"]

    def cancel_task(self, task_id: int) -> dict[str, Any]:
        return self._one(CANCEL_TASK, {"task_id": task_id})

    def tasks_matching(
        self, action: str, filters: dict[str, Any], sample: int = 10
    ) -> tuple[int, list[dict[str, Any]]]:
        """How many tasks `action` (retry or cancel) would take with these filters, and the first few."""
        params = {**filters, "statuses": BULK_ACTION_STATUSES[action], "limit": sample}
        return self._one(TASKS_MATCHING_COUNT, params)["tasks"], self._rows(TASKS_MATCHING_SAMPLE, params)

    def bulk_task_action(self, action: str, filters: dict[str, Any], batch_size: int) -> Iterator[int]:
        """retry_tasks or cancel_tasks, one committed batch at a time: yields each batch's count."""
        while True:
            done = self._one(BULK_TASK_ACTION[action], {**filters, "batch_size": batch_size})["tasks"]
            yield done
            if done < batch_size:
                return

    def retry_task(self, task_id: int) -> dict[str, Any]:
        return self._one(RETRY_TASK, {"task_id": task_id})

    def mark_task_completed(self, task_id: int, result: Any = None) -> dict[str, Any]:
        """An operator's completion, without a worker: `result` is any JSON value, or None."""
        return self._one(MARK_TASK_COMPLETED, {"task_id": task_id, "result": None if result is None else Jsonb(result, dumps=dump_json)})

    def delete_task(self, task_id: int) -> dict[str, Any]:
        """Deletes the task with its history; returns its row as it was."""
        return self._one(DELETE_TASK, {"task_id": task_id})

    def count_tasks(
        self,
        *,
        role: str | None = None,
        status: str | None = None,
        store: int | None = None,
        error: str | None = None,
    ) -> int:
        """How many tasks list_tasks pages through with these filters."""
        return self._one(
            COUNT_TASKS, {"role": role, "status": status, "store": store, "error": error}
        )["tasks"]

    def prune_tasks_in_batches(
        self, older_than: str, batch_size: int, max_tasks: int | None = None
    ) -> int:
        """How many tasks it pruned, a transaction a batch (the connection is autocommit, as the
        procedure's commits need); no call deadline: it runs as long as it has to."""
        return self._one(
            PRUNE_TASKS_IN_BATCHES,
            {"older_than": older_than, "batch_size": batch_size, "max_tasks": max_tasks},
            bounded=False,
        )["pruned"]

    def count_prunable_tasks(self, older_than: str) -> int:
        return self._one(COUNT_PRUNABLE_TASKS, {"older_than": older_than}, bounded=False)["tasks"]

    def apply_retention_in_batches(
        self, max_batches: int | None = None, max_seconds: float | None = None, pause_ratio: float = 3
    ) -> dict[str, dict[str, Any]]:
        """Every enabled retention policy applied, a transaction a round (the connection is
        autocommit, as the procedure's commits need): {policy: {"pruned": N, "error": ...}}; no
        call deadline: it runs as long as it has to."""
        return self._one(
            APPLY_RETENTION_IN_BATCHES,
            {"max_batches": max_batches, "max_seconds": max_seconds, "pause_ratio": pause_ratio},
            bounded=False,
        )["pruned"]

    def count_retention(self) -> list[dict[str, Any]]:
        """What each policy would delete now (count_retention()), deleting nothing."""
        return self._rows(COUNT_RETENTION, bounded=False)

    def retention_policies(self) -> list[dict[str, Any]]:
        return self._rows(RETENTION_POLICIES)

    def set_retention_policy(
        self,
        name: str,
        *,
        keep: str | None = None,
        enabled: bool | None = None,
        batch_size: int | None = None,
        statuses: list[str] | None = None,
    ) -> dict[str, Any]:
        """The policy's row as changed; InvalidInput naming an unknown policy or a bad value."""
        return self._one(
            SET_RETENTION_POLICY,
            {"name": name, "keep": keep, "enabled": enabled, "batch_size": batch_size, "statuses": statuses},
        )

    def roles(self) -> list[str]:
        """The known role names, in order."""
        return [row["role"] for row in self._rows(ROLES)]

    def role_rows(self) -> list[dict[str, Any]]:
        """Every role's row of task_roles (its settings and pause), by name."""
        return self._rows(ROLE_ROWS)

    def create_role(self, role: str, **fields: Any) -> dict[str, Any]:
        """create_role(role, ...) with the ROLE_FIELDS given (None: the column's default)."""
        return self._one(*_call_with_fields("create_role", {"role": role}, fields, ROLE_FIELDS))

    def update_role(self, role: str, **fields: Any) -> dict[str, Any]:
        """update_role(role, ...): the ROLE_FIELDS given change, None keeps a value."""
        return self._one(*_call_with_fields("update_role", {"role": role}, fields, ROLE_FIELDS))

    def diff_role(self, role: str, **fields: Any) -> list[dict[str, Any]]:
        """diff_role(role, ...): a row (field, in_database, declared) per ROLE_FIELD given that
        differs from the database's; InvalidInput for an unknown role."""
        return self._rows(*_call_with_fields("diff_role", {"role": role}, fields, ROLE_FIELDS))

    def remove_role(self, role: str, force: bool = False) -> dict[str, Any]:
        """remove_role(role, force): the removed role's row; Refused while it has live tasks or
        workers, unless `force`."""
        return self._one(REMOVE_ROLE, {"role": role, "force": force})

    def parse_interval(self, text: str) -> timedelta:
        """`text` as PostgreSQL reads an interval ('5 min', '1 hour 30 minutes', '00:05:00');
        InvalidInput when it cannot."""
        return self._one(PARSE_INTERVAL, {"text": text})["value"]

    def workers(self) -> list[dict[str, Any]]:
        return self._rows(WORKERS)

    # Schedules, planning, capacity and health

    def tick_schedules(self) -> dict[str, Any]:
        """{"recovered": n, "schedules": [{"schedule", "tasks", "error"}, ...]}: what the tick did."""
        return self._one(TICK_SCHEDULES)["report"]

    def schedules(self) -> list[dict[str, Any]]:
        return self._rows(SCHEDULES)

    def create_schedule(self, name: str, role: str, **fields: Any) -> dict[str, Any]:
        """create_schedule(name, role, ...) with the SCHEDULE_FIELDS given (None: its default)."""
        return self._one(*_call_with_fields("create_schedule", {"name": name, "role": role}, fields, SCHEDULE_FIELDS))

    def update_schedule(self, name: str, **fields: Any) -> dict[str, Any]:
        """update_schedule(name, ...): the SCHEDULE_FIELDS given change, None keeps a value."""
        return self._one(*_call_with_fields("update_schedule", {"name": name}, fields, SCHEDULE_FIELDS))

    def delete_schedule(self, name: str) -> dict[str, Any]:
        return self._one(DELETE_SCHEDULE, {"name": name})

    def trigger_schedule(self, name: str) -> dict[str, Any]:
        return self._one(TRIGGER_SCHEDULE, {"name": name})

    def worker_capacity_rows(self, role: str | None = None) -> list[dict[str, Any]]:
        """v_worker_capacity: every role's row, or only `role`'s."""
        if role is None:
            return self._rows(WORKER_CAPACITY_ROWS)
        return self._rows(WORKER_CAPACITY_ROW, {"role": role})

    def task_counts(self) -> list[dict[str, Any]]:
        return self._rows(TASK_COUNTS)

    def active_workers(self) -> list[dict[str, Any]]:
        return self._rows(ACTIVE_WORKERS)

    def stuck_tasks(self) -> list[dict[str, Any]]:
        return self._rows(STUCK_TASKS)

    def xmin_horizon(self) -> list[dict[str, Any]]:
        """v_xmin_horizon: the sessions and prepared transactions holding back vacuum, oldest first."""
        return self._rows(XMIN_HORIZON)

    def unserved_roles(self) -> list[dict[str, Any]]:
        """unserved_roles(): the roles whose tasks are ready for over 5 minutes with no live worker."""
        return self._rows("SELECT * FROM unserved_roles()")

    def worker_capacity(self, role: str) -> dict[str, Any]:
        """worker_capacity(role): the autoscaler's document; InvalidInput for an unknown role."""
        return self._one(WORKER_CAPACITY, {"role": role})["capacity"]

    def task_throughput(self, hours: int) -> list[dict[str, Any]]:
        """task_throughput(hours): per hour and role, completions and failed attempts."""
        return self._rows(TASK_THROUGHPUT, {"hours": hours})

    def platforms(self) -> list[dict[str, Any]]:
        """v_platforms: each platform's rate limit and circuit, by name."""
        return self._rows(PLATFORMS)

    def platform_events(self, limit: int) -> list[dict[str, Any]]:
        """The circuit breakers' last `limit` openings and closings, newest first."""
        return self._rows(PLATFORM_EVENTS, {"limit": limit})

    def health_checks(
        self, max_tick_age: str | None = None, max_snapshot_age: str | None = None
    ) -> list[dict[str, Any]]:
        """taskpool_health(): {"check_name", "status", "detail", "action"} per check, in order.

        The ages are PostgreSQL intervals; None takes the function's default."""
        return self._rows(
            HEALTH_CHECKS, {"max_tick_age": max_tick_age, "max_snapshot_age": max_snapshot_age}
        )

    def pause_role(self, role: str, reason: str | None = None) -> dict[str, Any]:
        """pause_role(role, reason): the role's row (role, paused_at, paused_by, pause_reason);
        a paused role keeps its first pause. InvalidInput for an unknown role."""
        return self._one(PAUSE_ROLE, {"role": role, "reason": reason})

    def resume_role(self, role: str) -> dict[str, Any]:
        """resume_role(role): the role's row, its pause cleared. InvalidInput for an unknown role."""
        return self._one(RESUME_ROLE, {"role": role})

    def disable_platform(self, platform: str, reason: str | None = None) -> dict[str, Any]:
        """disable_platform(platform, reason): the platform's governance row (platform, enabled,
        disabled_at, disabled_by, disable_reason). InvalidInput for a platform nothing names."""
        return self._one(DISABLE_PLATFORM, {"platform": platform, "reason": reason})

    def enable_platform(self, platform: str) -> dict[str, Any]:
        """enable_platform(platform): the platform's governance row, enabled."""
        return self._one(ENABLE_PLATFORM, {"platform": platform})

    # Stores and platform governance, and transactions: what handlers build on

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the calls made inside the block in one transaction: all of them or none; on the
        Database's own connection, the block and its commit within the call deadline."""
        conn = self.connect()
        with self._translated(), bounded(self._deadline), conn.transaction():
            yield

    def check_store(self, store_id: int) -> None:
        """NotFound unless the store exists (a row of dispensaries, the stores tasks name)."""
        if not self._one(STORE_EXISTS, {"store_id": store_id})["found"]:
            raise NotFound(f"dispensary {store_id} does not exist")

    def acquire_platform_request(self, platform: str) -> float:
        """Seconds to wait before asking again (0: send the request now); Refused while the
        platform's circuit is open."""
        return self._one(ACQUIRE_PLATFORM_REQUEST, {"platform": platform})["wait_seconds"]

    def record_platform_result(
        self, platform: str, succeeded: bool, error_message: str | None = None
    ) -> str:
        """Report a platform request's outcome to the circuit breaker; 'closed' or 'open'."""
        return self._one(
            RECORD_PLATFORM_RESULT,
            {"platform": platform, "succeeded": succeeded, "error_message": error_message},
        )["circuit"]


DatabaseT = TypeVar("DatabaseT", bound=Database)


def pooled_connection_options(pooled: bool) -> dict[str, Any]:
    """psycopg.connect's options for a connection through a transaction pooler (none otherwise):
    never prepare a statement (prepare_threshold=None)."""
    return {"prepare_threshold": None} if pooled else {}


def listen_query(channel: str) -> sql.Composed:
    """LISTEN on `channel` (an identifier, never a string literal)."""
    return sql.SQL("LISTEN {}").format(sql.Identifier(channel))


def _call_with_fields(
    function: str, keys: dict[str, str], fields: dict[str, Any], types: dict[str, str]
) -> tuple[sql.Composed, dict[str, Any]]:
    """A call of `function` with the keys (text), then each field given (not None) by name, cast
    to its SQL type in `types`."""
    given = {key: value for key, value in fields.items() if value is not None}
    unknown = set(given) - set(types)
    if unknown:
        raise TypeError(f"{function} takes no {', '.join(sorted(unknown))}")
    arguments = [sql.SQL("{}::text").format(sql.Placeholder(key)) for key in keys] + [
        sql.SQL("{} => {}::{}").format(
            sql.Identifier(key), sql.Placeholder(key), sql.SQL(types[key])
        )
        for key in given
    ]
    query = sql.SQL("SELECT * FROM {}({})").format(
        sql.Identifier(function), sql.SQL(", ").join(arguments)
    )
    params = {
        **keys,
        **{key: Jsonb(value) if types[key] == "jsonb" else value for key, value in given.items()},
    }
    return query, params
