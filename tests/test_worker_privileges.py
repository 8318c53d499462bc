"""A worker needs nothing but taskpool_worker's grants: real `python -m pyworker` processes run as
a login granted only that role (the documented least-privilege deployment), never as the owner.
"""

from __future__ import annotations

import signal

import psycopg
from worker_support import Workers, enqueue, fetch_one, wait_for, wait_for_status


def test_a_login_granted_only_taskpool_worker_runs_a_worker_that_completes_tasks(
    pool: psycopg.Connection, workers: Workers, worker_login_url: str
) -> None:
    first = enqueue(pool, "test_outcome", {"raise": "nothing"})
    worker = workers.start("test_outcome", "least-1", database_url=worker_login_url)

    row = wait_for_status(pool, first, "completed", 15, also=worker.describe)
    assert (row["worker_id"], row["result"]) == ("least-1", {"ok": True})
    # Idle now: it marked itself waiting and listens on its channel; an enqueue wakes it.
    wait_for(
        lambda: fetch_one(pool, "SELECT count(*) FROM task_worker_waits WHERE worker_id = 'least-1'")[0],
        10,
        "the worker to wait for the next task",
        also=worker.describe,
    )
    second = enqueue(pool, "test_outcome", {"raise": "nothing"})
    wait_for_status(pool, second, "completed", 15, also=worker.describe)

    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    assert fetch_one(pool, "SELECT count(*) FROM task_workers WHERE worker_id = 'least-1'")[0] == 0
    log = worker.log()
    assert "permission denied" not in log
    assert "Heartbeat failed" not in log and "Listener:" not in log

