"""`pyworker tasks complete|delete|watch`: an operator's completion without a worker
(mark_task_completed), a deletion by id (delete_task), and the stream of task changes followed
from the CLI. A worker that held the task is fenced out: its handler is aborted, its completion
is refused (TaskLost), the operator's result stands. (SQL behaviour: sql_tests/67 and 68.)"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator

import psycopg
import pytest
from worker_support import Run, Workers, enqueue, fetch_one, run_json, wait_for, wait_for_execution, wait_for_status

from pyworker.db import Database
from pyworker.errors import TaskLost


def task_row(conn: psycopg.Connection, task_id: int) -> tuple[str, object, object]:
    return fetch_one(conn, "SELECT status, result, worker_id FROM worker_tasks WHERE id = %s", (task_id,))


def test_complete_a_pending_task_by_hand_with_a_result(run: Run, pool: psycopg.Connection) -> None:
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    done = run("tasks", "complete", str(task_id), "--result", '{"by": "hand", "price": 1.50}')
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == f"task {task_id} completed by hand"
    assert task_row(pool, task_id) == ("completed", {"by": "hand", "price": 1.5}, None)

    again = run("tasks", "complete", str(task_id))
    assert again.exit_code == 1
    assert f"task {task_id} is completed and cannot be marked completed" in again.output
    assert task_row(pool, task_id)[1] == {"by": "hand", "price": 1.5}


def test_complete_refuses_bad_input_and_changes_nothing(run: Run, pool: psycopg.Connection) -> None:
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    bad_json = run("tasks", "complete", str(task_id), "--result", "{bad")
    assert bad_json.exit_code == 2
    assert "Invalid value for --result: not JSON" in bad_json.output
    unknown = run("tasks", "complete", "999999999")
    assert unknown.exit_code == 2 and "task 999999999 does not exist" in unknown.output
    assert run("tasks", "complete", "x").exit_code == 2
    assert task_row(pool, task_id) == ("pending", None, None)


def test_delete_a_task_by_id(run: Run, pool: psycopg.Connection) -> None:
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    deleted = run_json(run, "tasks", "delete", str(task_id))
    assert (deleted["id"], deleted["status"]) == (task_id, "pending")
    assert fetch_one(pool, "SELECT count(*) FROM worker_tasks WHERE id = %s", (task_id,))[0] == 0
    again = run("tasks", "delete", str(task_id))
    assert again.exit_code == 2 and f"task {task_id} does not exist" in again.output


def test_a_worker_cannot_complete_a_task_an_operator_completed(db_url: str, pool: psycopg.Connection) -> None:
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    worker = Database(db_url)
    try:
        [task] = worker.claim_and_start_tasks("test_outcome", "by-hand-w1", 1)
        assert task.id == task_id
        pool.execute("SELECT mark_task_completed(%s, '{\"by\": \"operator\"}')", (task_id,))
        completion = {"task_id": task.id, "attempt": task.attempt, "claim_token": task.claim_token, "result": {"by": "worker"}}
        assert worker.complete_tasks("by-hand-w1", [completion]) == {task_id: "lost"}
        with pytest.raises(TaskLost):
            worker.fail_task(task, "too late")
    finally:
        worker.close()
    assert task_row(pool, task_id) == ("completed", {"by": "operator"}, "by-hand-w1")


def test_completing_a_running_task_by_hand_aborts_its_handler(
    run: Run, pool: psycopg.Connection, workers: Workers
) -> None:
    pool.execute("UPDATE task_roles SET stale_threshold = '10 minutes' WHERE role = 'test_work'")
    worker = workers.start("test_work", "by-hand-running", heartbeat_ms=120_000)
    task_id = enqueue(pool, "test_work", {"seconds": 600})
    wait_for_execution(pool, task_id, 1, 15, also=worker.describe)

    done = run("tasks", "complete", str(task_id), "--result", '{"by": "hand"}')
    assert done.exit_code == 0, done.output
    assert "worker by-hand-running, which held it, can no longer complete or fail it" in done.stdout

    reason = lambda: fetch_one(pool, "SELECT abort_reason FROM test_executions WHERE task_id = %s", (task_id,))[0]  # noqa: E731
    wait_for(reason, 20, "the handler to be aborted", also=worker.describe)
    assert task_row(pool, task_id) == ("completed", {"by": "hand"}, "by-hand-running")
    assert fetch_one(pool, "SELECT count(*) FROM test_completions WHERE task_id = %s", (task_id,))[0] == 0
    # The worker goes on with the next task.
    other = enqueue(pool, "test_work", {"seconds": 0})
    wait_for_status(pool, other, "completed", 20, also=worker.describe)


@pytest.fixture
def watching(db_url: str) -> Iterator[queue.Queue[str]]:
    """`pyworker tasks watch --json` on the test's database: its lines, as they come."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pyworker", "--database-url", db_url, "tasks", "watch", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        yield lines
    finally:
        process.terminate()
        process.wait(10)


def test_watch_prints_every_change_as_it_happens(watching: queue.Queue[str], pool: psycopg.Connection) -> None:
    wait_for(
        lambda: fetch_one(pool, "SELECT count(*) FROM task_change_followers WHERE expires_at > now()")[0], 60,
        "tasks watch to take its lease",
    )
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    pool.execute("SELECT mark_task_completed(%s)", (task_id,))
    pool.execute("SELECT delete_task(%s)", (task_id,))
    heard = [json.loads(watching.get(timeout=30)) for _ in range(3)]
    assert heard == [
        {"event": "enqueued", "role": "test_outcome", "from": None, "to": "pending", "ids": [task_id]},
        {"event": "status", "role": "test_outcome", "from": "pending", "to": "completed", "ids": [task_id]},
        {"event": "deleted", "role": "test_outcome", "from": "completed", "to": None, "ids": [task_id]},
    ]
