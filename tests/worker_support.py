"""Plumbing for the worker tests: worker processes, their logs, and waiting with deadlines.

A worker is started as operators start it, `python -m pyworker` with its settings in environment
variables, its stderr written to a log file under the test's tmp_path. The `workers` fixture
(core_fixtures.py) kills (SIGKILL, by PID) every worker it started that is still alive at teardown,
with the commands it runs, and prints their logs, which pytest shows when the test failed.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from click.testing import CliRunner, Result
from psycopg import sql

TESTS_DIR = Path(__file__).resolve().parent
COMMANDS = TESTS_DIR / "worker_commands.py"

T = TypeVar("T")

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

# Test roles: short thresholds so that recovery, backoff and timeouts fit in a test.
ROLES = {
    "test_work": {"stale_threshold": "2 seconds", "backoff_base": "1 second", "max_retries": 3},
    "test_outcome": {"backoff_base": "20 seconds", "max_retries": 3},
    "test_command": {"run_timeout": "2 seconds", "max_retries": 0},
    "test_protocol": {"run_timeout": "20 seconds", "backoff_base": "20 seconds", "max_retries": 3},
    "test_logs": {"backoff_base": "20 seconds", "max_retries": 3},
    "test_chain": {"max_retries": 0},
    # Served by the same handler as test_work, for workers of two roles.
    "test_other": {"stale_threshold": "2 seconds", "backoff_base": "1 second", "max_retries": 3},
    "test_traced": {"max_retries": 0},
}


def wait_for(
    check: Callable[[], T],
    timeout: float,
    what: str,
    *,
    interval: float = 0.05,
    also: Callable[[], str] | None = None,
) -> T:
    """Call `check` until it returns something truthy, and return that; fail after `timeout` s.

    `also` adds diagnostics to the failure (e.g. a worker's log).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = f"\n{also()}" if also is not None else ""
            pytest.fail(f"timed out after {timeout} s waiting for {what}{extra}", pytrace=False)
        time.sleep(interval)


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


def enqueue(conn: psycopg.Connection, role: str, payload: dict[str, Any] | None = None) -> int:
    return conn.execute(
        "SELECT id FROM enqueue_task(%s::text, %s::jsonb)", (role, json.dumps(payload or {}))
    ).fetchone()[0]


def process_gone(pid: int) -> bool:
    """True when no process `pid` runs any more.

    A zombie counts as gone: it has exited, only nobody reaped it. Here the init process does
    not reap orphans, so a killed command's orphaned child stays a zombie for good.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    # The state follows the command name, which is in parentheses and may contain spaces.
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@dataclass
class WorkerProcess:
    """One `python -m pyworker` process and its log."""

    worker_id: str
    role: str
    process: subprocess.Popen
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def describe(self, lines: int = 40) -> str:
        """The worker's state and the last `lines` lines of its log."""
        code = self.process.poll()
        state = "running" if code is None else f"exited with {code}"
        log = self.log().splitlines()
        cut = (
            f" (last {lines} of {len(log)} lines; all in {self.log_path})"
            if len(log) > lines
            else ""
        )
        tail = "\n".join(log[-lines:])
        return f"--- worker {self.worker_id} (pid {self.pid}, {state}) stderr{cut}:\n{tail}"

    def wait_for_log(self, text: str, timeout: float = 10.0) -> str:
        """The log once it contains `text`; fails at once if the worker exits first."""

        def found() -> str | None:
            log = self.log()
            if text in log:
                return log
            if self.process.poll() is not None:
                pytest.fail(
                    f"worker {self.worker_id} exited before logging {text!r}\n{self.describe()}",
                    pytrace=False,
                )
            return None

        return wait_for(
            found, timeout, f"{text!r} in the log of {self.worker_id}", also=self.describe
        )

    def send(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout: float) -> int:
        """The exit code; fails if the worker is still running after `timeout` seconds."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"worker {self.worker_id} still running after {timeout} s\n{self.describe()}",
                pytrace=False,
            )


class Workers:
    """Starts worker processes for one test; `kill_all` ends those still alive."""

    def __init__(self, db_url: str, log_dir: Path) -> None:
        self.db_url = db_url
        self.log_dir = log_dir
        self.started: list[WorkerProcess] = []

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
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(
                ("WORKER_", "PYWORKER_", "POLL_", "HEARTBEAT_", "LOG_", "SHUTDOWN_")
            )
        }
        env.update(
            DATABASE_URL=database_url or self.db_url,
            WORKER_ROLE=role,
            WORKER_ID=worker_id,
            POLL_INTERVAL_MS=str(poll_ms),
            HEARTBEAT_INTERVAL_MS=str(heartbeat_ms),
            LOG_FORMAT=log_format,
            SHUTDOWN_GRACE_SECONDS=str(grace),
            WORKER_PREFETCH=str(prefetch),
            WORKER_CONCURRENCY=str(concurrency),
            PYTHONPATH=os.pathsep.join(
                filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")])
            ),
            PYTHONUNBUFFERED="1",
        )
        if log_level is not None:
            env["LOG_LEVEL"] = log_level
        if handlers is not None:
            env["PYWORKER_HANDLERS"] = handlers
        if command is not None:
            env["PYWORKER_COMMAND"] = command
        env.update(extra_env or {})
        return env

    def start(
        self,
        role: str,
        worker_id: str,
        *,
        ready: bool = True,
        args: tuple[str, ...] = (),
        program: tuple[str, ...] = (sys.executable, "-m", "pyworker"),
        cwd: Path | None = None,
        **settings: Any,
    ) -> WorkerProcess:
        """Start a worker, `program` (by default `python -m pyworker`) with `args` on its command
        line, in `cwd` (by default the log directory); with `ready`, wait until it has logged
        that it is starting."""
        log_path = self.log_dir / f"{worker_id}.stderr.log"
        with (
            open(log_path, "wb") as log,
            open(self.log_dir / f"{worker_id}.stdout.log", "wb") as out,
        ):
            process = subprocess.Popen(
                [*program, *args],
                env=self.env(role, worker_id, **settings),
                cwd=cwd or self.log_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=log,
                # Its own session: a Ctrl-C on pytest's terminal does not reach it; teardown does.
                start_new_session=True,
            )
        worker = WorkerProcess(worker_id, role, process, log_path)
        self.started.append(worker)
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

    def kill_all(self) -> None:
        """SIGKILL each worker still running, and the commands it runs, by PID."""
        for worker in self.started:
            if worker.process.poll() is None:
                # Its command handlers run in their own sessions: collect them before the
                # worker dies and they are orphaned. SIGKILL ends a stopped process too.
                children = descendants(worker.pid)
                worker.process.kill()
                for pid in children:
                    kill_if_running(pid)
            worker.process.wait(timeout=10)

    def describe(self) -> str:
        return "\n".join(worker.describe() for worker in self.started)


def create_test_pool(conn: psycopg.Connection) -> None:
    """Create the handlers' tables and insert the test roles into the database of `conn`."""
    conn.execute(TABLES)
    for role, settings in ROLES.items():
        columns = ["role", *settings]
        conn.execute(
            sql.SQL("INSERT INTO task_roles ({}) VALUES ({})").format(
                sql.SQL(", ").join(map(sql.Identifier, columns)),
                sql.SQL(", ").join([sql.Placeholder()] * len(columns)),
            ),
            [role, *settings.values()],
        )


def command_line(*args: str) -> str:
    """A PYWORKER_COMMAND running tests/worker_commands.py with `args`."""
    return shlex.join([sys.executable, str(COMMANDS), *args])


def descendants(pid: int) -> list[int]:
    """The PIDs of the processes below `pid`, children first."""
    found: list[int] = []
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return found
    for thread in threads:
        try:
            children = [int(child) for child in (thread / "children").read_text().split()]
        except FileNotFoundError:
            continue
        for child in children:
            found += [child, *descendants(child)]
    return found


def kill_if_running(pid: int) -> None:
    """SIGKILL `pid` unless it is gone (cleanup of a command's processes after a failed test)."""
    if not process_gone(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


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
    from pyworker import cli

    def invoke(*args: str, input: str | bytes | None = None) -> Result:
        return CliRunner().invoke(cli.main, ["--database-url", url, *args], input=input)

    return invoke


def run_json(run: Run, *args: str) -> Any:
    """The JSON document a CLI command prints with --json; the command must succeed."""
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
