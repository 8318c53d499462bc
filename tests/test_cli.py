"""The `pyworker` command line, run with click's CliRunner against a real deployed database.

Tasks are put in their states through the SQL functions (claim_task, complete_task, ...), never
by writing worker_tasks. Exit codes: 0 done, 1 refused, 2 bad usage or input (a task id that
names no task included).
"""

from __future__ import annotations

import dataclasses

import json
import os
import pty
import re
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import click
import pytest
from click.testing import CliRunner, Result

from core_fixtures import real_clock
from worker_support import Run, run_json

from pyworker.admin import cli, output
from pyworker.admin.cli import tasks as task_commands
from pyworker.admin.supervisor import worker_environment
from pyworker.environment import RENAMED
from pyworker.errors import ConfigurationError, SchemaMissing

@pytest.fixture(autouse=True)
def no_worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker settings from the caller's environment, under their names old or new, must not
    leak into these tests."""
    for name in (*RENAMED, *RENAMED.values()):
        monkeypatch.delenv(name, raising=False)


def enqueue(conn: psycopg.Connection, role: str = "store_discovery", **fields: Any) -> int:
    spec = json.dumps([{"role": role, **fields}])
    return conn.execute("SELECT id FROM enqueue_tasks(%s::jsonb)", (spec,)).fetchone()[0]


def claim(
    conn: psycopg.Connection, role: str = "store_discovery", worker: str = "w1", attempt: int = 1
) -> int:
    """claim_task as `worker`; the claimed task's id (its attempt must be `attempt`)."""
    row = conn.execute("SELECT id, attempt FROM claim_task(%s, %s)", (role, worker)).fetchone()
    assert row is not None and row[1] == attempt
    return row[0]


def make_store(conn: psycopg.Connection, name: str = "Green Leaf") -> int:
    return conn.execute(
        "INSERT INTO dispensaries (name) VALUES (%s) RETURNING id", (name,)
    ).fetchone()[0]


def task_count(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM worker_tasks").fetchone()[0]


def status_of(conn: psycopg.Connection, task_id: int) -> str:
    return conn.execute("SELECT status FROM worker_tasks WHERE id = %s", (task_id,)).fetchone()[0]


def completed_task(conn: psycopg.Connection) -> int:
    task_id = enqueue(conn)
    assert claim(conn) == task_id
    conn.execute("SELECT complete_task(id, 'w1', 1, claim_token, '{\"stores\": 3}') FROM worker_tasks WHERE id = %s", (task_id,))
    return task_id


def failed_task(conn: psycopg.Connection) -> int:
    task_id = enqueue(conn)
    assert claim(conn) == task_id
    conn.execute(
        "SELECT fail_task(id, 'w1', 1, claim_token, 'HTTP 404', retryable := false) FROM worker_tasks WHERE id = %s",
        (task_id,),
    )
    return task_id


# The group


def test_no_arguments_prints_help_and_exits_0() -> None:
    result = CliRunner().invoke(cli.main, [])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    for command in ("enqueue", "list", "show", "counts", "recover-stale", "cancel", "retry",
                    "prune", "workers", "version"):
        assert command in result.stdout


def test_the_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "pyworker"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "taskpool worker and operator commands" in result.stdout


def test_version() -> None:
    result = CliRunner().invoke(cli.main, ["version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("pyworker ")


def test_every_command_has_help_text() -> None:
    ctx = click.Context(cli.main)
    for name in cli.main.list_commands(ctx):
        command = cli.main.get_command(ctx, name)
        assert command is not None and command.help, f"{name} has no help text"


def test_an_unreachable_database_exits_1_with_the_reason() -> None:
    result = CliRunner().invoke(
        cli.main, ["--database-url", "postgresql://postgres@127.0.0.1:1/nowhere", "counts"]
    )
    assert result.exit_code == 1
    assert "database connection failed" in result.stderr
    assert "Traceback" not in result.output


def test_tracebacks_only_with_verbose(run: Run) -> None:
    quiet = run("cancel", "424242")
    assert quiet.exit_code == 2
    assert "Traceback" not in quiet.output
    verbose = run("-v", "cancel", "424242")
    assert verbose.exit_code == 2
    assert "Traceback" in verbose.stderr
    assert "task 424242 does not exist" in verbose.stderr


# The global options, after the command's name too (issue 12, item 11)


def command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The name path of every command under `command`, groups included."""
    for name, subcommand in getattr(command, "commands", {}).items():
        yield (*path, name)
        yield from command_paths(subcommand, (*path, name))


def test_every_command_shows_the_global_options_in_its_help() -> None:
    # Every command loaded: the operator's (by noun, on first use) and the installed packages'
    # (the crawler's, in .venv).
    ctx = click.Context(cli.main)
    for name in cli.main.list_commands(ctx):
        cli.main.get_command(ctx, name)
    paths = list(command_paths(cli.main))
    assert ("schedules", "update") in paths
    for path in paths:
        result = CliRunner().invoke(cli.main, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        for option in ("--database-url URL", "-v, --verbose", "--wide"):
            assert option in result.stdout, f"{' '.join(path)} --help does not show {option}"


def test_global_options_are_taken_after_the_command(run: Run, db_url: str) -> None:
    nowhere = "postgresql://postgres@127.0.0.1:1/nowhere"
    after = CliRunner().invoke(cli.main, ["counts", "--database-url", db_url, "--json"],
                               env={"DATABASE_URL": nowhere})
    assert after.exit_code == 0, after.output
    assert json.loads(after.stdout) == []
    # After the name wins over before it.
    both = CliRunner().invoke(cli.main, ["--database-url", nowhere, "schedules", "list",
                                         "--database-url", db_url])
    assert both.exit_code == 0, both.output
    verbose = run("cancel", "424242", "-v")
    assert verbose.exit_code == 2
    assert "Traceback" in verbose.stderr
    assert "Traceback" in run("schedules", "trigger", "nope", "--verbose").stderr


# The worker, started with --role (pyworker.worker replaced by a recorder)


@pytest.fixture
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """pyworker.worker and pyworker.admin.supervisor whose run functions record their arguments and return `code`."""
    calls = types.SimpleNamespace(code=0, error=None, run_worker=[], run_workers=[])
    module = types.ModuleType("pyworker.worker")

    def run_worker(config: Any, serve_probes: Any = None, batch_runtime: Any = None, **hooks: Any) -> int:
        calls.run_worker.append(config)
        if calls.error:
            raise calls.error
        return calls.code

    def run_workers(config: Any, processes: int, environment: dict[str, str]) -> int:
        calls.run_workers.append((config, processes))
        calls.environment = environment
        return calls.code

    module.run_worker = run_worker
    supervisor = types.ModuleType("pyworker.admin.supervisor")
    supervisor.run_workers = run_workers
    supervisor.worker_environment = worker_environment
    monkeypatch.setitem(sys.modules, "pyworker.worker", module)
    monkeypatch.setitem(sys.modules, "pyworker.admin.supervisor", supervisor)
    return calls


def test_role_runs_one_worker_with_the_options(fake_worker: types.SimpleNamespace) -> None:
    result = CliRunner().invoke(
        cli.main,
        ["--database-url", "postgresql://db.example/tp", "--role", "product_resync",
         "--worker-id", "w-7", "--poll-interval-ms", "250", "--heartbeat-interval-ms", "1500",
         "--handlers", "a.handlers", "--handlers", "b.handlers",
         "--command", "crawl --store '{dispensary_id}'", "--log-format", "json",
         "--shutdown-grace-seconds", "5"],
    )
    assert result.exit_code == 0, result.output
    (config,) = fake_worker.run_worker
    assert config.database_url == "postgresql://db.example/tp"
    assert config.role_names == ("product_resync",)
    assert config.worker_id == "w-7"
    assert config.poll_interval == 0.25
    assert config.heartbeat_interval == 1.5
    assert config.handler_modules == ("a.handlers", "b.handlers")
    assert config.command == ("crawl", "--store", "{dispensary_id}")
    assert config.log_format == "json"
    assert config.shutdown_grace == 5.0
    assert fake_worker.run_workers == []


def test_worker_options_come_from_the_environment(fake_worker: types.SimpleNamespace) -> None:
    env = {
        "DATABASE_URL": "postgresql://env.example/tp",
        "TASKPOOL_ROLE": "store_discovery",
        "TASKPOOL_POLL_INTERVAL_MS": "100",
        "TASKPOOL_HEARTBEAT_INTERVAL_MS": "2000",
        "TASKPOOL_HANDLERS": "one.mod two.mod",
        "TASKPOOL_LOG_FORMAT": "json",
        "TASKPOOL_SHUTDOWN_GRACE_SECONDS": "0",
    }
    result = CliRunner().invoke(cli.main, [], env=env)
    assert result.exit_code == 0, result.output
    (config,) = fake_worker.run_worker
    assert config.database_url == "postgresql://env.example/tp"
    assert config.role_names == ("store_discovery",)
    assert (config.poll_interval, config.heartbeat_interval) == (0.1, 2.0)
    assert config.handler_modules == ("one.mod", "two.mod")
    assert config.command == ()
    assert config.log_format == "json"
    assert config.shutdown_grace == 0.0
    # The default id is host-pid-random.
    host_pid = config.worker_id.rsplit("-", 1)[0]
    assert host_pid.endswith(f"-{os.getpid()}"), config.worker_id


def test_the_default_worker_settings(fake_worker: types.SimpleNamespace) -> None:
    result = CliRunner().invoke(cli.main, ["--role", "store_discovery"])
    assert result.exit_code == 0, result.output
    (config,) = fake_worker.run_worker
    assert (config.poll_interval, config.heartbeat_interval) == (5.0, 30.0)
    assert (config.log_format, config.shutdown_grace) == ("text", 30.0)


def test_processes_runs_several_workers_and_returns_their_code(
    fake_worker: types.SimpleNamespace,
) -> None:
    fake_worker.code = 3
    result = CliRunner().invoke(
        cli.main, ["--role", "store_discovery", "--processes", "4", "--concurrency", "8"]
    )
    assert result.exit_code == 3
    ((config, processes),) = fake_worker.run_workers
    assert (config.role_names, processes, config.concurrency) == (("store_discovery",), 4, 8)
    assert fake_worker.run_worker == []


def test_each_worker_process_reads_the_same_settings_from_its_environment(
    fake_worker: types.SimpleNamespace,
) -> None:
    options = [
        "--role", "store_discovery=2", "--role", "product_resync", "--processes", "3", "--concurrency", "5",
        "--poll-interval-ms", "250", "--heartbeat-interval-ms", "1500", "--handlers", "a.b", "--handlers", "c",
        "--command", "crawl --store '{dispensary_id}'", "--log-format", "json", "--log-level", "warning",
        "--shutdown-grace-seconds", "2.5", "--prefetch", "9", "--worker-id", "fleet",
    ]
    assert CliRunner().invoke(cli.main, options).exit_code == 0
    ((parent, _processes),) = fake_worker.run_workers
    child_environment = {**fake_worker.environment, "TASKPOOL_WORKER_ID": "fleet-2"}
    result = CliRunner().invoke(cli.main, [], env=child_environment)
    assert result.exit_code == 0, result.output
    (child,) = fake_worker.run_worker
    assert child == dataclasses.replace(parent, worker_id="fleet-2")


def test_concurrency_runs_one_worker_process_with_that_many_slots(
    fake_worker: types.SimpleNamespace,
) -> None:
    result = CliRunner().invoke(cli.main, ["--role", "store_discovery", "--concurrency", "50"])
    assert result.exit_code == 0, result.output
    (config,) = fake_worker.run_worker
    assert (config.concurrency, config.prefetch) == (50, 1)
    assert fake_worker.run_workers == []
    result = CliRunner().invoke(cli.main, ["--role", "store_discovery"], env={"TASKPOOL_CONCURRENCY": "7"})
    assert result.exit_code == 0, result.output
    assert fake_worker.run_worker[-1].concurrency == 7


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigurationError("cannot import handler module 'nope'"), 2),
        (SchemaMissing(), 1),
    ],
)
def test_worker_start_up_errors_map_to_exit_codes(
    fake_worker: types.SimpleNamespace, error: Exception, code: int
) -> None:
    fake_worker.error = error
    result = CliRunner().invoke(cli.main, ["--role", "store_discovery"])
    assert result.exit_code == code
    assert str(error) in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--poll-interval-ms", "0"],
        ["--heartbeat-interval-ms", "-5"],
        ["--concurrency", "0"],
        ["--log-format", "xml"],
        ["--log-level", "loud"],
        ["--shutdown-grace-seconds", "-1"],
        ["--command", "crawl 'unclosed"],
    ],
)
def test_bad_worker_options_exit_2(fake_worker: types.SimpleNamespace, args: list[str]) -> None:
    result = CliRunner().invoke(cli.main, ["--role", "store_discovery", *args])
    assert result.exit_code == 2, result.output
    assert fake_worker.run_worker == [] and fake_worker.run_workers == []


# enqueue


def test_enqueue_one_task_prints_it(run: Run, conn: psycopg.Connection) -> None:
    store = make_store(conn)
    result = run("enqueue", "product_resync", "--store", str(store), "--payload",
                 '{"reason": "manual"}', "--priority", "10")
    assert result.exit_code == 0, result.output
    header, line = result.stdout.splitlines()
    assert header.split() == ["id", "role", "store", "status", "scheduled_for"]
    task_id = int(line.split()[0])
    assert line.split()[1:4] == ["product_resync", str(store), "pending"]
    row = conn.execute(
        "SELECT role, dispensary_id, payload, priority FROM worker_tasks WHERE id = %s", (task_id,)
    ).fetchone()
    assert row == ("product_resync", store, {"reason": "manual"}, 10)


def test_enqueue_json_gives_the_task(run: Run, conn: psycopg.Connection) -> None:
    (task,) = run_json(
        run, "enqueue", "analytics_refresh", "--payload", '{"day": "2026-11-21"}',
        "--scheduled-for", "2030-01-02T03:04:05Z", "--dedupe-key", "analytics:2026-11-21",
        "--max-retries", "7", "--platform", "dutchie",
    )
    assert task["role"] == "analytics_refresh"
    assert task["status"] == "pending"
    assert task["payload"] == {"day": "2026-11-21"}
    assert task["dedupe_key"] == "analytics:2026-11-21"
    assert task["max_retries"] == 7
    assert task["platform"] == "dutchie"
    assert datetime.fromisoformat(task["scheduled_for"]) == datetime.fromisoformat(
        "2030-01-02T03:04:05+00:00"
    )
    assert task_count(conn) == 1
    # The same dedupe key while the task is active: the same task again, nothing new.
    (again,) = run_json(run, "enqueue", "analytics_refresh", "--dedupe-key", "analytics:2026-11-21")
    assert again["id"] == task["id"]
    assert task_count(conn) == 1


def test_enqueue_gives_a_task_its_own_retry_backoff(run: Run, conn: psycopg.Connection) -> None:
    (task,) = run_json(run, "enqueue", "analytics_refresh", "--backoff-base", "2.5", "--backoff-cap", "90")
    (plain,) = run_json(run, "enqueue", "analytics_refresh")
    rows = conn.execute(
        "SELECT extract(epoch FROM backoff_base)::float, extract(epoch FROM backoff_cap)::float"
        " FROM worker_tasks WHERE id = ANY (%s) ORDER BY id",
        ([task["id"], plain["id"]],),
    ).fetchall()
    # The second takes its role's (NULL in the row).
    assert rows == [(2.5, 90.0), (None, None)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backoff-base", "0"], "backoff_base must be a number of seconds, more than 0 and at most 31557600"),
        (["--backoff-cap", "40000000"], "backoff_cap must be a number of seconds, more than 0 and at most 31557600"),
        (["--backoff-base", "60", "--backoff-cap", "30"], "backoff_cap 30.0 is below backoff_base 60.0"),
        (["--backoff-base", "soon"], "'soon' is not a valid float"),
    ],
)
def test_enqueue_a_bad_backoff_exits_2_naming_it(
    run: Run, conn: psycopg.Connection, args: list[str], message: str
) -> None:
    result = run("enqueue", "analytics_refresh", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_enqueue_dedupe_window_holds_the_key_for_its_period_finished_or_not(
    run: Run, conn: psycopg.Connection
) -> None:
    # Noon (UTC) of today on taskpool's clock: the day's period has half a day left.
    conn.execute("SELECT set_taskpool_clock_offset(date_trunc('day', now(), 'UTC') + interval '12 hours' - now())")
    (task,) = run_json(run, "enqueue", "analytics_refresh", "--dedupe-key", "daily", "--dedupe-window", "1 day")
    assert task["dedupe_window"] == 86400
    conn.execute("SELECT cancel_task(%s)", (task["id"],))
    (again,) = run_json(run, "enqueue", "analytics_refresh", "--dedupe-key", "daily", "--dedupe-window", "1 day")
    assert (again["id"], again["status"]) == (task["id"], "cancelled")
    # Without the window, the finished task does not hold the key.
    (plain,) = run_json(run, "enqueue", "analytics_refresh", "--dedupe-key", "daily")
    assert plain["id"] != task["id"]
    assert task_count(conn) == 2


def test_enqueue_dedupe_by_content_keys_the_task_by_its_content(run: Run, conn: psycopg.Connection) -> None:
    (task,) = run_json(run, "enqueue", "analytics_refresh", "--payload", '{"b": 1, "a": 2}', "--dedupe-by-content")
    assert conn.execute(
        "SELECT task_spec_hash('analytics_refresh', NULL, '{\"a\": 2, \"b\": 1}')"
    ).fetchone() == (task["dedupe_key"],)
    (again,) = run_json(run, "enqueue", "analytics_refresh", "--payload", '{"a":2,"b":1}', "--dedupe-by-content")
    assert again["id"] == task["id"]
    lines = '{"role": "analytics_refresh", "payload": {"a": 2, "b": 1}, "dedupe_by_content": true}\n'
    assert run("enqueue", "--file", "-", input=lines).stdout.startswith("enqueued 1 task from stdin")
    assert task_count(conn) == 1


def test_enqueue_refuses_bad_dedupe_options(run: Run, conn: psycopg.Connection) -> None:
    for args, message in [
        (["--dedupe-window", "1 hour"], "dedupe_window needs a dedupe_key or dedupe_by_content"),
        (["--dedupe-key", "k", "--dedupe-by-content"], "give a dedupe_key or dedupe_by_content, not both"),
        (["--dedupe-key", "k", "--dedupe-window", "soon"],
         'dedupe_window must be an interval or a number of seconds, not "soon"'),
        (["--dedupe-key", "k", "--dedupe-window", "400 days"], 'dedupe_window "400 days" is out of range'),
    ]:
        result = run("enqueue", "analytics_refresh", *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
    assert task_count(conn) == 0


def test_enqueue_keeps_every_digit_of_a_payload_number(run: Run, conn: psycopg.Connection) -> None:
    # Found by the fault suite (scenario 11): numbers went through a double and were rounded.
    text = '{"exact": 1.000000000000000000001, "big": 1e400, "int": 123456789012345678901234567890}'
    (task,) = run_json(run, "enqueue", "analytics_refresh", "--payload", text)
    same = conn.execute(
        "SELECT payload = %s::jsonb, payload->>'exact' FROM worker_tasks WHERE id = %s", (text, task["id"])
    ).fetchone()
    assert same == (True, "1.000000000000000000001")


def test_enqueue_a_file_of_json_lines(run: Run, conn: psycopg.Connection, tmp_path: Path) -> None:
    store = make_store(conn)
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        '{"role": "store_discovery"}\n'
        "\n"
        f'{{"role": "product_resync", "dispensary_id": {store}, "priority": 5}}\n'
        "   \n"
        '{"role": "analytics_refresh", "payload": {"day": "2026-11-21"}}\n',
        encoding="utf-8",
    )
    result = run("enqueue", "--file", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"enqueued 3 tasks from {path}: 1 analytics_refresh, 1 product_resync, 1 store_discovery\n"
    )
    roles = conn.execute("SELECT role FROM worker_tasks ORDER BY id").fetchall()
    assert roles == [("store_discovery",), ("product_resync",), ("analytics_refresh",)]


def test_enqueue_a_large_file_prints_a_summary_not_a_line_a_task(
    run: Run, conn: psycopg.Connection
) -> None:
    lines = '{"role": "store_discovery"}\n' * 2400 + '{"role": "analytics_refresh"}\n' * 100
    result = run("enqueue", "--file", "-", input=lines)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "enqueued 2500 tasks from stdin: 100 analytics_refresh, 2400 store_discovery\n"
    )
    # No progress bar when stderr is not a terminal.
    assert result.stderr == ""
    assert task_count(conn) == 2500
    same_key = '{"role": "store_discovery", "dedupe_key": "k"}\n'
    deduped = run("enqueue", "--file", "-", input=same_key * 3)
    assert deduped.stdout == (
        "enqueued 1 task from stdin: 1 store_discovery (3 lines: the lines of one dedupe key share"
        " its task)\n"
    )


def read_terminal(master: int) -> str:
    """All a pseudo-terminal's other end was sent, once that end is closed."""
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the other end is closed and everything is read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return b"".join(chunks).decode()


def test_enqueue_a_large_file_shows_its_progress_on_a_terminal(
    db_url: str, conn: psycopg.Connection, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"role": "store_discovery"}\n' * 2500, encoding="utf-8")
    master, terminal = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pyworker", "--database-url", db_url, "enqueue", "--file",
             str(path)],
            stdout=subprocess.PIPE, stderr=terminal, text=True, timeout=120,
        )
    finally:
        os.close(terminal)
    progress = read_terminal(master)
    assert result.returncode == 0, progress
    assert result.stdout == f"enqueued 2500 tasks from {path}: 2500 store_discovery\n"
    assert "enqueueing" in progress and "2500/2500" in progress
    assert task_count(conn) == 2500


def test_enqueue_json_lines_from_stdin(run: Run, conn: psycopg.Connection) -> None:
    lines = "".join(json.dumps({"role": "store_discovery", "priority": p}) + "\n" for p in (1, 2))
    result = run("enqueue", "--file", "-", "--json", input=lines)
    assert result.exit_code == 0, result.output
    tasks = json.loads(result.stdout)
    assert [(t["role"], t["priority"]) for t in tasks] == [
        ("store_discovery", 1), ("store_discovery", 2)
    ]
    assert task_count(conn) == 2


def test_enqueue_an_unknown_role_exits_2_naming_the_known_roles(
    run: Run, conn: psycopg.Connection
) -> None:
    result = run("enqueue", "nope")
    assert result.exit_code == 2
    assert "unknown role 'nope'" in result.stderr
    assert "product_resync" in result.stderr and "store_discovery" in result.stderr
    assert "tasks[0]" not in result.stderr
    assert task_count(conn) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--payload", '{"reason": '], "not valid JSON"),
        (["--payload", "[1, 2]"], "payload must be a JSON object, not array"),
        (["--priority", "101"], "priority 101 is out of range"),
        (["--scheduled-for", "2026-13-45"], 'scheduled_for "2026-13-45" is not a timestamp'),
        (["--max-retries", "-1"], "max_retries -1 is out of range"),
    ],
)
def test_enqueue_bad_input_exits_2(
    run: Run, conn: psycopg.Connection, args: list[str], message: str
) -> None:
    result = run("enqueue", "store_discovery", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert task_count(conn) == 0


def test_enqueue_a_store_that_does_not_exist_exits_2(run: Run, conn: psycopg.Connection) -> None:
    result = run("enqueue", "product_resync", "--store", "999999")
    assert result.exit_code == 2
    assert "dispensary 999999 does not exist" in result.stderr


def test_a_bad_json_line_exits_2_with_its_number_and_enqueues_nothing(
    run: Run, conn: psycopg.Connection
) -> None:
    lines = '{"role": "store_discovery"}\n\n{"role": "store_discovery",\n{"role": "x"}\n'
    result = run("enqueue", "--file", "-", input=lines)
    assert result.exit_code == 2
    assert "line 3" in result.stderr
    assert task_count(conn) == 0


def test_a_refused_spec_names_its_line_and_enqueues_nothing(
    run: Run, conn: psycopg.Connection
) -> None:
    lines = '{"role": "store_discovery"}\n\n\n{"role": "nope"}\n'
    result = run("enqueue", "--file", "-", input=lines)
    assert result.exit_code == 2
    assert "line 4: unknown role 'nope'" in result.stderr
    assert "Known roles" in result.stderr
    assert task_count(conn) == 0


def test_a_refused_spec_in_a_later_batch_says_what_went_in(
    run: Run, conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_commands, "ENQUEUE_BATCH", 2)
    good, bad = '{"role": "store_discovery"}\n', '{"role": "store_discovery", "prio": 1}\n'
    lines = good * 3 + bad
    result = run("enqueue", "--file", "-", input=lines)
    assert result.exit_code == 2
    assert "line 4: unknown field 'prio'" in result.stderr
    assert "the 2 tasks before line 3 were enqueued" in result.stderr
    assert task_count(conn) == 2


def test_an_empty_file_enqueues_nothing(run: Run, conn: psycopg.Connection) -> None:
    assert run_json(run, "enqueue", "--file", "-") == []
    result = run("enqueue", "--file", "-", input="\n\n")
    assert result.exit_code == 0
    assert "no tasks enqueued" in result.stdout


@pytest.mark.parametrize(
    "args", [[], ["store_discovery", "--file", "-"], ["--file", "-", "--priority", "3"]]
)
def test_enqueue_needs_a_role_or_a_file_not_both(run: Run, args: list[str]) -> None:
    result = run("enqueue", *args, input="")
    assert result.exit_code == 2
    assert "Usage:" in result.stderr


# list


def test_list_shows_the_newest_first(run: Run, conn: psycopg.Connection) -> None:
    first, second = enqueue(conn), enqueue(conn, "analytics_refresh")
    result = run("list")
    assert result.exit_code == 0, result.output
    header, *lines, total = result.stdout.splitlines()
    assert header.split()[:4] == ["id", "role", "store", "status"]
    assert [int(line.split()[0]) for line in lines] == [second, first]
    assert total == "1-2 of 2 tasks (page 1 of 1)"


def test_list_says_how_many_tasks_there_are_and_which_it_shows(
    run: Run, conn: psycopg.Connection
) -> None:
    for _ in range(5):
        enqueue(conn)
    enqueue(conn, "analytics_refresh")
    first_page = run("list", "--limit", "2").stdout.splitlines()
    assert len(first_page) == 4
    assert first_page[-1] == "1-2 of 6 tasks (page 1 of 3; --page 2 for more)"
    assert run("list", "--limit", "2", "--page", "3").stdout.splitlines()[-1] == (
        "5-6 of 6 tasks (page 3 of 3)"
    )
    filtered = run("list", "--role", "store_discovery", "--limit", "4", "--page", "2")
    assert filtered.stdout.splitlines()[-1] == "5-5 of 5 matching tasks (page 2 of 2)"
    assert run("list", "--limit", "4", "--page", "9").stdout == (
        "no tasks on page 9: 6 tasks in all, 2 pages of 4\n"
    )


def test_list_json_with_filters(run: Run, conn: psycopg.Connection) -> None:
    store = make_store(conn)
    a = enqueue(conn)
    b = enqueue(conn, "product_resync", dispensary_id=store)
    c = enqueue(conn, "product_resync", dispensary_id=make_store(conn, "Other"))
    assert claim(conn, "product_resync") == b
    assert {t["id"] for t in run_json(run, "list")} == {a, b, c}
    assert [t["id"] for t in run_json(run, "list", "--role", "product_resync")] == [c, b]
    assert [t["id"] for t in run_json(run, "list", "--status", "claimed")] == [b]
    assert [t["id"] for t in run_json(run, "list", "--store", str(store))] == [b]
    assert run_json(run, "list", "--role", "product_resync", "--status", "pending")[0]["id"] == c
    (task,) = run_json(run, "list", "--status", "claimed")
    assert task["worker_id"] == "w1" and task["attempt"] == 1
    datetime.fromisoformat(task["scheduled_for"])


def test_list_filters_by_error_text_in_any_case(run: Run, conn: psycopg.Connection) -> None:
    failed = {}
    for message in ("HTTP 503 from the platform", "menu did not parse", "50% off: not a price"):
        task_id = enqueue(conn, max_retries=0)
        assert claim(conn) == task_id
        conn.execute("SELECT fail_task(id, 'w1', 1, claim_token, %s) FROM worker_tasks WHERE id = %s", (message, task_id))
        failed[message] = task_id
    enqueue(conn)
    assert [t["id"] for t in run_json(run, "list", "--error", "http 503")] == [failed["HTTP 503 from the platform"]]
    # The text is a substring, not a LIKE pattern: % matches itself alone.
    assert [t["id"] for t in run_json(run, "list", "--error", "50%")] == [failed["50% off: not a price"]]
    result = run("list", "--error", "PARSE")
    assert result.stdout.splitlines()[-1] == "1-1 of 1 matching task (page 1 of 1)"
    assert run_json(run, "list", "--error", "nowhere") == []


def test_list_pages(run: Run, conn: psycopg.Connection) -> None:
    ids = [enqueue(conn) for _ in range(5)]
    newest_first = ids[::-1]

    def page(number: int) -> list[int]:
        return [t["id"] for t in run_json(run, "list", "--limit", "2", "--page", str(number))]

    assert [t["id"] for t in run_json(run, "list", "--limit", "2")] == newest_first[:2]
    assert page(1) == newest_first[:2]
    assert page(2) == newest_first[2:4]
    assert page(3) == newest_first[4:]
    assert page(4) == []
    result = run("list", "--page", "9")
    assert result.exit_code == 0
    assert "no tasks on page 9" in result.stdout


@pytest.mark.parametrize(
    "args",
    [["--limit", "0"], ["--limit", "1001"], ["--page", "0"], ["--status", "done"],
     ["--store", "abc"]],
)
def test_list_bad_options_exit_2(run: Run, args: list[str]) -> None:
    result = run("list", *args)
    assert result.exit_code == 2, result.output


def test_list_an_unknown_role_exits_2(run: Run) -> None:
    result = run("list", "--role", "nope")
    assert result.exit_code == 2
    assert "unknown role 'nope'" in result.stderr
    assert "store_discovery" in result.stderr


def test_list_an_unknown_store_exits_2(run: Run, conn: psycopg.Connection) -> None:
    assert run("list", "--store", str(make_store(conn))).exit_code == 0
    result = run("list", "--store", "999999")
    assert result.exit_code == 2
    assert "dispensary 999999 does not exist" in result.stderr


# show


def test_show_prints_fields_and_attempt_history(run: Run, conn: psycopg.Connection) -> None:
    task_id = enqueue(conn, payload={"reason": "manual"})
    assert claim(conn) == task_id
    conn.execute("SELECT fail_task(id, 'w1', 1, claim_token, 'HTTP 503') FROM worker_tasks WHERE id = %s", (task_id,))
    result = run("show", str(task_id))
    assert result.exit_code == 0, result.output
    fields = dict(
        line.split(":", 1) for line in result.stdout.split("\n\n")[0].splitlines()
    )
    assert fields["id"].strip() == str(task_id)
    assert fields["status"].strip() == "pending"
    assert fields["payload"].strip() == '{"reason": "manual"}'
    assert fields["retry_count"].strip() == "1"
    history = result.stdout.split("attempt history:")[1].strip().splitlines()
    assert history[0].split()[:2] == ["attempt", "worker"]
    assert history[1].split()[:2] == ["1", "w1"]
    assert "retried" in history[1] and "HTTP 503" in history[1]


def test_show_json(run: Run, conn: psycopg.Connection) -> None:
    task_id = enqueue(conn)
    fresh = run_json(run, "show", str(task_id))
    assert fresh["task"]["id"] == task_id
    assert fresh["attempts"] == []
    assert claim(conn) == task_id
    conn.execute(
        "SELECT fail_task(id, 'w1', 1, claim_token, 'HTTP 503', retry_at := taskpool_now())"
        " FROM worker_tasks WHERE id = %s",
        (task_id,),
    )
    assert claim(conn, worker="w2", attempt=2) == task_id
    shown = run_json(run, "show", str(task_id))
    assert shown["task"]["status"] == "claimed"
    assert shown["task"]["worker_id"] == "w2"
    assert shown["task"]["attempt"] == 2
    (attempt,) = shown["attempts"]
    assert (attempt["attempt"], attempt["worker_id"], attempt["outcome"]) == (1, "w1", "retried")
    assert attempt["error_message"] == "HTTP 503"
    datetime.fromisoformat(attempt["ended_at"])


def test_show_prints_times_to_the_microsecond_with_their_zone(
    run: Run, conn: psycopg.Connection
) -> None:
    task_id = enqueue(conn, scheduled_for="2030-01-02T03:04:05.123456Z")
    stored = conn.execute(
        "SELECT scheduled_for, created_at FROM worker_tasks WHERE id = %s", (task_id,)
    ).fetchone()
    shown = run("show", str(task_id)).stdout.split("\n\n")[0].splitlines()
    fields = {key: value.strip() for key, value in (line.split(":", 1) for line in shown)}
    for name, value in zip(("scheduled_for", "created_at"), stored):
        assert fields[name] == value.isoformat(sep=" ", timespec="microseconds")
    assert re.search(r"\.123456[+-]\d\d:\d\d$", fields["scheduled_for"]), fields["scheduled_for"]


def test_show_without_history_says_so(run: Run, conn: psycopg.Connection) -> None:
    result = run("show", str(enqueue(conn)))
    assert result.exit_code == 0
    assert "attempt history: none" in result.stdout


def test_show_prints_the_chain(run: Run, conn: psycopg.Connection) -> None:
    root = enqueue(conn)
    assert claim(conn) == root
    conn.execute(
        "SELECT complete_task(id, 'w1', 1, claim_token, '{}', '[{\"role\": \"analytics_refresh\"}]')"
        " FROM worker_tasks WHERE id = %s",
        (root,),
    )
    child = conn.execute("SELECT id FROM worker_tasks WHERE parent_id = %s", (root,)).fetchone()[0]
    result = run("show", str(child))
    assert result.exit_code == 0, result.output
    chain = result.stdout.split("chain:")[1].split("\n\n")[0].strip("\n").splitlines()
    assert chain[0].split() == [str(root), "store_discovery", "completed"]
    assert chain[1].split() == ["*" + str(child), "analytics_refresh", "pending"] or chain[1].split() == [
        "*", str(child), "analytics_refresh", "pending"]
    shown = run_json(run, "show", str(root))
    assert [(m["id"], m["depth"]) for m in shown["chain"]] == [(root, 0), (child, 1)]
    assert "chain: none" in run("show", str(enqueue(conn))).stdout


# counts


def test_counts(run: Run, conn: psycopg.Connection) -> None:
    for _ in range(3):
        enqueue(conn)
    enqueue(conn, "analytics_refresh")
    claim(conn)
    assert run_json(run, "counts") == [
        {"role": "analytics_refresh", "status": "pending", "tasks": 1},
        {"role": "store_discovery", "status": "claimed", "tasks": 1},
        {"role": "store_discovery", "status": "pending", "tasks": 2},
    ]
    result = run("counts")
    assert result.exit_code == 0
    assert [line.split() for line in result.stdout.splitlines()] == [
        ["role", "status", "count"],
        ["analytics_refresh", "pending", "1"],
        ["store_discovery", "claimed", "1"],
        ["store_discovery", "pending", "2"],
    ]


def test_counts_of_an_empty_pool(run: Run) -> None:
    assert run_json(run, "counts") == []
    assert run("counts").stdout.strip() == "no tasks"


# recover-stale


def test_recover_stale_with_each_roles_threshold(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    in_the_past("2 hours")
    silent = enqueue(conn)
    assert claim(conn) == silent
    real_clock(conn)
    alive = enqueue(conn, "analytics_refresh")
    assert claim(conn, "analytics_refresh") == alive
    result = run("recover-stale")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "recovered 1 stale task"
    assert (status_of(conn, silent), status_of(conn, alive)) == ("pending", "claimed")


def test_recover_stale_json_with_a_threshold(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    in_the_past("20 minutes")
    task_id = enqueue(conn)
    assert claim(conn) == task_id
    real_clock(conn)
    assert run_json(run, "recover-stale", "--threshold-minutes", "30") == {"recovered": 0}
    assert run_json(run, "recover-stale", "--threshold-minutes", "15") == {"recovered": 1}
    assert status_of(conn, task_id) == "pending"
    assert run("recover-stale", "--threshold-minutes", "0").exit_code == 2


# cancel


def test_cancel_a_pending_task(run: Run, conn: psycopg.Connection) -> None:
    task_id = enqueue(conn)
    result = run("cancel", str(task_id))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"task {task_id} cancelled"
    assert status_of(conn, task_id) == "cancelled"
    assert run_json(run, "cancel", str(enqueue(conn)))["status"] == "cancelled"


def test_cancel_a_claimed_task_requests_it(run: Run, conn: psycopg.Connection) -> None:
    task_id = enqueue(conn)
    assert claim(conn) == task_id
    result = run("cancel", str(task_id))
    assert result.exit_code == 0, result.output
    assert "cancel requested" in result.stdout
    task = run_json(run, "cancel", str(task_id))
    assert task["status"] == "claimed"
    datetime.fromisoformat(task["cancel_requested_at"])
    answer = conn.execute(
        "SELECT heartbeat_task(id, 'w1', 1, claim_token) FROM worker_tasks WHERE id = %s", (task_id,)
    ).fetchone()[0]
    assert answer == "cancel_requested"


def test_cancel_a_completed_task_is_refused(run: Run, conn: psycopg.Connection) -> None:
    task_id = completed_task(conn)
    result = run("cancel", str(task_id))
    assert result.exit_code == 1
    assert f"task {task_id} is completed and cannot be cancelled" in result.stderr
    assert "connection" not in result.stderr
    assert status_of(conn, task_id) == "completed"


# retry


def test_retry_a_failed_task(run: Run, conn: psycopg.Connection) -> None:
    task_id = failed_task(conn)
    result = run("retry", str(task_id))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"task {task_id} is pending again")
    assert status_of(conn, task_id) == "pending"


def test_retry_json(run: Run, conn: psycopg.Connection) -> None:
    task_id = failed_task(conn)
    task = run_json(run, "retry", str(task_id))
    assert (task["id"], task["status"], task["retry_count"]) == (task_id, "pending", 0)


def test_retry_a_pending_task_is_refused(run: Run, conn: psycopg.Connection) -> None:
    task_id = enqueue(conn)
    result = run("retry", str(task_id))
    assert result.exit_code == 1
    assert f"task {task_id} is pending and cannot be retried" in result.stderr


# show, cancel and retry of what is not a task


@pytest.mark.parametrize("command", ["show", "cancel", "retry"])
def test_a_missing_task_exits_2_as_bad_input(run: Run, command: str) -> None:
    result = run(command, "424242")
    assert result.exit_code == 2
    assert "task 424242 does not exist" in result.stderr


@pytest.mark.parametrize("command", ["show", "cancel", "retry"])
def test_a_non_numeric_id_exits_2(run: Run, command: str) -> None:
    result = run(command, "forty-two")
    assert result.exit_code == 2
    assert "is not a valid integer" in result.stderr


# prune


def test_prune_deletes_old_finished_tasks(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    in_the_past("10 days")
    old = [completed_task(conn), failed_task(conn)]
    real_clock(conn)
    recent = completed_task(conn)
    pending = enqueue(conn)
    result = run("prune", "--older-than", "7 days", "--max-tasks", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "pruned 1 task"
    assert run_json(run, "prune", "--older-than", "7 days") == {"pruned": 1}
    remaining = {row[0] for row in conn.execute("SELECT id FROM worker_tasks")}
    assert remaining == {recent, pending}
    assert not remaining & set(old)
    assert run_json(run, "prune", "--older-than", "7 days") == {"pruned": 0}


def test_prune_dry_run_counts_and_deletes_nothing(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    in_the_past("10 days")
    old = [completed_task(conn) for _ in range(3)]
    real_clock(conn)
    completed_task(conn)
    result = run("prune", "--older-than", "7 days", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout == "would prune 3 tasks (dry run: nothing deleted)\n"
    assert run_json(run, "prune", "--older-than", "7 days", "--dry-run", "--max-tasks", "2") == {
        "would_prune": 2
    }
    assert task_count(conn) == 4
    assert run_json(run, "prune", "--older-than", "7 days") == {"pruned": 3}
    assert not {row[0] for row in conn.execute("SELECT id FROM worker_tasks")} & set(old)


def test_prune_deletes_in_batches_each_committed(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    in_the_past("10 days")
    for _ in range(5):
        completed_task(conn)
    real_clock(conn)
    assert run_json(run, "prune", "--older-than", "7 days", "--batch-size", "2",
                    "--max-tasks", "3") == {"pruned": 3}
    assert task_count(conn) == 2
    # More than one batch commits in between, which only a CALL outside a transaction may do.
    assert run("prune", "--older-than", "7 days", "--batch-size", "1").stdout == "pruned 2 tasks\n"
    assert task_count(conn) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "1 day", "--batch-size", "0"], "--batch-size"),
        (["--older-than", "a fortnight"], "invalid input syntax for type interval"),
        (["--older-than", "-1 day"], "older_than must be a non-negative interval"),
        (["--older-than", "-1 day", "--dry-run"], "older_than must be a non-negative interval"),
        (["--older-than", "1 day", "--max-tasks", "0"], "--max-tasks"),
        (["--batch-size", "5"], "--max-tasks and --batch-size go with --older-than"),
    ],
)
def test_prune_bad_input_exits_2(run: Run, args: list[str], message: str) -> None:
    result = run("prune", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr


# workers


def test_workers_lists_the_registry_with_current_tasks(run: Run, conn: psycopg.Connection) -> None:
    assert run("workers").stdout.strip() == "no workers registered"
    assert run_json(run, "workers") == []
    conn.execute("SELECT register_worker('w1', 'store_discovery', 'host-a', 4242)")
    conn.execute("SELECT register_worker('w2', 'analytics_refresh', 'host-b', 99)")
    task_id = enqueue(conn)
    assert claim(conn, worker="w1") == task_id
    result = run("workers")
    assert result.exit_code == 0, result.output
    header, *lines = result.stdout.splitlines()
    assert header.split() == ["worker", "role", "host", "pid", "started_at", "last_seen_at",
                              "seen_ago", "state", "tasks"]
    rows = {line.split()[0]: line.split() for line in lines}
    assert rows["w1"][:4] == ["w1", "store_discovery", "host-a", "4242"]
    assert rows["w1"][-2:] == ["live", str(task_id)]
    assert rows["w2"][-1] == "live"
    workers = {w["worker_id"]: w for w in run_json(run, "workers")}
    assert workers["w1"]["task_ids"] == [task_id]
    assert workers["w2"]["task_ids"] == []
    assert workers["w2"]["liveness"] == "live"
    assert (workers["w2"]["role"], workers["w2"]["host"], workers["w2"]["pid"]) == (
        "analytics_refresh", "host-b", 99
    )
    datetime.fromisoformat(workers["w2"]["last_seen_at"])


# the table formatter


def test_render_table_aligns_columns_and_right_aligns_numbers() -> None:
    text = output.render_table(
        [{"id": 7, "name": "a"}, {"id": 1234, "name": "longer name"}],
        [("id", "id"), ("name", "name"), ("both", lambda row: f"{row['id']}:{row['name']}")],
    )
    assert text.splitlines() == [
        "  id  name         both",
        "   7  a            7:a",
        "1234  longer name  1234:longer name",
    ]


def test_a_row_of_empty_values_keeps_its_line_and_an_empty_count_its_right_alignment() -> None:
    text = output.render_table(
        [{"name": "a", "count": 3}, {"name": None, "count": None}],
        [("name", "name"), ("count", "count")],
    )
    assert text.split("\n") == ["name  count", "a         3", ""]


def test_lay_out_table_fits_a_width_cutting_the_widest_text_first() -> None:
    rows = [{"id": 12345, "role": "product_resync", "error": "HTTP 503 from the platform, twice"}]
    columns = [("role", "role"), ("id", "id"), ("error", "error")]
    table = output.lay_out_table(rows, columns, max_width=40)
    assert table.lines == [
        "role               id  error",
        "product_resync  12345  HTTP 503 from th…",
    ]
    assert (table.shortened, table.left_out) == (["error"], [])
    assert all(len(line) <= 40 for line in table.lines)
    # No cell is cut shorter than NARROWEST_CELL (12): the last columns go instead. The first
    # column, which names the row, and numbers are never cut.
    narrow = output.lay_out_table(rows, columns, max_width=35)
    assert narrow.lines == ["role               id  error", "product_resync  12345  HTTP 503 fr…"]
    narrower = output.lay_out_table(rows, columns, max_width=26)
    assert narrower.lines == ["role               id", "product_resync  12345"]
    assert (narrower.shortened, narrower.left_out) == ([], ["error"])
    assert output.lay_out_table(rows, columns, max_width=10).lines == ["role", "product_resync"]
    assert output.lay_out_table(rows, columns).lines == output.render_table(rows, columns).splitlines()


def test_tables_fit_the_terminal_and_say_how_to_see_the_rest(
    run: Run, conn: psycopg.Connection, db_url: str
) -> None:
    error = "HTTP 503 Service Unavailable from https://menus.example/api/v2/stores/12345/menu"
    worker = "worker-host-a-pid-4242-5f3e9c"
    for _ in range(3):
        task_id = enqueue(conn)
        assert claim(conn, worker=worker) == task_id
        conn.execute(
            "SELECT fail_task(id, %s, 1, claim_token, %s, retryable := false) FROM worker_tasks WHERE id = %s",
            (worker, error, task_id),
        )

    def invoke(*args: str, columns: str | None = "80") -> Result:
        return CliRunner().invoke(
            cli.main, ["--database-url", db_url, *args], env={"COLUMNS": columns}
        )

    fitted = invoke("list")
    assert fitted.exit_code == 0, fitted.output
    lines = fitted.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split()[:4] == ["id", "role", "store", "status"]
    assert "fitted to 80 columns" in fitted.stderr
    assert "--wide prints the table whole" in fitted.stderr
    assert "left out: worker, error" in fitted.stderr
    wide = invoke("list", "--wide")
    assert wide.stderr == ""
    assert error in wide.stdout and max(len(line) for line in wide.stdout.splitlines()) > 80
    # A pipe (no terminal, no COLUMNS) gets the table whole but for its 60-character cells.
    piped = invoke("list", columns=None)
    assert piped.stderr == "" and error[:59] + "…" in piped.stdout
    for args in (["counts"], ["capacity"], ["schedules", "list"], ["workers"], ["health"]):
        result = invoke(*args)
        assert result.exit_code == 0, (args, result.output)
        assert max(len(line) for line in result.stdout.splitlines()) <= 80, args


def test_several_roles_with_shares_run_one_worker_process(fake_worker: types.SimpleNamespace) -> None:
    result = CliRunner().invoke(cli.main, ["--role", "product_resync=20", "--role", "store_discovery=4"])
    assert result.exit_code == 0, result.output
    (config,) = fake_worker.run_worker
    assert config.role_names == ("product_resync", "store_discovery")
    # No --concurrency: the shares added up.
    assert (config.concurrency, config.share("product_resync"), config.share("store_discovery")) == (24, 20, 4)
    result = CliRunner().invoke(
        cli.main, ["--concurrency", "10"], env={"TASKPOOL_ROLE": "product_resync store_discovery=2"}
    )
    assert result.exit_code == 0, result.output
    config = fake_worker.run_worker[-1]
    assert (config.concurrency, config.share("product_resync"), config.share("store_discovery")) == (10, 10, 2)


@pytest.mark.parametrize(
    ("roles", "message"),
    [
        (["a=0"], "the share of role 'a' must be 1 to 1000 tasks, not '0'"),
        (["a=many"], "the share of role 'a' must be 1 to 1000 tasks, not 'many'"),
        (["a", "a=2"], "role 'a' is given more than once"),
        (["=3"], "'=3' names no role"),
    ],
)
def test_a_bad_role_list_is_bad_usage(fake_worker: types.SimpleNamespace, roles: list[str], message: str) -> None:
    result = CliRunner().invoke(cli.main, [arg for role in roles for arg in ("--role", role)])
    assert result.exit_code == 2
    assert message in result.output
    assert fake_worker.run_worker == []


def test_a_share_over_the_concurrency_is_bad_usage(fake_worker: types.SimpleNamespace) -> None:
    result = CliRunner().invoke(cli.main, ["--role", "a=8", "--role", "b", "--concurrency", "4"])
    assert result.exit_code == 2
    assert "the share of role 'a' (8) is more than the worker's concurrency (4)" in result.output
