"""`pyworker --concurrency N`: one worker process runs up to N tasks at the same time, on a small,
fixed set of connections, heartbeating all it holds with one call per interval; each task keeps
its own abort (a command handler's process group killed alone), run timeout and shutdown
hand-back. Real `python -m pyworker` processes against
a real database.
"""

from __future__ import annotations

import signal
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from worker_support import (
    Workers,
    command_line,
    enqueue,
    fetch_one,
    kill_if_running,
    process_gone,
    task_row,
    wait_for,
    wait_for_status,
)

from pyworker.worker import ABORT_WIND_DOWN_SECONDS, COMPLETION_BATCH_MAX


def executions(conn: psycopg.Connection, task_ids: list[int]) -> list[tuple]:
    return conn.execute(
        "SELECT task_id, started_at, ended_at, abort_reason FROM test_executions"
        " WHERE task_id = ANY(%s) ORDER BY task_id",
        (task_ids,),
    ).fetchall()


def started_count(conn: psycopg.Connection, task_ids: list[int]) -> int:
    return fetch_one(conn, "SELECT count(*) FROM test_executions WHERE task_id = ANY(%s)", (task_ids,))[0]


def connections(conn: psycopg.Connection, worker_id: str) -> int:
    """The worker's own connections (its handlers' are named otherwise)."""
    return fetch_one(
        conn,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE %s",
        (f"pyworker {worker_id}%",),
    )[0]


def test_n_tasks_run_at_the_same_time_in_one_process_on_at_most_4_connections(
    pool: psycopg.Connection, workers: Workers
) -> None:
    task_ids = [enqueue(pool, "test_work", {"seconds": 3}) for _ in range(50)]
    worker = workers.start("test_work", "conc-50", concurrency=50, heartbeat_ms=200)

    wait_for(lambda: started_count(pool, task_ids) == 50, 15, "all 50 handlers to start", also=worker.describe)
    # All running at once: the heartbeat has connected by now, and no connection is added per task.
    time.sleep(0.5)
    assert 3 <= connections(pool, "conc-50") <= 4
    for task_id in task_ids:
        wait_for_status(pool, task_id, "completed", 15, also=worker.describe)
    rows = executions(pool, task_ids)
    # Every handler began before any ended: they overlapped, in one process.
    assert max(row[1] for row in rows) < min(row[2] for row in rows)
    assert {row["worker_id"] for row in map(lambda t: task_row(pool, t), task_ids)} == {"conc-50"}
    assert connections(pool, "conc-50") <= 4


def test_one_heartbeat_call_per_interval_keeps_every_held_task_fresh(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # Count function calls in this database's sessions from now on.
    pool.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'pl'").format(sql.Identifier(pool.info.dbname)))
    task_ids = [enqueue(pool, "test_work", {"seconds": 3}) for _ in range(10)]
    worker = workers.start("test_work", "conc-beat", concurrency=10, heartbeat_ms=300)
    wait_for(lambda: started_count(pool, task_ids) == 10, 15, "all 10 handlers to start", also=worker.describe)
    began = time.monotonic()
    time.sleep(1.5)
    # Each task's heartbeat moved past its start (the claim stamps it first).
    fresh = pool.execute(
        "SELECT count(*) FROM worker_tasks t JOIN test_executions e ON e.task_id = t.id"
        " WHERE t.id = ANY(%s) AND t.status = 'running' AND t.last_heartbeat_at > e.started_at + interval '0.5 s'",
        (task_ids,),
    ).fetchone()[0]
    assert fresh == 10
    for task_id in task_ids:
        wait_for_status(pool, task_id, "completed", 15, also=worker.describe)
    held_for = time.monotonic() - began + 1.0
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    # The worker's sessions ended, their counts are in the statistics.
    calls = dict(
        wait_for(
            lambda: pool.execute(
                "SELECT funcname, calls FROM pg_stat_user_functions"
                " WHERE funcname IN ('heartbeat_task', 'heartbeat_tasks')"
            ).fetchall(),
            10,
            "the heartbeat calls in pg_stat_user_functions",
        )
    )
    assert "heartbeat_task" not in calls
    # One a 300 ms interval while the tasks were held, not ten.
    assert 3 <= calls["heartbeat_tasks"] <= held_for / 0.3 + 3


def test_an_async_handler_runs_natively_on_the_event_loop(pool: psycopg.Connection, workers: Workers) -> None:
    pool.execute("INSERT INTO task_roles (role) VALUES ('test_async')")
    task_ids = [enqueue(pool, "test_async", {"seconds": 1}) for _ in range(40)]
    worker = workers.start("test_async", "conc-async", concurrency=40, handlers="worker_async_handlers")
    rows = [wait_for_status(pool, task_id, "completed", 15, also=worker.describe) for task_id in task_ids]
    for row in rows:
        assert row["result"]["thread"] == "asyncio"
        assert row["result"]["context_task_id"] == row["id"]
        # 40 coroutines on one loop, not a thread each.
        assert row["result"]["threads"] < 10
    # They slept at the same time: 40 one-second sleeps well within 40 seconds.
    assert max(r["completed_at"] for r in rows) - min(r["started_at"] for r in rows) < timedelta(seconds=10)


def test_an_async_handler_is_cancelled_when_its_task_is_cancelled(
    pool: psycopg.Connection, workers: Workers
) -> None:
    pool.execute("INSERT INTO task_roles (role) VALUES ('test_async')")
    long_id = enqueue(pool, "test_async", {"seconds": 60})
    short_ids = [enqueue(pool, "test_async", {"seconds": 2}) for _ in range(3)]
    worker = workers.start(
        "test_async", "conc-async-cancel", concurrency=4, heartbeat_ms=200, handlers="worker_async_handlers"
    )
    wait_for_status(pool, long_id, "running", 10, also=worker.describe)
    pool.execute("SELECT cancel_task(%s)", (long_id,))
    row = wait_for_status(pool, long_id, "cancelled", 5, also=worker.describe)
    assert row["error_message"] == "cancelled by an operator while running"
    for task_id in short_ids:
        wait_for_status(pool, task_id, "completed", 10, also=worker.describe)


def test_a_cancel_aborts_only_that_task(pool: psycopg.Connection, workers: Workers) -> None:
    task_ids = [enqueue(pool, "test_work", {"seconds": 4}) for _ in range(4)]
    worker = workers.start("test_work", "conc-cancel", concurrency=4, heartbeat_ms=200)
    wait_for(lambda: started_count(pool, task_ids) == 4, 10, "all 4 handlers to start", also=worker.describe)
    victim, *others = task_ids
    pool.execute("SELECT cancel_task(%s)", (victim,))
    wait_for_status(pool, victim, "cancelled", 5, also=worker.describe)
    for task_id in others:
        wait_for_status(pool, task_id, "completed", 10, also=worker.describe)
    reasons = {row[0]: row[3] for row in executions(pool, task_ids)}
    assert reasons == {victim: "cancelled", **{task_id: None for task_id in others}}


def test_sigterm_finishes_or_hands_back_each_task_in_flight(pool: psycopg.Connection, workers: Workers) -> None:
    # Three begin (two short, one long); two more are claimed ahead (--prefetch 5) and wait.
    short = [enqueue(pool, "test_work", {"seconds": 1}) for _ in range(2)]
    long = enqueue(pool, "test_work", {"seconds": 60})
    waiting = [enqueue(pool, "test_work", {"seconds": 1}) for _ in range(2)]
    worker = workers.start("test_work", "conc-term", concurrency=3, prefetch=5, grace=2)
    wait_for(lambda: started_count(pool, [*short, long]) == 3, 10, "three handlers to start", also=worker.describe)
    assert task_row(pool, waiting[0])["status"] == "running"

    worker.send(signal.SIGTERM)
    assert worker.wait(2 + ABORT_WIND_DOWN_SECONDS + 10) == 0
    for task_id in short:
        assert task_row(pool, task_id)["status"] == "completed"
    for task_id in [long, *waiting]:
        row = task_row(pool, task_id)
        assert (row["status"], row["retry_count"], row["worker_id"]) == ("pending", 0, None)
    assert started_count(pool, waiting) == 0
    assert {row[0]: row[3] for row in executions(pool, [long])} == {long: "shutdown"}
    log = worker.log()
    assert log.count("handed back: the worker is stopping") == 3


@pytest.fixture
def stuck_role(pool: psycopg.Connection) -> psycopg.Connection:
    """`pool` with the role test_stuck: a 1 second run_timeout, no retry."""
    pool.execute(
        "INSERT INTO task_roles (role, run_timeout, max_retries) VALUES ('test_stuck', interval '1 second', 0)"
    )
    return pool


def test_a_stuck_handler_past_its_run_timeout_fails_alone_while_the_others_complete(
    stuck_role: psycopg.Connection, workers: Workers
) -> None:
    pool = stuck_role
    stuck = enqueue(pool, "test_stuck", {"seconds": 60})
    quick = [enqueue(pool, "test_stuck", {"seconds": 0.3}) for _ in range(3)]
    worker = workers.start("test_stuck", "conc-stuck", concurrency=2, handlers="worker_stuck_handlers")
    for task_id in quick:
        wait_for_status(pool, task_id, "completed", 10, also=worker.describe)
    row = wait_for_status(pool, stuck, "failed", 1 + ABORT_WIND_DOWN_SECONDS + 10, also=worker.describe)
    assert row["error_message"] == "timed out after 1 s"
    worker.wait_for_log("leaving it behind")
    # The slot it held is free again: more tasks run, two at a time, past the stuck thread.
    later = [enqueue(pool, "test_stuck", {"seconds": 0.3}) for _ in range(4)]
    for task_id in later:
        wait_for_status(pool, task_id, "completed", 10, also=worker.describe)
    assert worker.process.poll() is None


def test_a_cancel_kills_that_task_s_command_alone(
    pool: psycopg.Connection, workers: Workers, tmp_path: Path
) -> None:
    pool.execute("INSERT INTO task_roles (role, run_timeout, max_retries) VALUES ('test_long_command', '1 minute', 0)")
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    victim, other = (enqueue(pool, "test_long_command") for _ in range(2))
    worker = workers.start(
        "test_long_command",
        "conc-cmd",
        concurrency=2,
        heartbeat_ms=200,
        command=command_line("sleep-tree-in", str(pid_dir)),
        handlers=None,
    )
    files = {task_id: pid_dir / str(task_id) for task_id in (victim, other)}
    wait_for(lambda: all(f.exists() for f in files.values()), 10, "both commands to start", also=worker.describe)
    pids = {task_id: [int(pid) for pid in f.read_text().split()] for task_id, f in files.items()}
    try:
        pool.execute("SELECT cancel_task(%s)", (victim,))
        wait_for_status(pool, victim, "cancelled", 10, also=worker.describe)
        wait_for(lambda: all(process_gone(pid) for pid in pids[victim]), 10, "the cancelled command's processes to end")
        assert not any(process_gone(pid) for pid in pids[other])
        assert task_row(pool, other)["status"] == "running"
    finally:
        for pid in [*pids[victim], *pids[other]]:
            kill_if_running(pid)


def held_by(conn: psycopg.Connection, worker_id: str) -> int:
    return fetch_one(
        conn, "SELECT count(*) FROM worker_tasks WHERE worker_id = %s AND status = 'running'", (worker_id,)
    )[0]


def test_a_recorder_slower_than_the_handlers_bounds_what_the_worker_holds(
    pool: psycopg.Connection, workers: Workers, db_url: str
) -> None:
    """A handler that returns at once frees its slot before its outcome is recorded: the worker
    claims on only while the outcomes waiting for the recorder fit two batches."""
    (store,) = fetch_one(pool, "INSERT INTO dispensaries (name) VALUES ('Held store') RETURNING id")
    window = 2 * COMPLETION_BATCH_MAX
    total = window + 500
    pool.execute(
        "SELECT count(*) FROM enqueue_tasks((SELECT jsonb_agg(jsonb_build_object("
        "'role', 'test_chain', 'payload', jsonb_build_object('store', %s::int, 'to_role', 'test_outcome')))"
        " FROM generate_series(1, %s)))",
        (store, total),
    )
    with psycopg.connect(db_url) as blocker:
        # The recorder's transaction enqueues each follow-up for this store: it waits for the lock.
        blocker.execute("SELECT FROM dispensaries WHERE id = %s FOR UPDATE", (store,))
        worker = workers.start("test_chain", "window-1", concurrency=8)
        wait_for(lambda: held_by(pool, "window-1") >= window, 30, "the window to fill",
                 also=worker.describe)
        time.sleep(1.0)
        held = held_by(pool, "window-1")
        assert held <= 8 + window
        time.sleep(1.0)
        assert held_by(pool, "window-1") == held, "it claimed on with its window full"
        blocker.rollback()
    wait_for(
        lambda: fetch_one(pool, "SELECT count(*) FROM worker_tasks WHERE role = 'test_chain' AND status = 'completed'")[0]
        == total,
        60,
        "every task to complete once the recorder could go on",
        also=worker.describe,
    )
    assert fetch_one(pool, "SELECT count(*) FROM worker_tasks WHERE role = 'test_outcome'")[0] == total
