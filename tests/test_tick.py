"""The tick, tick_schedules(): racing from many sessions, and on a loop in `pyworker scheduler`.

Right after a deploy the default schedules are all due: store_discovery makes one task,
analytics_refresh one, payload_storage_sweep one, and resync_every_4_hours one product_resync per
active store (the daily resync plan is there, disabled). However many ticks race, each of them runs once.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from worker_support import WorkerProcess, Workers, wait_for

from pyworker.admin import cli

ACTIVE_STORES = 3


def make_stores(conn: psycopg.Connection) -> None:
    """ACTIVE_STORES active stores and one inactive one (which gets no resync)."""
    for n in range(ACTIVE_STORES):
        conn.execute("INSERT INTO dispensaries (name) VALUES (%s)", (f"Store {n}",))
    conn.execute("INSERT INTO dispensaries (name, active) VALUES ('Closed', false)")


# What one run of each default schedule creates, with make_stores' stores.
EXPECTED_TASKS = {
    "store_discovery": 1, "analytics_refresh": 1, "product_resync": ACTIVE_STORES, "payload_storage_sweep": 1
}
EXPECTED_RUNS = {
    "store_discovery": 1, "analytics_refresh": 1, "resync_every_4_hours": ACTIVE_STORES, "payload_storage_sweep": 1
}


def tasks_by_role(conn: psycopg.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT role, count(*) FROM worker_tasks GROUP BY role").fetchall())


def last_task_counts(conn: psycopg.Connection) -> dict[str, int | None]:
    return dict(conn.execute("SELECT name, last_task_count FROM task_schedules WHERE enabled").fetchall())


def assert_each_schedule_ran_once(conn: psycopg.Connection) -> None:
    assert tasks_by_role(conn) == EXPECTED_TASKS
    assert last_task_counts(conn) == EXPECTED_RUNS
    due = conn.execute(
        "SELECT name FROM task_schedules WHERE enabled AND (next_run_at <= taskpool_now() OR last_run_at IS NULL)"
    ).fetchall()
    assert due == []
    resyncs = conn.execute(
        "SELECT count(*), count(DISTINCT dispensary_id) FROM worker_tasks WHERE role = 'product_resync'"
    )
    assert resyncs.fetchone() == (ACTIVE_STORES, ACTIVE_STORES)


def test_ten_racing_ticks_run_each_due_schedule_once(db_url: str, conn: psycopg.Connection) -> None:
    make_stores(conn)
    sessions = 10
    barrier = threading.Barrier(sessions)
    reports: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def tick() -> None:
        try:
            with psycopg.connect(db_url, autocommit=True) as session:
                session.execute("SELECT 1")  # connected before the start line
                barrier.wait(timeout=30)
                (report,) = session.execute("SELECT tick_schedules()").fetchone()
            with lock:
                reports.append(report)
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            with lock:
                errors.append(error)

    threads = [threading.Thread(target=tick, name=f"tick-{n}") for n in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert len(reports) == sessions

    runs = [run for report in reports for run in report["schedules"]]
    assert sorted(run["schedule"] for run in runs) == sorted(EXPECTED_RUNS)
    assert {run["schedule"]: run["tasks"] for run in runs} == EXPECTED_RUNS
    assert all(run["error"] is None for run in runs)
    assert sum(report["recovered"] for report in reports) == 0
    assert_each_schedule_ran_once(conn)

    # And the next tick finds nothing due.
    (report,) = conn.execute("SELECT tick_schedules()").fetchone()
    assert report == {"recovered": 0, "schedules": []}


# pyworker scheduler, as a process


def start_scheduler(
    workers: Workers, name: str, interval: int = 1, log_format: str = "text"
) -> WorkerProcess:
    """`python -m pyworker scheduler --interval-seconds N` with --worker-id `name`, once it has
    logged its start."""
    process = workers.start(
        "unused",
        name,
        ready=False,
        args=("scheduler", "--interval-seconds", str(interval)),
        handlers=None,
        log_format=log_format,
    )
    process.wait_for_log(f"Starting scheduler {name}: a tick every {interval} s")
    return process


def stop(process: WorkerProcess, signum: int = signal.SIGTERM, within: float = 2.0) -> float:
    """Send `signum`; the process must exit 0 within `within` seconds. How long it took."""
    started = time.monotonic()
    process.send(signum)
    code = process.wait(timeout=within)
    took = time.monotonic() - started
    assert code == 0, process.describe()
    return took


def wait_for_tasks(conn: psycopg.Connection, process: WorkerProcess) -> None:
    wait_for(
        lambda: tasks_by_role(conn) == EXPECTED_TASKS,
        10,
        "the default schedules' tasks",
        also=lambda: f"tasks: {tasks_by_role(conn)}\n{process.describe()}",
    )


def test_the_scheduler_ticks_and_stops_on_sigterm(
    conn: psycopg.Connection, workers: Workers
) -> None:
    make_stores(conn)
    scheduler = start_scheduler(workers, "sched-1")
    wait_for_tasks(conn, scheduler)
    log = scheduler.wait_for_log("Tick: ran 4 schedules")
    (line,) = [line for line in log.splitlines() if "Tick:" in line]
    summary, details = line.split(" (", 1)
    assert summary.endswith(
        "Tick: ran 4 schedules, created 6 tasks, 0 errors, recovered 0 stale tasks"
    )
    assert sorted(details.rstrip(")").split(", ")) == [
        "analytics_refresh: 1", "payload_storage_sweep: 1", "resync_every_4_hours: 3", "store_discovery: 1"
    ]
    assert "INFO [sched-1]" in log
    # A few more ticks: nothing is due, nothing is made, nothing is logged.
    time.sleep(2.5)
    assert_each_schedule_ran_once(conn)
    assert scheduler.log().count("Tick:") == 1

    assert stop(scheduler) < 2.0
    log = scheduler.log()
    assert "Received SIGTERM: stopping" in log
    assert "Scheduler sched-1 stopped" in log


def test_the_scheduler_stops_mid_wait_at_once(conn: psycopg.Connection, workers: Workers) -> None:
    scheduler = start_scheduler(workers, "sched-slow", interval=600, log_format="json")
    scheduler.wait_for_log("Tick: ran 4 schedules")
    time.sleep(0.2)  # well into the wait
    took = stop(scheduler, signal.SIGINT)
    assert took < 1.0
    assert '"message": "Received SIGINT: stopping"' in scheduler.log()
    assert '"worker_id": "sched-slow"' in scheduler.log()


def test_two_schedulers_run_each_due_schedule_once(
    conn: psycopg.Connection, workers: Workers
) -> None:
    make_stores(conn)
    first = start_scheduler(workers, "sched-a")
    second = start_scheduler(workers, "sched-b")
    wait_for_tasks(conn, first)
    time.sleep(2.5)  # a few ticks each
    assert_each_schedule_ran_once(conn)
    ran = first.log().count("Tick: ran") + second.log().count("Tick: ran")
    assert ran in (1, 2), f"{first.describe()}\n{second.describe()}"
    stop(first)
    stop(second)


def test_the_scheduler_reconnects_after_a_lost_connection(
    conn: psycopg.Connection, workers: Workers
) -> None:
    make_stores(conn)
    scheduler = start_scheduler(workers, "sched-lost")
    wait_for_tasks(conn, scheduler)
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND application_name = 'pyworker scheduler sched-lost'"
    )
    scheduler.wait_for_log("retrying in")
    # Due again: the scheduler must tick it on its new connection.
    conn.execute("UPDATE task_schedules SET next_run_at = taskpool_now() WHERE name = 'store_discovery'")
    wait_for(
        lambda: tasks_by_role(conn).get("store_discovery") == 2,
        10,
        "store_discovery to run again",
        also=scheduler.describe,
    )
    # The tick's commit is visible before the scheduler logs its recovery: wait for the line.
    log = scheduler.wait_for_log("INFO [sched-lost] tick: the database answers again")
    assert "WARNING [sched-lost] tick: database connection failed" in log
    stop(scheduler)


# pyworker scheduler, in-process, where it refuses to start


@pytest.mark.parametrize("form", [["--interval-seconds", "1"], ["--once"]])
def test_the_scheduler_without_the_schema_exits_1(empty_db_url: str, form: list[str]) -> None:
    result = CliRunner().invoke(cli.main, ["--database-url", empty_db_url, "scheduler", *form])
    assert result.exit_code == 1
    assert "pyworker schema apply" in result.stderr


@pytest.mark.parametrize("interval", ["0", "-5", "soon"])
def test_a_bad_interval_exits_2(interval: str) -> None:
    result = CliRunner().invoke(cli.main, ["scheduler", "--interval-seconds", interval])
    assert result.exit_code == 2
    assert "--interval-seconds" in result.stderr


# pyworker scheduler --once: one tick for a cron job (the Kubernetes CronJob's command)


def test_the_scheduler_once_ticks_once_and_exits_0(db_url: str, conn: psycopg.Connection) -> None:
    make_stores(conn)
    for _ in range(2):  # the second run finds nothing due
        result = CliRunner().invoke(cli.main, ["--database-url", db_url, "scheduler", "--once"])
        assert result.exit_code == 0, result.output
        assert_each_schedule_ran_once(conn)
    assert conn.execute("SELECT last_tick_at IS NOT NULL FROM schedule_ticks").fetchone() == (True,)


def test_the_scheduler_once_without_a_database_exits_1_at_once() -> None:
    unreachable = "postgresql://postgres@127.0.0.1:1/taskpool?connect_timeout=2"
    result = CliRunner().invoke(cli.main, ["--database-url", unreachable, "scheduler", "--once"])
    assert result.exit_code == 1
    assert "127.0.0.1" in result.stderr, result.stderr
