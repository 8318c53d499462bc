"""`pyworker health` as a probe (exit 0 healthy, 1 needs attention, 2 bad usage) and
`pyworker workers` marking silent workers, with click's CliRunner against a real database; a
real worker process killed with SIGKILL while it holds a task.

Time is moved with set_taskpool_clock_offset, never waited for.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from worker_support import Run, Workers, enqueue, task_row, wait_for_execution

from pyworker.admin import cli


CHECKS = [
    "stuck_tasks", "unserved_roles", "schedule_tick", "schedule_errors", "open_circuits", "paused_roles", "disabled_platforms",
    "xmin_horizon",
]


@pytest.fixture
def ticked(conn: psycopg.Connection) -> psycopg.Connection:
    """`conn`, its database just ticked: every check is ok."""
    conn.execute("SELECT tick_schedules()")
    return conn


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {name: check["status"] for name, check in report["checks"].items()}


def flat(text: str) -> str:
    """The output with its lines unwrapped."""
    return " ".join(text.split())


def test_a_healthy_pool_exits_0(run: Run, ticked: psycopg.Connection) -> None:
    result = run("health")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "health: ok, all 8 checks"
    assert [line.split()[:2] for line in lines[1:] if line.startswith("ok ")] == [
        ["ok", f"{name}:"] for name in CHECKS
    ]
    assert "what to do" not in result.stdout
    assert "tasks by role and status:" in result.stdout

    result = run("health", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["status"] == "ok"
    assert list(report["checks"]) == CHECKS
    assert all(check["status"] == "ok" and check["action"] is None for check in report["checks"].values())
    assert {row["role"] for row in report["task_counts"]} == {"store_discovery", "analytics_refresh", "payload_storage_sweep"}
    assert report["active_workers"] == [] and report["stuck_tasks"] == []


# Each problem, made in the test's database that just ticked: the CLI arguments it needs.


def stuck_task(conn: psycopg.Connection, db_url: str, stack: ExitStack) -> list[str]:
    conn.execute("SELECT set_taskpool_clock_offset('-31 minutes')")
    conn.execute("SELECT enqueue_task('store_discovery')")
    conn.execute("SELECT claim_task('store_discovery', 'w-gone')")
    conn.execute("SELECT set_taskpool_clock_offset('0')")
    return []


def unserved_role(conn: psycopg.Connection, db_url: str, stack: ExitStack) -> list[str]:
    """32 ready tasks, the oldest waiting 8 minutes, and no worker of their role."""
    conn.execute("SELECT set_taskpool_clock_offset('-8 minutes')")
    conn.execute("SELECT enqueue_task('product_discovery', dispensary_id := (add_store('Late', 'simulated')).id)")
    conn.execute("SELECT set_taskpool_clock_offset('0')")
    conn.execute(
        "SELECT enqueue_task('product_discovery', dispensary_id := (add_store('Store ' || n, 'simulated')).id)"
        " FROM generate_series(1, 31) AS n"
    )
    return []


def eleven_minutes_on_with_workers(conn: psycopg.Connection) -> None:
    """The clock 11 minutes on, a worker of every role live: only the tick stopped, so the tasks
    it made wait for no worker."""
    conn.execute("SELECT * FROM register_worker('w-all', ARRAY(SELECT role FROM task_roles), 'host', 1, 20)")
    conn.execute("SELECT set_taskpool_clock_offset('11 minutes')")
    conn.execute("SELECT heartbeat_worker('w-all')")


def late_tick(conn: psycopg.Connection, db_url: str, stack: ExitStack) -> list[str]:
    eleven_minutes_on_with_workers(conn)
    return []


def failing_schedule(conn: psycopg.Connection, db_url: str, stack: ExitStack) -> list[str]:
    conn.execute("INSERT INTO task_roles (role, max_payload_bytes) VALUES ('tiny', 10)")
    conn.execute(
        "INSERT INTO task_schedules (name, role, interval_hours, payload)"
        " VALUES ('too_big', 'tiny', 1, '{\"s\": \"0123456789\"}')"
    )
    conn.execute("SELECT tick_schedules()")
    return []


def open_circuit(conn: psycopg.Connection, db_url: str, stack: ExitStack) -> list[str]:
    conn.execute("SELECT record_platform_result('simulated', false, 'HTTP 500') FROM generate_series(1, 5)")
    return []


def paused_role(conn: psycopg.Connection, db_url: str, stack: ExitStack) -> list[str]:
    conn.execute("SELECT enqueue_task('analytics_refresh')")
    conn.execute("SELECT pause_role('analytics_refresh')")
    return []


def disabled_platform(conn: psycopg.Connection, db_url: str, stack: ExitStack) -> list[str]:
    conn.execute("SELECT enqueue_task('analytics_refresh', platform := 'simulated')")
    conn.execute("SELECT disable_platform('simulated')")
    return []


def held_snapshot(conn: psycopg.Connection, db_url: str, stack: ExitStack) -> list[str]:
    holder = stack.enter_context(psycopg.connect(db_url, application_name="snapshot-holder"))
    holder.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    holder.execute("SELECT 1")
    return ["--max-snapshot-age", "0"]


@pytest.mark.parametrize(
    ("make_problem", "check", "says"),
    [
        (stuck_task, "stuck_tasks", "of worker w-gone, silent for 00:31:00"),
        (
            unserved_role,
            "unserved_roles",
            "1 role(s) with tasks ready for over 5 minutes and no live worker: product_discovery (32 ready,"
            " the oldest waiting 00:08:0",
        ),
        (late_tick, "schedule_tick", "longer than 00:10:00; 4 schedule(s) enabled"),
        (failing_schedule, "schedule_errors", "too_big: payload is 19 bytes; role tiny allows at most 10"),
        (open_circuit, "open_circuits", "simulated until"),
        (paused_role, "paused_roles", "1 role(s) paused: analytics_refresh since"),
        (disabled_platform, "disabled_platforms", "1 platform(s) disabled: simulated since"),
        (held_snapshot, "xmin_horizon", "application 'snapshot-holder', idle in transaction"),
    ],
)
def test_each_problem_exits_1_and_says_what_to_do(
    run: Run,
    db_url: str,
    ticked: psycopg.Connection,
    make_problem: Callable[[psycopg.Connection, str, ExitStack], list[str]],
    check: str,
    says: str,
) -> None:
    with ExitStack() as stack:
        args = make_problem(ticked, db_url, stack)
        result = run("health", *args)
        assert result.exit_code == 1, result.output
        assert result.stdout.startswith("health: ATTENTION, 1 of 8 checks need a person\n")
        text = flat(result.stdout)
        assert f"ATTENTION {check}: " in text and says in text
        assert text.count("what to do: ") == 1

        result = run("health", *args, "--json")
        assert result.exit_code == 1, result.output
        report = json.loads(result.stdout)
        assert report["status"] == "attention"
        assert statuses(report) == {name: "attention" if name == check else "ok" for name in CHECKS}
        assert says in report["checks"][check]["detail"]
        assert report["checks"][check]["action"]


def test_max_tick_age_moves_the_limit(run: Run, ticked: psycopg.Connection) -> None:
    eleven_minutes_on_with_workers(ticked)
    assert run("health").exit_code == 1
    result = run("health", "--max-tick-age", "1 hour")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-tick-age", "soon"], 'invalid input syntax for type interval: "soon"'),
        (["--max-snapshot-age", "-1 minute"], "max_snapshot_age must not be negative, not -00:01:00"),
        (["--max-tick-age"], "--max-tick-age"),
    ],
)
def test_bad_input_exits_2(run: Run, args: list[str], message: str) -> None:
    result = run("health", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_an_unreachable_database_exits_1() -> None:
    result = CliRunner().invoke(
        cli.main, ["--database-url", "postgresql://postgres@127.0.0.1:1/nowhere", "health"]
    )
    assert result.exit_code == 1
    assert result.stdout == ""


def test_the_help_states_the_exit_codes() -> None:
    result = CliRunner().invoke(cli.main, ["health", "--help"])
    assert result.exit_code == 0
    assert "0 every check ok; 1 a check needs attention" in flat(result.stdout)
    assert "2 bad usage" in result.stdout


# A real worker killed while it holds a task


@pytest.fixture
def quiet_pool(pool: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """The test pool with no schedule enabled (so no tick is due, however the clock moves) and
    test_work's stale threshold at 10 minutes (so its worker stays live until the clock moves)."""
    pool.execute("SELECT update_schedule(name, enabled => false) FROM task_schedules")
    pool.execute("UPDATE task_roles SET stale_threshold = '10 minutes' WHERE role = 'test_work'")
    yield pool


def workers_by_id(run: Run) -> dict[str, dict[str, Any]]:
    result = run("workers", "--json")
    assert result.exit_code == 0, result.output
    return {worker["worker_id"]: worker for worker in json.loads(result.stdout)}


def worker_line(run: Run, worker_id: str) -> list[str]:
    result = run("workers")
    assert result.exit_code == 0, result.output
    header, *lines = result.stdout.splitlines()
    assert header.split() == ["worker", "role", "host", "pid", "started_at", "last_seen_at",
                              "seen_ago", "state", "tasks"]
    (line,) = [line.split() for line in lines if line.startswith(f"{worker_id} ")]
    return line


def test_a_killed_worker_makes_health_exit_1_and_is_listed_silent(
    run: Run, quiet_pool: psycopg.Connection, workers: Workers
) -> None:
    victim = workers.start("test_work", "health-victim")
    task_id = enqueue(quiet_pool, "test_work", {"seconds": 60})
    wait_for_execution(quiet_pool, task_id, 1, 10, also=victim.describe)

    assert run("health").exit_code == 0
    assert worker_line(run, "health-victim")[-2:] == ["live", str(task_id)]
    listed = workers_by_id(run)["health-victim"]
    assert (listed["liveness"], listed["task_ids"], listed["pid"]) == ("live", [task_id], victim.pid)

    victim.send(signal.SIGKILL)
    assert victim.wait(5) == -signal.SIGKILL
    quiet_pool.execute("SELECT set_taskpool_clock_offset('11 minutes')")

    result = run("health")
    assert result.exit_code == 1, result.output
    text = flat(result.stdout)
    assert (
        f"ATTENTION stuck_tasks: 1 claimed or running task(s) silent past their role's stale"
        f" threshold; the oldest: task {task_id} (test_work) of worker health-victim" in text
    )
    assert "what to do: Their worker stopped heartbeating" in text
    report = json.loads(run("health", "--json").stdout)
    assert statuses(report)["stuck_tasks"] == "attention"
    assert [task["id"] for task in report["stuck_tasks"]] == [task_id]

    line = worker_line(run, "health-victim")
    assert line[-2:] == ["SILENT", str(task_id)]
    assert "1 silent worker: not heard from for longer than the role's stale threshold" in flat(
        run("workers").stdout
    )
    listed = workers_by_id(run)["health-victim"]
    assert (listed["liveness"], listed["task_ids"]) == ("silent", [task_id])
    assert listed["last_seen_age"] > listed["stale_threshold"] == 600

    # Recovered, the task no longer needs a person; the dead worker stays listed, silent.
    assert run("recover-stale").exit_code == 0
    assert task_row(quiet_pool, task_id)["status"] == "pending"
    assert run("health").exit_code == 0
    assert worker_line(run, "health-victim")[-1] == "SILENT"
