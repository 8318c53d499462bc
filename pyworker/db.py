"""The worker's SQL, and a handler's: one taskpool function call per method.

Values always travel as parameters with explicit casts; nothing is formatted into SQL text.
A `Database` owns one autocommit connection (every call is its own short transaction, so a
transaction-mode pooler works, given pooled=True) and is used by one thread. A lost connection, or
a call past its deadline (pyworker/deadlines.py), raises DatabaseUnavailable; the next call
connects again. A handler's Database (`task.database()`) is on
its attempt's own connection instead, borrowed from its worker's pool (pyworker/connections.py).
The operator's SQL is in pyworker.admin.queries (AdminDatabase, a Database with the operator's
calls), pg_cron's in pyworker.admin.cron, the crawler's in its own package (taskpool_crawler.db).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TypeVar

import psycopg
from psycopg import pq, sql
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb, set_json_loads

from pyworker.deadlines import (
    DEFAULT_CONNECT_TIMEOUT,
    CallDeadline,
    bounded,
    connection_options,
    default_call_timeout,
)
from pyworker.task import Task
from pyworker.errors import (
    DatabaseReadOnly,
    DatabaseUnavailable,
    Refused,
    SchemaMismatch,
    SchemaMissing,
    TaskLost,
    translate,
)

# The schema version (taskpool_schema_version()) this pyworker was written against.
REQUIRED_SCHEMA_VERSION = (0, 9, 0)


# Worker side
CLAIM_AND_START_TASKS = (
    "SELECT * FROM claim_and_start_tasks(%(role)s::text, %(worker_id)s::text, %(max_tasks)s::integer)"
)
MARK_WORKER_WAITING = "SELECT mark_worker_waiting(%(worker_id)s::text, %(role)s::text) AS marked"
WORKER_WAKE_CHANNEL = "SELECT worker_wake_channel(%(worker_id)s::text) AS channel"
COMPLETE_TASKS = (
    "SELECT task_id, status FROM complete_tasks(%(worker_id)s::text, %(task_ids)s::bigint[],"
    " %(attempts)s::integer[], %(claim_tokens)s::uuid[], %(results)s::jsonb[], %(follow_ups)s::jsonb[])"
)
# Every call on a claimed task names its claim: the task, the worker, the attempt and the claim_token.
_CLAIM = "%(task_id)s::bigint, %(worker_id)s::text, %(attempt)s::integer, %(claim_token)s::uuid"
HEARTBEAT_TASKS = (
    "SELECT task_id, answer"
    " FROM heartbeat_tasks(%(worker_id)s::text, %(task_ids)s::bigint[], %(attempts)s::integer[],"
    " %(claim_tokens)s::uuid[])"
)
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

RECOVER_STALE_OF_ROLE = "SELECT recover_stale_tasks_of_role(%(role)s::text) AS recovered"
# When a role's ready tasks next get a platform token (the worker claims again then)
PLATFORM_TOKEN_WAIT = "SELECT platform_token_wait(%(role)s::text) AS wait_seconds"


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
                raise DatabaseUnavailable(deadline.reason) from error
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

    # For packages built on taskpool (the crawler, pyworker.admin.cron): their own SQL on this
    # connection, with its errors translated as pyworker's are.

    def query(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of `query` (parameters as `%(name)s::type`), as dicts."""
        return self._rows(query, params)

    def query_one(self, query: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The first row of `query`, or None."""
        return self._one(query, params)

    # Start-up

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
        once, passed as arrays (one element per task): each task's answer, completed, lost or
        not_found."""

        def jsonb_or_null(value: Any) -> Jsonb | None:
            return None if value is None else Jsonb(value, dumps=dump_json)

        rows = self._rows(
            COMPLETE_TASKS,
            {
                "worker_id": worker_id,
                "task_ids": [entry["task_id"] for entry in completions],
                "attempts": [entry["attempt"] for entry in completions],
                "claim_tokens": [entry["claim_token"] for entry in completions],
                "results": [jsonb_or_null(entry.get("result")) for entry in completions],
                "follow_ups": [jsonb_or_null(entry.get("follow_ups")) for entry in completions],
            },
        )
        return {row["task_id"]: row["status"] for row in rows}

    def mark_worker_waiting(self, worker_id: str, role: str) -> bool:
        """Ask to be woken for the role's next ready task. True when the worker was not marked
        for it yet: it must claim once more before sleeping."""
        return self._one(MARK_WORKER_WAITING, {"worker_id": worker_id, "role": role})["marked"]

    def platform_token_wait(self, role: str) -> float | None:
        """Seconds until a platform whose ready tasks of the role wait for its rate limit has a
        token again (a claim then hands one out); None when no ready task waits so."""
        return self._one(PLATFORM_TOKEN_WAIT, {"role": role})["wait_seconds"]

    def heartbeat_tasks(self, worker_id: str, tasks: Sequence[Task]) -> dict[int, str]:
        """Heartbeat several tasks of the worker in one call: each task's answer by id, as
        the SQL function heartbeat_task's (continue, cancel_requested, lost or not_found), or busy (another
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

    # Roles: the worker recovers its roles' stale tasks

    def recover_stale_tasks_of_role(self, role: str) -> int | None:
        """Recover the role's stale tasks, unless a recovery of the role ran less than half its
        stale_threshold ago (then None): what a worker does where no tick runs."""
        return self._one(RECOVER_STALE_OF_ROLE, {"role": role})["recovered"]

    # Transactions: what handlers build on

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the calls made inside the block in one transaction: all of them or none; on the
        Database's own connection, the block and its commit within the call deadline."""
        conn = self.connect()
        with self._translated(), bounded(self._deadline), conn.transaction():
            yield


DatabaseT = TypeVar("DatabaseT", bound=Database)


def pooled_connection_options(pooled: bool) -> dict[str, Any]:
    """psycopg.connect's options for a connection through a transaction pooler (none otherwise):
    never prepare a statement (prepare_threshold=None)."""
    return {"prepare_threshold": None} if pooled else {}


def listen_query(channel: str) -> sql.Composed:
    """LISTEN on `channel` (an identifier, never a string literal)."""
    return sql.SQL("LISTEN {}").format(sql.Identifier(channel))
