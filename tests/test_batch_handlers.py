"""Batch handlers (pyworker.admin.batch_handlers): with --batch-runtime one call gets the tasks
of a claim and answers an outcome for each; one task's bad outcome ends that task alone; a
cancel aborts its own task and the call goes on for the others; without the batch runtime the
same handler gets one task a call. Real `python -m pyworker` processes against a real database.
"""

from __future__ import annotations

import signal

import psycopg
import pytest
from test_worker_batch_runtime import all_completed, enqueue_many
from worker_support import Workers, enqueue, task_row, wait_for, wait_for_status

HANDLERS = "worker_batch_many_handlers"
BATCH = ("--batch-runtime",)
ROLE = "test_batch_many"


@pytest.fixture
def many_role(pool: psycopg.Connection) -> psycopg.Connection:
    pool.execute("INSERT INTO task_roles (role, max_retries) VALUES (%s, 0)", (ROLE,))
    return pool


def test_one_call_gets_the_tasks_of_a_claim(many_role: psycopg.Connection, workers: Workers) -> None:
    pool = many_role
    task_ids = enqueue_many(pool, ROLE, 40)
    worker = workers.start(ROLE, "many-drain", ready=False, concurrency=50, handlers=HANDLERS, args=BATCH)
    wait_for(lambda: all_completed(pool, task_ids), 30, "the 40 tasks to complete", also=worker.describe)
    # Enqueued before the worker started, the 40 came in its first claim, to one call.
    assert {task_row(pool, task_id)["result"]["size"] for task_id in task_ids} == {40}
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_each_task_ends_with_its_own_outcome(many_role: psycopg.Connection, workers: Workers) -> None:
    pool = many_role
    fine = enqueue_many(pool, ROLE, 5)
    failed = enqueue(pool, ROLE, {"fail": "boom"})
    permanent = enqueue(pool, ROLE, {"permanent": "no such address"})
    snoozed = enqueue(pool, ROLE, {"snooze": 3600})
    skipped = enqueue(pool, ROLE, {"skip": True})
    worker = workers.start(ROLE, "many-outcomes", ready=False, concurrency=20, handlers=HANDLERS, args=BATCH)
    wait_for(lambda: all_completed(pool, fine), 15, "the fine tasks to complete", also=worker.describe)
    assert wait_for_status(pool, failed, "failed", 10, also=worker.describe)["error_message"] == "ValueError: boom"
    row = wait_for_status(pool, permanent, "failed", 10, also=worker.describe)
    assert row["error_message"] == "PermanentError: no such address"
    row = wait_for_status(pool, skipped, "failed", 10, also=worker.describe)
    assert row["error_message"] == (
        "NoOutcome: the batch handler's answer (a dict by task id) has no entry for this task"
    )
    row = wait_for_status(pool, snoozed, "pending", 10, also=worker.describe)
    assert row["retry_count"] == 0
    assert pool.execute("SELECT scheduled_for > now() + interval '50 minutes' FROM worker_tasks WHERE id = %s",
                        (snoozed,)).fetchone()[0]
    assert {task_row(pool, task_id)["result"]["size"] for task_id in fine} == {9}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"explode": True}, "RuntimeError: the whole call failed"),
        ({"short": True}, "NoOutcome: the batch handler answered a list of 2 for 3 tasks: it must return a list"
                          " with one outcome per task, in their order, or a dict by task id"),
    ],
)
def test_a_call_that_raises_or_answers_badly_fails_its_tasks_saying_why(
    many_role: psycopg.Connection, workers: Workers, payload: dict[str, bool], message: str
) -> None:
    pool = many_role
    task_ids = [*enqueue_many(pool, ROLE, 2), enqueue(pool, ROLE, payload)]
    worker = workers.start(ROLE, "many-bad", ready=False, concurrency=10, handlers=HANDLERS, args=BATCH)
    for task_id in task_ids:
        assert wait_for_status(pool, task_id, "failed", 15, also=worker.describe)["error_message"] == message


def test_a_cancel_aborts_its_own_task_and_the_call_goes_on(many_role: psycopg.Connection, workers: Workers) -> None:
    pool = many_role
    task_ids = enqueue_many(pool, ROLE, 4, '{"seconds": 3}')
    worker = workers.start(ROLE, "many-cancel", ready=False, heartbeat_ms=200, concurrency=10, handlers=HANDLERS,
                           args=BATCH)
    wait_for_status(pool, task_ids[0], "running", 10, also=worker.describe)
    pool.execute("SELECT cancel_task(%s)", (task_ids[0],))
    row = wait_for_status(pool, task_ids[0], "cancelled", 5, also=worker.describe)
    assert row["error_message"] == "cancelled by an operator while running"
    wait_for(lambda: all_completed(pool, task_ids[1:]), 15, "the others to complete", also=worker.describe)


def test_without_the_batch_runtime_it_gets_one_task_a_call(many_role: psycopg.Connection, workers: Workers) -> None:
    pool = many_role
    task_ids = enqueue_many(pool, ROLE, 6)
    failed = enqueue(pool, ROLE, {"fail": "alone"})
    worker = workers.start(ROLE, "many-threaded", ready=False, concurrency=4, handlers=HANDLERS)
    wait_for(lambda: all_completed(pool, task_ids), 15, "the tasks to complete", also=worker.describe)
    assert {task_row(pool, task_id)["result"]["size"] for task_id in task_ids} == {1}
    assert wait_for_status(pool, failed, "failed", 10, also=worker.describe)["error_message"] == "ValueError: alone"


def test_the_decorator_refuses_a_payload_type_and_registers_nothing() -> None:
    from pyworker.admin.batch_handlers import batch_handler
    from pyworker.errors import ConfigurationError
    from pyworker.handlers import Registry

    target = Registry()
    with pytest.raises(ConfigurationError, match=r"batch_handler\('typed_batch'\) takes no payload_type"):
        batch_handler("typed_batch", target=target, payload_type=dict)
    assert target.get("typed_batch") is None


def test_outside_a_worker_it_runs_one_task_a_call() -> None:
    from pyworker.admin.batch_handlers import batch_handler
    from pyworker.handlers import Registry
    from pyworker.testing import make_task, run_handler

    target = Registry()
    calls: list[int] = []

    @batch_handler("plain_batch", target=target)
    def sizes(tasks: list[object]) -> list[dict[str, int]]:
        calls.append(len(tasks))
        return [{"size": len(tasks)}]

    outcome = run_handler("plain_batch", make_task("plain_batch"), registry=target)
    assert (outcome.status, outcome.result, calls) == ("completed", {"size": 1}, [1])
