"""`pyworker --batch-runtime`: a role whose handler is async runs on one event loop that claims
up to the role's share a call and records the outcomes of a turn of the loop together, and it
keeps the worker's contract: the cap, the fence of each claim, cancels and run timeouts, a
graceful stop, one failure failing one attempt, and a sync role beside it on its threads. Real
`python -m pyworker` processes against a real database.
"""

from __future__ import annotations

import re
import signal

import psycopg
import pytest
from worker_support import Workers, enqueue, fetch_one, task_row, wait_for, wait_for_status

from pyworker.worker import ABORT_WIND_DOWN_SECONDS

HANDLERS = "worker_batch_handlers"
BATCH = ("--batch-runtime",)
CLAIMED = re.compile(r"Claimed (\d+) tasks")


@pytest.fixture
def batch_role(pool: psycopg.Connection) -> psycopg.Connection:
    pool.execute("INSERT INTO task_roles (role, max_retries) VALUES ('test_batch', 0)")
    return pool


def enqueue_many(conn: psycopg.Connection, role: str, count: int, payload: str = "{}") -> list[int]:
    return [
        row[0]
        for row in conn.execute(
            "SELECT id FROM enqueue_tasks((SELECT jsonb_agg(jsonb_build_object('role', %s::text, 'payload', %s::jsonb))"
            " FROM generate_series(1, %s)))",
            (role, payload, count),
        ).fetchall()
    ]


def statuses(conn: psycopg.Connection, task_ids: list[int]) -> dict[str, int]:
    rows = conn.execute(
        "SELECT status, count(*) FROM worker_tasks WHERE id = ANY(%s) GROUP BY status", (task_ids,)
    ).fetchall()
    return dict(rows)


def all_completed(conn: psycopg.Connection, task_ids: list[int]) -> bool:
    return statuses(conn, task_ids) == {"completed": len(task_ids)}


def test_a_batch_role_claims_many_a_call_and_runs_them_within_its_share(
    batch_role: psycopg.Connection, workers: Workers
) -> None:
    pool = batch_role
    task_ids = enqueue_many(pool, "test_batch", 300, '{"seconds": 0.3}')
    worker = workers.start("test_batch=50", "batch-drain", ready=False, concurrency=50, handlers=HANDLERS, args=BATCH)
    wait_for(lambda: all_completed(pool, task_ids), 30, "the 300 tasks to complete", also=worker.describe)
    results = [task_row(pool, task_id)["result"] for task_id in task_ids]
    # Each ran on the event loop, in its own task's log context, never more than the share at once.
    assert {result["thread"] for result in results} == {"asyncio"}
    assert [result["context_task_id"] for result in results] == task_ids
    most = max(result["most_in_flight"] for result in results)
    assert 1 < most <= 50, most
    claims = [int(count) for count in CLAIMED.findall(worker.log())]
    assert max(claims) == 50 and sum(claims) <= 300, claims
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    assert fetch_one(pool, "SELECT count(*) FROM task_workers WHERE worker_id = 'batch-drain'")[0] == 0


def test_a_failing_handler_fails_its_own_attempt_only(batch_role: psycopg.Connection, workers: Workers) -> None:
    pool = batch_role
    task_ids = enqueue_many(pool, "test_batch", 20)
    culprit = enqueue(pool, "test_batch", {"fail": "boom"})
    worker = workers.start("test_batch", "batch-fail", concurrency=30, handlers=HANDLERS, args=BATCH)
    row = wait_for_status(pool, culprit, "failed", 15, also=worker.describe)
    assert row["error_message"] == "ValueError: boom"
    wait_for(lambda: all_completed(pool, task_ids), 15, "the others to complete", also=worker.describe)


def test_a_claim_taken_over_is_not_completed_by_the_old_one(batch_role: psycopg.Connection, workers: Workers) -> None:
    pool = batch_role
    # A heartbeat far off: only the fence of complete_tasks stands between the old claim and the row.
    pool.execute("UPDATE task_roles SET stale_threshold = '10 minutes' WHERE role = 'test_batch'")
    task_id = enqueue(pool, "test_batch", {"seconds": 2})
    worker = workers.start(
        "test_batch", "batch-fenced", heartbeat_ms=120_000, concurrency=4, handlers=HANDLERS, args=BATCH
    )
    wait_for_status(pool, task_id, "running", 10, also=worker.describe)
    # Another claim takes the task over behind the worker's back (as a failover that lost the
    # claim would leave it): another worker, another claim token.
    pool.execute(
        "UPDATE worker_tasks SET worker_id = 'someone-else', claim_token = gen_random_uuid() WHERE id = %s",
        (task_id,),
    )
    worker.wait_for_log(f"Task {task_id} was lost before its outcome was recorded", timeout=15)
    row = task_row(pool, task_id)
    assert (row["status"], row["worker_id"], row["result"]) == ("running", "someone-else", None)


def test_a_cancel_and_a_run_timeout_abort_only_their_own_attempt(
    batch_role: psycopg.Connection, workers: Workers
) -> None:
    pool = batch_role
    pool.execute("UPDATE task_roles SET run_timeout = interval '2 seconds' WHERE role = 'test_batch'")
    cancelled, timed_out = (enqueue(pool, "test_batch", {"seconds": 60}) for _ in range(2))
    others = enqueue_many(pool, "test_batch", 10, '{"seconds": 1}')
    worker = workers.start(
        "test_batch", "batch-aborts", heartbeat_ms=200, concurrency=20, handlers=HANDLERS, args=BATCH
    )
    wait_for_status(pool, cancelled, "running", 10, also=worker.describe)
    pool.execute("SELECT cancel_task(%s)", (cancelled,))
    row = wait_for_status(pool, cancelled, "cancelled", 5, also=worker.describe)
    assert row["error_message"] == "cancelled by an operator while running"
    row = wait_for_status(pool, timed_out, "failed", 10, also=worker.describe)
    assert row["error_message"] == "timed out after 2 s"
    assert f"Task {timed_out} passed its run timeout of 2 s" in worker.log()
    assert all_completed(pool, others)


def test_sigterm_finishes_what_ends_in_the_grace_and_hands_back_the_rest(
    batch_role: psycopg.Connection, workers: Workers
) -> None:
    pool = batch_role
    short = enqueue_many(pool, "test_batch", 5, '{"seconds": 1}')
    long = enqueue(pool, "test_batch", {"seconds": 60})
    worker = workers.start("test_batch", "batch-term", grace=3, concurrency=10, handlers=HANDLERS, args=BATCH)
    wait_for_status(pool, long, "running", 10, also=worker.describe)
    worker.send(signal.SIGTERM)
    assert worker.wait(3 + ABORT_WIND_DOWN_SECONDS + 10) == 0
    assert all_completed(pool, short)
    row = task_row(pool, long)
    assert (row["status"], row["retry_count"], row["worker_id"]) == ("pending", 0, None)
    assert f"Task {long} handed back: the worker is stopping" in worker.log()
    assert fetch_one(pool, "SELECT count(*) FROM task_workers WHERE worker_id = 'batch-term'")[0] == 0


def test_a_sync_role_runs_on_its_threads_beside_a_batch_role(batch_role: psycopg.Connection, workers: Workers) -> None:
    pool = batch_role
    batch_ids = enqueue_many(pool, "test_batch", 100, '{"seconds": 0.1}')
    sync_ids = [enqueue(pool, "test_work", {"seconds": 0.2}) for _ in range(6)]
    worker = workers.start(
        "test_batch=20 test_work=2", "batch-mixed", ready=False, concurrency=22, handlers=HANDLERS, args=BATCH
    )
    wait_for(lambda: all_completed(pool, batch_ids + sync_ids), 30, "both roles' tasks to complete", also=worker.describe)
    assert max(task_row(pool, task_id)["result"]["most_in_flight"] for task_id in batch_ids) <= 20
    concurrent_sync = fetch_one(
        pool,
        "SELECT max(n) FROM (SELECT count(*) AS n FROM test_executions a JOIN test_executions b"
        " ON b.started_at <= a.started_at AND b.ended_at > a.started_at GROUP BY a.task_id) counts",
    )[0]
    assert concurrent_sync <= 2
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


@pytest.mark.parametrize(
    ("roles", "concurrency", "message"),
    [
        ("test_work", 2, "--batch-runtime runs async handlers, and no role of the worker (test_work) has one"),
        ("test_batch test_work", 4, "the async roles (test_batch) take 4 of the --concurrency 4, leaving none for test_work"),
    ],
)
def test_the_batch_runtime_refuses_what_it_cannot_run(
    batch_role: psycopg.Connection, workers: Workers, roles: str, concurrency: int, message: str
) -> None:
    code, log = workers.run_to_exit(roles, f"batch-refused-{concurrency}", concurrency=concurrency, handlers=HANDLERS, args=BATCH)
    assert code != 0, log
    assert message in log
    assert fetch_one(batch_role, "SELECT count(*) FROM task_workers WHERE worker_id LIKE 'batch-refused%'")[0] == 0


def test_an_idle_batch_role_wakes_on_the_enqueue_s_notification(batch_role: psycopg.Connection, workers: Workers) -> None:
    pool = batch_role
    # Polling every two minutes: only the notification can wake it in time.
    worker = workers.start("test_batch", "batch-wake", poll_ms=120_000, concurrency=10, handlers=HANDLERS, args=BATCH)
    wait_for(lambda: fetch_one(pool, "SELECT count(*) FROM task_worker_waits WHERE worker_id = 'batch-wake'")[0], 10,
             "the idle worker to ask for a wake-up", also=worker.describe)
    task_id = enqueue(pool, "test_batch")
    wait_for_status(pool, task_id, "completed", 10, also=worker.describe)
