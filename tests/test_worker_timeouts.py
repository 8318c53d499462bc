"""The role's run_timeout ends an attempt even when its handler ignores task.abort: after the
timeout and a short wind-down the attempt fails (retryable, a retry spent), its heartbeat stops,
and the stuck handler is left behind in its thread while the next task gets a fresh one. Real
`python -m pyworker` processes against a real database.
"""

from __future__ import annotations

import signal
import time

import psycopg
import pytest
from worker_support import Workers, enqueue, fetch_one, wait_for, wait_for_status

from pyworker.worker import ABORT_WIND_DOWN_SECONDS

HANDLERS = "worker_stuck_handlers"
# The run timeout, then the wind-down, then some slack for a loaded machine.
ENDS_WITHIN = 1 + ABORT_WIND_DOWN_SECONDS + 10


@pytest.fixture
def stuck_role(pool: psycopg.Connection) -> psycopg.Connection:
    """`pool` with the role test_stuck: a 1 second run_timeout, one retry after 1 second."""
    pool.execute(
        "INSERT INTO task_roles (role, run_timeout, max_retries, backoff_base, backoff_cap, backoff_jitter)"
        " VALUES ('test_stuck', interval '1 second', 1, interval '1 second', interval '1 second', 'none')"
    )
    return pool


def attempt_outcomes(conn: psycopg.Connection, task_id: int) -> list[tuple[int, str, str | None]]:
    return conn.execute(
        "SELECT attempt, outcome, error_message FROM worker_task_attempts WHERE task_id = %s"
        " ORDER BY attempt",
        (task_id,),
    ).fetchall()


def test_a_handler_ignoring_the_abort_is_failed_at_the_run_timeout_and_left_behind(
    stuck_role: psycopg.Connection, workers: Workers
) -> None:
    pool = stuck_role
    task_id = enqueue(pool, "test_stuck", {"seconds": 120})
    worker = workers.start("test_stuck", "stuck-a", handlers=HANDLERS)

    # Attempt 1 times out, is retried after 1 s, attempt 2 times out: failed for good.
    row = wait_for_status(pool, task_id, "failed", 2 * ENDS_WITHIN + 1, also=worker.describe)
    assert (row["attempt"], row["retry_count"], row["error_message"]) == (2, 1, "timed out after 1 s")
    assert attempt_outcomes(pool, task_id) == [
        (1, "retried", "timed out after 1 s"),
        (2, "failed", "timed out after 1 s"),
    ]
    log = worker.log()
    assert f"Task {task_id} passed its run timeout of 1 s: aborting it" in log
    assert f"Task {task_id}: its handler did not stop" in log

    # Both stuck handlers still sleep in their threads: the next task runs in a fresh one.
    quick = enqueue(pool, "test_stuck", {"seconds": 0})
    row = wait_for_status(pool, quick, "completed", 10, also=worker.describe)
    assert row["result"] == {"slept": 0}

    # Nobody heartbeats the failed task any more.
    beat = fetch_one(pool, "SELECT last_heartbeat_at FROM worker_tasks WHERE id = %s", (task_id,))[0]
    time.sleep(1)
    assert fetch_one(pool, "SELECT last_heartbeat_at FROM worker_tasks WHERE id = %s", (task_id,))[0] == beat
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_a_timed_out_attempt_stuck_at_shutdown_spends_its_retry_instead_of_being_handed_back(
    stuck_role: psycopg.Connection, workers: Workers
) -> None:
    pool = stuck_role
    task_id = enqueue(pool, "test_stuck", {"seconds": 120})
    worker = workers.start("test_stuck", "stuck-b", handlers=HANDLERS, grace=0)
    worker.wait_for_log(f"Task {task_id} passed its run timeout of 1 s: aborting it", ENDS_WITHIN)

    # Stopped during the wind-down, with no grace: the attempt still ends as timed out.
    worker.send(signal.SIGTERM)
    assert worker.wait(ENDS_WITHIN) == 0
    row = wait_for(
        lambda: fetch_one(
            pool,
            "SELECT status, attempt, retry_count, error_message FROM worker_tasks WHERE id = %s",
            (task_id,),
        ),
        5,
        "the task's row",
    )
    assert row == ("pending", 1, 1, "timed out after 1 s")
    assert f"Task {task_id} handed back" not in worker.log()
