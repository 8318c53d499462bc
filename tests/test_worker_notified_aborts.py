"""A cancel or a stale recovery reaches the running handler at once: the database notifies the
worker that holds the task ('abort:<id>' on its wake channel), and the worker heartbeats at once
instead of at its next interval. Real `python -m pyworker` processes whose heartbeat interval
(two minutes) is far longer than the waits here: only the notification can abort the handlers
in time.
"""

from __future__ import annotations

import psycopg
import pytest
from worker_support import Workers, enqueue, fetch_one, wait_for, wait_for_execution, wait_for_status

HEARTBEAT_MS = 120_000


@pytest.fixture
def slow_beating_worker(pool: psycopg.Connection, workers: Workers) -> Workers:
    # A heartbeat interval must stay below the role's stale threshold.
    pool.execute("UPDATE task_roles SET stale_threshold = '10 minutes', max_retries = 1 WHERE role = 'test_work'")
    return workers


def abort_reason(conn: psycopg.Connection, task_id: int) -> str | None:
    return fetch_one(conn, "SELECT abort_reason FROM test_executions WHERE task_id = %s AND attempt = 1", (task_id,))[0]


def test_a_cancel_aborts_the_running_handler_before_the_next_heartbeat(
    pool: psycopg.Connection, slow_beating_worker: Workers
) -> None:
    worker = slow_beating_worker.start("test_work", "notified-cancel", heartbeat_ms=HEARTBEAT_MS, concurrency=2)
    cancelled, other = (enqueue(pool, "test_work", {"seconds": 600}) for _ in range(2))
    for task_id in (cancelled, other):
        wait_for_execution(pool, task_id, 1, 10, also=worker.describe)

    pool.execute("SELECT cancel_task(%s)", (cancelled,))

    wait_for(lambda: abort_reason(pool, cancelled), 20, "the cancelled handler to see its abort", also=worker.describe)
    assert abort_reason(pool, cancelled) == "cancelled"
    wait_for_status(pool, cancelled, "cancelled", 10, also=worker.describe)
    # The other task of the same worker runs on.
    assert fetch_one(pool, "SELECT status FROM worker_tasks WHERE id = %s", (other,))[0] == "running"
    assert abort_reason(pool, other) is None


def test_a_bulk_cancel_aborts_the_running_handlers_before_the_next_heartbeat(
    pool: psycopg.Connection, slow_beating_worker: Workers
) -> None:
    worker = slow_beating_worker.start("test_work", "notified-bulk", heartbeat_ms=HEARTBEAT_MS, concurrency=2)
    task_ids = [enqueue(pool, "test_work", {"seconds": 600}) for _ in range(2)]
    for task_id in task_ids:
        wait_for_execution(pool, task_id, 1, 10, also=worker.describe)

    assert fetch_one(pool, "SELECT cancel_tasks(role := 'test_work', status := 'running')")[0] == 2

    for task_id in task_ids:
        wait_for(lambda task_id=task_id: abort_reason(pool, task_id), 20, f"task {task_id}'s handler to see its abort",
                 also=worker.describe)
        assert abort_reason(pool, task_id) == "cancelled"


def test_a_stale_recovery_aborts_the_handler_it_took_the_task_from(
    pool: psycopg.Connection, slow_beating_worker: Workers
) -> None:
    worker = slow_beating_worker.start("test_work", "notified-recovery", heartbeat_ms=HEARTBEAT_MS)
    task_id = enqueue(pool, "test_work", {"seconds": 600})
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)
    # Seen as silent for an hour (only the heartbeat's date changes), then recovered.
    pool.execute("UPDATE worker_tasks SET last_heartbeat_at = now() - interval '1 hour' WHERE id = %s", (task_id,))
    assert fetch_one(pool, "SELECT recover_stale_tasks()")[0] == 1

    wait_for(lambda: abort_reason(pool, task_id), 20, "the recovered task's handler to see its abort", also=worker.describe)
    assert abort_reason(pool, task_id) == "taken_by_another_worker"
