"""The worker tests' side of the test kit (testkit/): worker processes, their logs, waiting with
deadlines, the test roles and tables, and the helpers the worker tests share.

A worker is started as operators start it, `python -m pyworker` with its settings in environment
variables, its stderr written to a log file under the test's tmp_path (Workers, a testkit.fleet
Fleet). The `workers` fixture (core_fixtures.py) kills (SIGKILL, by PID) every worker it started that
is still alive at teardown, with the commands it runs, and prints their logs, which pytest shows when
the test failed. The kit's failures are pytest's here (`failure`), without a traceback.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pytest
from click.testing import CliRunner, Result
from psycopg import sql
from pyworker.testing.database import insert_role
from testkit.fleet import Fleet, Process, pyworker_argv, worker_env
from testkit.fleet import kill_if_running, process_gone  # noqa: F401 (the tests import them here)
from testkit.waiting import wait_until

TESTS_DIR = Path(__file__).resolve().parent
COMMANDS = TESTS_DIR / "worker_commands.py"


# The tables the handlers of worker_handlers.py write to; the `pool` fixture creates them.
TABLES = """
CREATE TABLE test_executions (
    task_id      bigint      NOT NULL,
    attempt      integer     NOT NULL,
    worker_id    text        NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    ended_at     timestamptz,
    abort_reason text,
    PRIMARY KEY (task_id, attempt)
);
CREATE TABLE test_completions (
    task_id      bigint      NOT NULL,
    attempt      integer     NOT NULL,
    worker_id    text        NOT NULL,
    completed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT test_completions_once_per_task UNIQUE (task_id)
);
"""

# Test roles: short thresholds so that recovery, backoff and timeouts fit in a test. Retries wait
# exactly backoff_base (no jitter), which the tests count on.
NO_JITTER = {"backoff_jitter": "none"}
ROLES = {
    "test_work": {"stale_threshold": "2 seconds", "backoff_base": "1 second", "max_retries": 3, **NO_JITTER},
    "test_outcome": {"backoff_base": "20 seconds", "max_retries": 3, **NO_JITTER},
    "test_command": {"run_timeout": "2 seconds", "max_retries": 0},
    "test_protocol": {"run_timeout": "20 seconds", "backoff_base": "20 seconds", "max_retries": 3, **NO_JITTER},
    "test_logs": {"backoff_base": "20 seconds", "max_retries": 3, **NO_JITTER},
    "test_chain": {"max_retries": 0},
    # Served by the same handler as test_work, for workers of two roles.
    "test_other": {"stale_threshold": "2 seconds", "backoff_base": "1 second", "max_retries": 3, **NO_JITTER},
    "test_traced": {"max_retries": 0},
}


def failure(message: str) -> BaseException:
    """pytest's failure without a traceback: the kit's `error` in the tests."""
    return pytest.fail.Exception(message, pytrace=False)


def fail(message: str) -> NoReturn:
    raise failure(message)


# Call `check` until it returns something truthy, and return that; fail after `timeout` s
# (`also` adds diagnostics to the failure, e.g. a worker's log).
wait_for = partial(wait_until, error=failure)


def fetch_one(conn: psycopg.Connection, query: str, params: Any = None) -> Any:
    """The first row of `query`, or None."""
    return conn.execute(query, params).fetchone()


def task_row(conn: psycopg.Connection, task_id: int) -> dict[str, Any]:
    cursor = conn.execute("SELECT * FROM worker_tasks WHERE id = %s", (task_id,))
    names = [column.name for column in cursor.description]
    return dict(zip(names, cursor.fetchone(), strict=True))


def wait_for_status(
    conn: psycopg.Connection,
    task_id: int,
    statuses: str | tuple[str, ...],
    timeout: float,
    *,
    also: Callable[[], str] | None = None,
) -> dict[str, Any]:
    """The task's row once its status is one of `statuses`."""
    wanted = (statuses,) if isinstance(statuses, str) else statuses

    def reached() -> dict[str, Any] | None:
        row = task_row(conn, task_id)
        return row if row["status"] in wanted else None

    return wait_for(reached, timeout, f"task {task_id} to be {' or '.join(wanted)}", also=also)


def wait_for_execution(
    conn: psycopg.Connection,
    task_id: int,
    attempt: int,
    timeout: float,
    *,
    also: Callable[[], str] | None = None,
) -> tuple[Any, ...]:
    """The test_executions row of that attempt, once its handler has started."""
    return wait_for(
        lambda: fetch_one(
            conn,
            "SELECT worker_id, started_at, ended_at, abort_reason FROM test_executions"
            " WHERE task_id = %s AND attempt = %s",
            (task_id, attempt),
        ),
        timeout,
        f"the handler of task {task_id} attempt {attempt} to start",
        also=also,
    )


def completions(conn: psycopg.Connection, task_id: int) -> list[tuple[int, str]]:
    """(attempt, worker_id) of each completion the handler recorded for the task."""
    return conn.execute(
        "SELECT attempt, worker_id FROM test_completions WHERE task_id = %s ORDER BY attempt",
        (task_id,),
    ).fetchall()


def executions(conn: psycopg.Connection, task_id: int) -> list[tuple[int, str]]:
    """(attempt, worker_id) of each time a handler ran the task."""
    return conn.execute(
        "SELECT attempt, worker_id FROM test_executions WHERE task_id = %s ORDER BY attempt",
        (task_id,),
    ).fetchall()


def attempt_history(conn: psycopg.Connection, task_id: int) -> list[tuple[int, str, str]]:
    """(attempt, worker_id, outcome) of each attempt that ended without completing the task."""
    return conn.execute(
        "SELECT attempt, worker_id, outcome FROM worker_task_attempts"
        " WHERE task_id = %s ORDER BY attempt",
        (task_id,),
    ).fetchall()


# Per test database: the stale recoveries that recover_stale has reported already.
_reported_recoveries: dict[str, int] = {}


def recover_stale(conn: psycopg.Connection, timeout: float = 10.0) -> int:
    """Call recover_stale_tasks(), as the tick does, until the silent worker's tasks are
    recovered (the role's threshold is 2 s); how many were since the last call. A live worker of
    the role may recover them first (recover_stale_tasks_of_role, from its heartbeat thread):
    task_metric_totals counts the recoveries of both."""
    database = conn.info.dbname
    reported = _reported_recoveries.get(database, 0)

    def recovered_since() -> int:
        conn.execute("SELECT recover_stale_tasks()")
        total = fetch_one(
            conn, "SELECT coalesce(sum(total), 0)::integer FROM task_metric_totals WHERE counter = 'stale_recovered'"
        )[0]
        return total - reported

    recovered = wait_for(recovered_since, timeout, "the silent worker's tasks to be recovered", interval=0.2)
    _reported_recoveries[database] = reported + recovered
    return recovered


def report_schema_version(conn: psycopg.Connection, version: str) -> None:
    """Make taskpool_schema_version() of the test's database answer `version`."""
    conn.execute(
        sql.SQL(
            "CREATE OR REPLACE FUNCTION taskpool_schema_version() RETURNS text LANGUAGE sql"
            " AS $$ SELECT {}::text $$"
        ).format(sql.Literal(version))
    )


def enqueue(conn: psycopg.Connection, role: str, payload: dict[str, Any] | None = None) -> int:
    return conn.execute(
        "SELECT id FROM enqueue_task(%s::text, %s::jsonb)", (role, json.dumps(payload or {}))
    ).fetchone()[0]


@dataclass
class WorkerProcess(Process):
    """One `python -m pyworker` process and its log (stderr; stdout has a file of its own)."""

    role: str = ""

    @property
    def worker_id(self) -> str:
        return self.name

    @property
    def process(self) -> subprocess.Popen | None:
        return self.popen


class Workers(Fleet):
    """Starts worker processes for one test; `kill_all` ends those still alive."""

    def __init__(self, db_url: str, log_dir: Path) -> None:
        super().__init__(log_dir, error=failure, cwd=log_dir)
        self.db_url = db_url

    @property
    def started(self) -> list[WorkerProcess]:
        return list(self.processes.values())

    def env(
        self,
        role: str,
        worker_id: str,
        *,
        poll_ms: int = 200,
        heartbeat_ms: int = 200,
        grace: float = 5.0,
        command: str | None = None,
        log_format: str = "text",
        log_level: str | None = None,
        handlers: str | None = "worker_handlers",
        database_url: str | None = None,
        prefetch: int = 1,
        concurrency: int = 1,
        extra_env: dict[str, str] | None = None,
    ) -> dict[str, str]:
        env = worker_env(
            database_url or self.db_url,
            pythonpath=[TESTS_DIR],
            TASKPOOL_ROLE=role,
            TASKPOOL_WORKER_ID=worker_id,
            TASKPOOL_POLL_INTERVAL_MS=poll_ms,
            TASKPOOL_HEARTBEAT_INTERVAL_MS=heartbeat_ms,
            TASKPOOL_LOG_FORMAT=log_format,
            TASKPOOL_SHUTDOWN_GRACE_SECONDS=grace,
            TASKPOOL_PREFETCH=prefetch,
            TASKPOOL_CONCURRENCY=concurrency,
            TASKPOOL_LOG_LEVEL=log_level,
            TASKPOOL_HANDLERS=handlers,
            TASKPOOL_COMMAND=command,
        )
        env.update(extra_env or {})
        return env

    def start(
        self,
        role: str,
        worker_id: str,
        *,
        ready: bool = True,
        args: tuple[str, ...] = (),
        program: tuple[str, ...] = tuple(pyworker_argv()),
        cwd: Path | None = None,
        **settings: Any,
    ) -> WorkerProcess:
        """Start a worker, `program` (by default `python -m pyworker`) with `args` on its command
        line, in `cwd` (by default the log directory); with `ready`, wait until it has logged
        that it is starting."""
        worker = self.add(
            worker_id, [*program, *args], self.env(role, worker_id, **settings),
            separate_stdout=True, cwd=cwd or self.log_dir, kind=WorkerProcess, role=role,
        )
        worker.start()
        if ready:
            worker.wait_for_log(f"Starting worker {worker_id} for role: {role}")
        return worker

    def run_to_exit(
        self, role: str, worker_id: str, timeout: float = 15.0, **settings: Any
    ) -> tuple[int, str]:
        """Start a worker that is expected to exit by itself: its exit code and stderr."""
        worker = self.start(role, worker_id, ready=False, **settings)
        code = worker.wait(timeout)
        return code, worker.log()


def create_test_pool(conn: psycopg.Connection) -> None:
    """Create the handlers' tables and insert the test roles into the database of `conn`."""
    conn.execute(TABLES)
    for role, settings in ROLES.items():
        insert_role(conn, role, **settings)


def command_line(*args: str) -> str:
    """A TASKPOOL_COMMAND running tests/worker_commands.py with `args`."""
    return shlex.join([sys.executable, str(COMMANDS), *args])


def register(conn: psycopg.Connection, worker_id: str, role: str = "store_discovery") -> str:
    """Register the worker; its wake channel."""
    conn.execute("SELECT register_worker(%s, %s, 'test-host', 1)", (worker_id, role))
    return conn.execute("SELECT worker_wake_channel(%s)", (worker_id,)).fetchone()[0]


def listen(db_url: str, channel: str) -> psycopg.Connection:
    listener = psycopg.connect(db_url, autocommit=True)
    listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    return listener


def received(listener: psycopg.Connection, timeout: float, expect: int | None = None) -> list[str]:
    """Payloads within `timeout` seconds (sooner once `expect` have come)."""
    return [n.payload for n in listener.notifies(timeout=timeout, stop_after=expect)]


# The operator CLI, run in-process with click's CliRunner.
Run = Callable[..., Result]


def cli_runner_for(url: str) -> Run:
    """Run `pyworker --database-url URL ARGS...` in this process; `input` feeds its stdin."""
    from pyworker.admin import cli

    def invoke(*args: str, input: str | bytes | None = None) -> Result:
        return CliRunner().invoke(cli.main, ["--database-url", url, *args], input=input)

    return invoke


def run_json(run: Run, *args: str) -> Any:
    """The JSON document a CLI command prints with --json; the command must succeed."""
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def make_stores(conn: psycopg.Connection, count: int, *, active: bool = True) -> list[int]:
    """`count` stores (dispensaries rows) named Store 0.., active or not; their ids."""
    return [
        conn.execute(
            "INSERT INTO dispensaries (name, active) VALUES (%s, %s) RETURNING id",
            (f"Store {n}", active),
        ).fetchone()[0]
        for n in range(count)
    ]
