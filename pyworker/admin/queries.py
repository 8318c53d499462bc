"""The operator's SQL: one taskpool function call per method, for the CLI, the dashboard and the
scheduler, on the same connection and with the same errors as the worker's (`pyworker.db`).

A worker never loads this module: `AdminDatabase` adds the operator's calls (tasks listed,
cancelled and retried, retention, roles, schedules, capacity and health, pauses) to the
`Database` of pyworker.db, which holds the worker's and a handler's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from pyworker.admin.declarations import ROLE_FIELDS, diff_role
from pyworker.db import Database, dump_json
from pyworker.errors import NotFound

# Stores (the mutual-exclusion keys tasks name)
STORE_EXISTS = "SELECT EXISTS (SELECT FROM dispensaries WHERE id = %(store_id)s::integer) AS found"
# Tasks
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
    " FROM worker_tasks_with_history" + _TASK_FILTERS
    + " ORDER BY id DESC LIMIT %(limit)s::integer OFFSET %(offset)s::integer"
)
COUNT_TASKS = "SELECT count(*) AS tasks FROM worker_tasks_with_history" + _TASK_FILTERS
# Without a store or error filter the count is v_task_counts', which reads the history's per-day
# counts rather than its rows.
COUNT_TASKS_BY_ROLE_AND_STATUS = (
    "SELECT coalesce(sum(tasks), 0)::bigint AS tasks FROM v_task_counts"
    " WHERE (%(role)s::text IS NULL OR role = %(role)s::text)"
    "   AND (%(status)s::text IS NULL OR status = %(status)s::text)"
)
# Tasks live in worker_tasks or, once finished a while, in its history: the view reads both.
GET_TASK = "SELECT * FROM worker_tasks_with_history WHERE id = %(task_id)s::bigint"
TASK_CHAIN = (
    "SELECT id, parent_id, depth, role, status, dispensary_id, created_at, completed_at, error_message"
    " FROM task_chain(%(task_id)s::bigint)"
)
TASK_ATTEMPTS = (
    "SELECT attempt, worker_id, claimed_at, started_at, last_heartbeat_at, ended_at, outcome,"
    " error_message, error_details, error_data FROM worker_task_attempts WHERE task_id = %(task_id)s::bigint"
    " UNION ALL SELECT attempt, worker_id, claimed_at, started_at, last_heartbeat_at, ended_at, outcome,"
    " error_message, error_details, error_data FROM worker_task_attempt_history WHERE task_id = %(task_id)s::bigint"
    " ORDER BY attempt"
)
COUNTS = "SELECT role, status, tasks FROM v_task_counts ORDER BY role, status"
TASK_SPEC_RUNS = (
    "SELECT r.id, r.status, r.created_at, r.completed_at, r.in_history, r.error_message"
    " FROM worker_tasks_with_history t, task_spec_runs(t.role, t.dispensary_id, t.payload, %(limit)s::integer) r"
    " WHERE t.id = %(task_id)s::bigint"
)
RECOVER_STALE = "SELECT recover_stale_tasks(%(threshold_minutes)s::integer) AS recovered"
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

PLATFORMS = "SELECT * FROM v_platforms ORDER BY platform"
CONCURRENCY_LIMITS = (
    "SELECT kind, key, max_running, running, limit_source, updated_at FROM v_concurrency_limits"
    " ORDER BY kind, key = '*' DESC, key"
)
SET_CONCURRENCY_LIMIT = (
    "SELECT kind, key, max_running, updated_at"
    " FROM set_concurrency_limit(%(kind)s::text, %(key)s::text, %(max_running)s::integer)"
)
CLEAR_CONCURRENCY_LIMIT = "SELECT clear_concurrency_limit(%(kind)s::text, %(key)s::text) AS cleared"
PLATFORM_EVENTS = (
    "SELECT id, platform, event, at, consecutive_failures, error_message FROM platform_events"
    " ORDER BY at DESC, id DESC LIMIT %(limit)s::integer"
)


class AdminDatabase(Database):
    """A Database with the operator's calls."""

    def where(self) -> str:
        """Which database this is, as `dbname on host:port` (never the password a URL may hold)."""
        info = self.connect().info
        return f"{info.dbname} on {info.host}:{info.port}"

    def check_store(self, store_id: int) -> None:
        """NotFound unless the store exists (a row of dispensaries, the stores tasks name)."""
        if not self._one(STORE_EXISTS, {"store_id": store_id})["found"]:
            raise NotFound(f"dispensary {store_id} does not exist")

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

    def task_spec_runs(self, task_id: int, limit: int = 20) -> list[dict[str, Any]]:
        """task_spec_runs: the runs of the task's spec (role, store, payload), newest first, itself included."""
        return self._rows(TASK_SPEC_RUNS, {"task_id": task_id, "limit": limit})

    def recover_stale_tasks(self, threshold_minutes: int | None = None) -> int:
        return self._one(RECOVER_STALE, {"threshold_minutes": threshold_minutes})["recovered"]

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
        return self._one(
            MARK_TASK_COMPLETED,
            {"task_id": task_id, "result": None if result is None else Jsonb(result, dumps=dump_json)},
        )

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
        query = COUNT_TASKS if store is not None or error is not None else COUNT_TASKS_BY_ROLE_AND_STATUS
        return self._one(query, {"role": role, "status": status, "store": store, "error": error})["tasks"]

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
        return self._one(*call_with_fields("create_role", {"role": role}, fields, ROLE_FIELDS))

    def update_role(self, role: str, **fields: Any) -> dict[str, Any]:
        """update_role(role, ...): the ROLE_FIELDS given change, None keeps a value."""
        return self._one(*call_with_fields("update_role", {"role": role}, fields, ROLE_FIELDS))

    def diff_role(self, role: str, **fields: Any) -> list[dict[str, Any]]:
        """diff_role(role, ...): a row (field, in_database, declared) per ROLE_FIELD given that
        differs from the database's; NotFound for an unknown role."""
        return diff_role(self, role, **fields)

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

    def tick_schedules(self) -> dict[str, Any]:
        """{"recovered": n, "schedules": [{"schedule", "tasks", "error"}, ...]}: what the tick did."""
        return self._one(TICK_SCHEDULES)["report"]

    def schedules(self) -> list[dict[str, Any]]:
        return self._rows(SCHEDULES)

    def create_schedule(self, name: str, role: str, **fields: Any) -> dict[str, Any]:
        """create_schedule(name, role, ...) with the SCHEDULE_FIELDS given (None: its default)."""
        return self._one(*call_with_fields("create_schedule", {"name": name, "role": role}, fields, SCHEDULE_FIELDS))

    def update_schedule(self, name: str, **fields: Any) -> dict[str, Any]:
        """update_schedule(name, ...): the SCHEDULE_FIELDS given change, None keeps a value."""
        return self._one(*call_with_fields("update_schedule", {"name": name}, fields, SCHEDULE_FIELDS))

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

    def concurrency_limits(self) -> list[dict[str, Any]]:
        """v_concurrency_limits: each limit (key '*': its kind's default) and each key running
        under a default, with how many of its tasks run now."""
        return self._rows(CONCURRENCY_LIMITS)

    def set_concurrency_limit(self, kind: str, key: str, max_running: int) -> dict[str, Any]:
        """set_concurrency_limit(kind, key, max_running): the limit's row. InvalidInput for an
        unknown kind, an empty key, a limit below 1 (the database's message says which)."""
        return self._one(SET_CONCURRENCY_LIMIT, {"kind": kind, "key": key, "max_running": max_running})

    def clear_concurrency_limit(self, kind: str, key: str) -> bool:
        """clear_concurrency_limit(kind, key): whether the limit was set."""
        return bool(self._one(CLEAR_CONCURRENCY_LIMIT, {"kind": kind, "key": key})["cleared"])


def call_with_fields(
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
