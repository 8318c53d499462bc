"""`pyworker --prefetch N`: a worker that holds several tasks and records completions in batches.

What prefetching must not change: every task completes exactly once, a crash re-runs the tasks
held and not recorded (never loses them), the tasks waiting in a batch stay heartbeated,
a SIGTERM hands back the tasks not begun, and a cancelled task waiting in a batch never runs.
"""

from __future__ import annotations

import signal
import time

import psycopg
from worker_support import (
    Workers,
    attempt_history,
    completions,
    executions,
    enqueue,
    fetch_one,
    recover_stale,
    task_row,
    wait_for,
    wait_for_execution,
    wait_for_status,
)


def count_completed(conn: psycopg.Connection) -> int:
    return fetch_one(conn, "SELECT count(*) FROM worker_tasks WHERE status = 'completed'")[0]


def test_two_prefetching_workers_drain_600_tasks_each_completed_once(
    pool: psycopg.Connection, workers: Workers
) -> None:
    ids = [enqueue(pool, "test_work", {}) for _ in range(600)]
    started = [workers.start("test_work", name, prefetch=50) for name in ("pre-a", "pre-b")]

    wait_for(lambda: count_completed(pool) == 600, 60, "600 completions", also=workers.describe)
    assert sorted(row[0] for row in pool.execute("SELECT task_id FROM test_completions")) == sorted(ids)
    assert fetch_one(pool, "SELECT count(*) FROM test_executions")[0] == 600
    assert fetch_one(pool, "SELECT count(*) FROM worker_task_attempts")[0] == 0
    # Claimed and started together: every task has a start, at its claim.
    assert fetch_one(
        pool, "SELECT count(*) FROM worker_tasks WHERE started_at IS DISTINCT FROM claimed_at"
    )[0] == 0
    for worker in started:
        log = worker.wait_for_log("Completed ")
        assert "Claimed " in log and " tasks (" in log, worker.describe()
        assert " WARNING " not in log and " ERROR " not in log, worker.describe()


def test_a_crash_reruns_the_held_tasks_not_recorded(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # One second each, one at a time: when the second runs, the third waits its turn, held.
    ids = [enqueue(pool, "test_work", {"seconds": 1, "record": False}) for _ in range(3)]
    victim = workers.start("test_work", "pre-crash", prefetch=3)
    wait_for_execution(pool, ids[1], 1, 10, also=victim.describe)
    # The first one's completion is recorded as soon as the worker has nothing else to do.
    wait_for_status(pool, ids[0], "completed", 5, also=victim.describe)

    victim.send(signal.SIGKILL)
    assert victim.wait(5) == -signal.SIGKILL
    # Running when the worker died, and never begun: the database has both running.
    assert [task_row(pool, task_id)["status"] for task_id in ids[1:]] == ["running", "running"]
    # Their last heartbeats were a few milliseconds apart: they may go stale in turns.
    recovered = [recover_stale(pool)]

    def all_recovered() -> bool:
        recovered.append(fetch_one(pool, "SELECT recover_stale_tasks()")[0])
        return sum(recovered) == 2

    wait_for(all_recovered, 10, "the two held tasks to be recovered", interval=0.2)

    workers.start("test_work", "pre-rescue", prefetch=3)
    for task_id in ids[1:]:
        row = wait_for_status(pool, task_id, "completed", 20, also=workers.describe)
        assert (row["worker_id"], row["attempt"]) == ("pre-rescue", 2)
    # The one cut short ran again: a duplicate execution, never a lost task; the one never
    # begun ran once, though the crash charged it an attempt.
    assert executions(pool, ids[0]) == [(1, "pre-crash")]
    assert executions(pool, ids[1]) == [(1, "pre-crash"), (2, "pre-rescue")]
    assert executions(pool, ids[2]) == [(2, "pre-rescue")]
    assert attempt_history(pool, ids[2]) == [(1, "pre-crash", "retried")]


def test_tasks_waiting_in_a_batch_are_heartbeated(
    pool: psycopg.Connection, workers: Workers
) -> None:
    ids = [enqueue(pool, "test_work", {"seconds": 3}) for _ in range(2)]
    worker = workers.start("test_work", "pre-beat", prefetch=2, heartbeat_ms=200)
    wait_for_execution(pool, ids[0], 1, 10, also=worker.describe)

    def waiting_beat() -> object:
        return task_row(pool, ids[1])["last_heartbeat_at"]

    first = waiting_beat()
    # Past the role's 2 s stale threshold: the waiting task must not look stale.
    time.sleep(2.5)
    assert waiting_beat() > first
    assert fetch_one(pool, "SELECT recover_stale_tasks()") == (0,)
    assert executions(pool, ids[1]) == []
    wait_for_status(pool, ids[1], "completed", 15, also=worker.describe)


def test_sigterm_finishes_the_running_task_and_hands_back_the_rest(
    pool: psycopg.Connection, workers: Workers
) -> None:
    ids = [enqueue(pool, "test_work", {"seconds": 1}) for _ in range(4)]
    worker = workers.start("test_work", "pre-term", prefetch=4, grace=10)
    wait_for_execution(pool, ids[0], 1, 10, also=worker.describe)

    worker.send(signal.SIGTERM)
    assert worker.wait(10) == 0, worker.describe()
    assert task_row(pool, ids[0])["status"] == "completed"
    assert completions(pool, ids[0]) == [(1, "pre-term")]
    for task_id in ids[1:]:
        row = task_row(pool, task_id)
        assert (row["status"], row["retry_count"], row["worker_id"]) == ("pending", 0, None)
        assert attempt_history(pool, task_id) == [(1, "pre-term", "released")]
        assert executions(pool, task_id) == []
    log = worker.log()
    assert f"Task {ids[3]} handed back: the worker is stopping" in log


def test_a_task_cancelled_while_it_waits_in_a_batch_never_runs(
    pool: psycopg.Connection, workers: Workers
) -> None:
    first = enqueue(pool, "test_work", {"seconds": 2})
    waiting = enqueue(pool, "test_work", {})
    worker = workers.start("test_work", "pre-cancel", prefetch=2, heartbeat_ms=200)
    wait_for_execution(pool, first, 1, 10, also=worker.describe)

    assert fetch_one(pool, "SELECT status FROM cancel_task(%s)", (waiting,)) == ("running",)
    wait_for_status(pool, waiting, "cancelled", 10, also=worker.describe)
    wait_for_status(pool, first, "completed", 10, also=worker.describe)
    assert executions(pool, waiting) == []
    assert attempt_history(pool, waiting) == [(1, "pre-cancel", "cancelled")]
