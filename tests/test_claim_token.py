"""A claim the database forgot is never taken for a new one: each claim's claim_token fences it.

Lost WAL after a failover (asynchronous replication) is simulated in the worker's own database:
the task row is written back, past the triggers as WAL replay writes, to what it was before the
worker's claim, and the task is claimed again under the same attempt number by the same worker
id, as issue 30 measured on a Patroni pair. The worker still runs the forgotten claim's handler:
its heartbeat and its completion carry the old token and are refused, it logs the task as lost
and goes on, and the new claim is left as it was.
"""

from __future__ import annotations

import re

import psycopg
from testkit.waiting import wait_until
from worker_support import Workers, enqueue, task_row, wait_for_execution, wait_for_status

WORKER = "fence-w"


def forget_the_claim_and_claim_again(pool: psycopg.Connection, task_id: int) -> dict[str, object]:
    """Write the task back to pending as before its claim (attempt, owner and token gone, as on a
    replica the claim's WAL never reached) and claim it again for WORKER, in one transaction so
    that the worker cannot claim it in between; the new claim's row."""
    with pool.transaction():
        # session_replication_role is this session's (SET LOCAL: this transaction's) only.
        pool.execute("SET LOCAL session_replication_role = replica")
        pool.execute(
            "UPDATE worker_tasks SET status = 'pending', attempt = attempt - 1, worker_id = NULL,"
            " claim_token = NULL, claimed_at = NULL, started_at = NULL, last_heartbeat_at = NULL"
            " WHERE id = %s",
            (task_id,),
        )
        pool.execute("SET LOCAL session_replication_role = origin")
        claimed = pool.execute(
            "SELECT id FROM claim_and_start_tasks('test_work', %s, 1)", (WORKER,)
        ).fetchall()
    assert claimed == [(task_id,)]
    return task_row(pool, task_id)


def test_a_worker_whose_claim_was_forgotten_does_not_complete_the_new_claim(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # The new claim is held by the test, which heartbeats nothing: no stale recovery in the
    # test's time may hand it back to the worker.
    pool.execute("UPDATE task_roles SET stale_threshold = interval '10 minutes' WHERE role = 'test_work'")
    worker = workers.start("test_work", WORKER, heartbeat_ms=200)
    task_id = enqueue(pool, "test_work", {"seconds": 2})
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)
    forgotten = task_row(pool, task_id)
    assert (forgotten["status"], forgotten["worker_id"], forgotten["attempt"]) == ("running", WORKER, 1)

    claimed_again = forget_the_claim_and_claim_again(pool, task_id)
    assert (claimed_again["worker_id"], claimed_again["attempt"]) == (WORKER, 1)
    assert claimed_again["claim_token"] != forgotten["claim_token"]

    # The forgotten claim's heartbeat (or, if the handler ends first, its completion) is refused.
    lost = re.compile(rf"Task {task_id}: heartbeat answered lost|Task {task_id} was lost")
    wait_until(lambda: lost.search(worker.log()), 15, f"the worker to log task {task_id} as lost", also=worker.describe)
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)
    row = task_row(pool, task_id)
    assert (row["status"], row["worker_id"], row["attempt"], row["claim_token"], row["result"]) == (
        "running", WORKER, 1, claimed_again["claim_token"], None
    ), "the new claim must be left as it was"
    assert f"Task {task_id} completed successfully" not in worker.log()

    # The new claim completes with its own token.
    pool.execute(
        "SELECT complete_task(%s, %s, 1, %s, '{\"by\": \"the new claim\"}')",
        (task_id, WORKER, claimed_again["claim_token"]),
    )
    assert task_row(pool, task_id)["result"] == {"by": "the new claim"}

    # The worker goes on: it runs the next task.
    assert worker.process.poll() is None, "the worker should not exit"
    next_id = enqueue(pool, "test_work", {"seconds": 0})
    wait_for_status(pool, next_id, "completed", 15, also=worker.describe)
    assert worker.process.poll() is None, "the worker should not exit"
