"""The worker as operators run it: real `python -m pyworker` processes against a real database.

Draining with several workers, crashes (kill -9), SIGTERM and its grace period, a worker frozen
(SIGSTOP) past its stale threshold, cancellation, the NOTIFY wake-up and lost connections. The
handlers are in worker_handlers.py; each test waits for database states with deadlines.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import time

import psycopg
from pyworker.config import POOLED_ENVVAR
from worker_support import (
    Workers,
    attempt_history,
    completions,
    enqueue,
    fetch_one,
    recover_stale,
    task_row,
    wait_for,
    wait_for_execution,
    wait_for_status,
)


def registered_workers(conn: psycopg.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT worker_id FROM task_workers ORDER BY worker_id")]


def test_three_workers_drain_2000_tasks_each_completed_exactly_once(
    pool: psycopg.Connection, workers: Workers
) -> None:
    names = ["drain-a", "drain-b", "drain-c"]
    started = [workers.start("test_work", name, ready=False) for name in names]
    for worker in started:
        worker.wait_for_log(f"Starting worker {worker.worker_id}")
    specs = [{"role": "test_work", "payload": {"n": n}} for n in range(2000)]
    ids = [
        row[0]
        for row in pool.execute("SELECT id FROM enqueue_tasks(%s::jsonb)", (json.dumps(specs),))
    ]
    assert len(ids) == 2000

    wait_for(
        lambda: fetch_one(
            pool, "SELECT count(*) = 2000 FROM worker_tasks WHERE status = 'completed'"
        )[0],
        60,
        "all 2000 tasks to be completed",
        interval=0.2,
        also=workers.describe,
    )

    tasks = pool.execute(
        "SELECT count(*), min(attempt), max(attempt), max(retry_count),"
        "       count(*) FILTER (WHERE result->>'worker_id' = worker_id)"
        " FROM worker_tasks"
    ).fetchone()
    assert tasks == (2000, 1, 1, 0, 2000)
    # The handler's own record: one execution and one completion per task, by the task's worker.
    executions = pool.execute(
        "SELECT count(*), count(DISTINCT task_id), max(attempt), count(ended_at)"
        " FROM test_executions"
    ).fetchone()
    assert executions == (2000, 2000, 1, 2000)
    completed = pool.execute(
        "SELECT count(*) FROM test_completions c JOIN worker_tasks t"
        "  ON t.id = c.task_id AND t.worker_id = c.worker_id AND t.attempt = c.attempt"
    ).fetchone()[0]
    assert completed == 2000
    assert sorted(row[0] for row in pool.execute("SELECT task_id FROM test_completions")) == sorted(
        ids
    )
    assert pool.execute("SELECT count(*) FROM worker_task_attempts").fetchone()[0] == 0
    # Every worker took part.
    per_worker = dict(
        pool.execute("SELECT worker_id, count(*) FROM worker_tasks GROUP BY worker_id").fetchall()
    )
    assert sorted(per_worker) == names, per_worker
    assert all(count > 0 for count in per_worker.values()), per_worker
    for worker in started:
        log = worker.log()
        assert " WARNING " not in log and " ERROR " not in log, worker.describe()


def test_a_worker_killed_mid_task_is_recovered_and_another_completes_it(
    pool: psycopg.Connection, workers: Workers
) -> None:
    victim = workers.start("test_work", "crash-a")
    task_id = enqueue(pool, "test_work", {"seconds": 60, "retry_seconds": 0})
    wait_for_execution(pool, task_id, 1, 10, also=victim.describe)

    victim.send(signal.SIGKILL)
    assert victim.wait(5) == -signal.SIGKILL
    rescuer = workers.start("test_work", "crash-b")
    assert recover_stale(pool) == 1

    row = wait_for_status(pool, task_id, "completed", 10, also=workers.describe)
    assert (row["worker_id"], row["attempt"], row["retry_count"]) == ("crash-b", 2, 1)
    assert row["result"] == {"worker_id": "crash-b", "attempt": 2}
    # Nothing lost, nothing completed twice: the killed attempt started and never finished.
    assert completions(pool, task_id) == [(2, "crash-b")]
    executions = pool.execute(
        "SELECT attempt, worker_id, ended_at IS NOT NULL FROM test_executions WHERE task_id = %s"
        " ORDER BY attempt",
        (task_id,),
    ).fetchall()
    assert executions == [(1, "crash-a", False), (2, "crash-b", True)]
    assert attempt_history(pool, task_id) == [(1, "crash-a", "retried")]
    rescuer.wait_for_log(f"Task {task_id} completed successfully")


def test_without_a_tick_a_live_worker_of_the_role_recovers_a_killed_workers_task(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # No pg_cron job and no `pyworker scheduler` reach a test's database, and nothing here calls
    # recover_stale_tasks(): the rescuer's heartbeat thread recovers the task itself.
    victim = workers.start("test_work", "reap-a")
    task_id = enqueue(pool, "test_work", {"seconds": 60, "retry_seconds": 0})
    wait_for_execution(pool, task_id, 1, 10, also=victim.describe)

    victim.send(signal.SIGKILL)
    assert victim.wait(5) == -signal.SIGKILL
    rescuer = workers.start("test_work", "reap-b")

    row = wait_for_status(pool, task_id, "completed", 20, also=workers.describe)
    assert (row["worker_id"], row["attempt"], row["retry_count"]) == ("reap-b", 2, 1)
    assert completions(pool, task_id) == [(2, "reap-b")]
    assert attempt_history(pool, task_id) == [(1, "reap-a", "retried")]
    rescuer.wait_for_log("Recovered 1 stale task(s) of role test_work")
    assert fetch_one(
        pool, "SELECT total FROM task_metric_totals WHERE role = 'test_work' AND counter = 'stale_recovered'"
    ) == (1,)
    assert fetch_one(pool, "SELECT count(*) FROM task_role_recoveries WHERE role = 'test_work'") == (1,)


def test_sigterm_lets_the_running_task_finish_within_the_grace_period(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_work", "term-a", grace=10)
    task_id = enqueue(pool, "test_work", {"seconds": 1})
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)

    sent = time.monotonic()
    worker.send(signal.SIGTERM)
    assert worker.wait(10) == 0, worker.describe()
    assert time.monotonic() - sent < 10

    row = task_row(pool, task_id)
    assert (row["status"], row["attempt"], row["worker_id"]) == ("completed", 1, "term-a")
    assert completions(pool, task_id) == [(1, "term-a")]
    assert registered_workers(pool) == []
    log = worker.log()
    assert "Received SIGTERM: finishing the tasks in flight" in log
    assert log.index("Received SIGTERM") < log.index(f"Task {task_id} completed successfully")
    assert "Worker term-a stopped" in log


def test_sigterm_hands_back_a_task_that_outlasts_the_grace_period(
    pool: psycopg.Connection, workers: Workers
) -> None:
    grace = 1.0
    worker = workers.start("test_work", "term-b", grace=grace)
    task_id = enqueue(pool, "test_work", {"seconds": 30})
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)

    sent = time.monotonic()
    worker.send(signal.SIGTERM)
    assert worker.wait(grace + 5) == 0, worker.describe()
    elapsed = time.monotonic() - sent
    assert grace <= elapsed < grace + 3, elapsed

    row = task_row(pool, task_id)
    # Handed back: ready again, no retry spent, nobody's.
    assert (row["status"], row["retry_count"], row["worker_id"]) == ("pending", 0, None)
    assert row["scheduled_for"] <= fetch_one(pool, "SELECT taskpool_now()")[0]
    assert attempt_history(pool, task_id) == [(1, "term-b", "released")]
    assert fetch_one(
        pool, "SELECT abort_reason FROM test_executions WHERE task_id = %s", (task_id,)
    ) == ("shutdown",)
    assert completions(pool, task_id) == []
    assert registered_workers(pool) == []
    assert f"Task {task_id} handed back: the worker is stopping" in worker.log()


def test_sigterm_while_the_worker_is_still_connecting_stops_it_cleanly(workers: Workers) -> None:
    # Nothing listens on the port a closed socket held: the worker keeps retrying its connect.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    worker = workers.start(
        "test_work", "term-early", ready=False, database_url=f"postgresql://postgres@127.0.0.1:{port}/taskpool"
    )
    worker.wait_for_log("connect: ")
    worker.send(signal.SIGTERM)
    # Caught, not the default action (exit 143): the start-up's retry gives up after its pause.
    assert worker.wait(15) == 0, worker.describe()
    log = worker.log()
    assert "Received SIGTERM" in log
    assert "Worker term-early stopped before it registered" in log


def test_a_second_sigterm_exits_at_once_leaving_the_task_running(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_work", "term-c", grace=30)
    task_id = enqueue(pool, "test_work", {"seconds": 30})
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)

    worker.send(signal.SIGTERM)
    worker.wait_for_log("Received SIGTERM: finishing the tasks in flight")
    sent = time.monotonic()
    worker.send(signal.SIGTERM)
    code = worker.wait(5)
    assert code not in (0, None), worker.describe()
    assert time.monotonic() - sent < 2
    assert "Received SIGTERM again: exiting now" in worker.log()

    # The attempt is left to stale recovery, as after a crash.
    row = task_row(pool, task_id)
    assert (row["status"], row["worker_id"], row["attempt"]) == ("running", "term-c", 1)
    assert completions(pool, task_id) == []


def test_a_frozen_worker_loses_its_task_and_drops_its_result(
    pool: psycopg.Connection, workers: Workers
) -> None:
    frozen = workers.start("test_work", "frozen-a", heartbeat_ms=200)
    task_id = enqueue(pool, "test_work", {"seconds": 10, "retry_seconds": 0.2})
    wait_for_execution(pool, task_id, 1, 10, also=frozen.describe)

    frozen.send(signal.SIGSTOP)
    try:
        assert recover_stale(pool) == 1
        workers.start("test_work", "frozen-b")
        row = wait_for_status(pool, task_id, "completed", 10, also=workers.describe)
        assert (row["worker_id"], row["attempt"]) == ("frozen-b", 2)
    finally:
        frozen.send(signal.SIGCONT)

    frozen.wait_for_log(f"Task {task_id}: heartbeat answered lost: aborting the handler")
    frozen.wait_for_log(f"Task {task_id} was lost (taken_by_another_worker): its result is dropped")
    assert fetch_one(
        pool,
        "SELECT abort_reason FROM test_executions WHERE task_id = %s AND attempt = 1",
        (task_id,),
    ) == ("taken_by_another_worker",)
    # Exactly one completion, the second attempt's; the task row is untouched by the first.
    assert completions(pool, task_id) == [(2, "frozen-b")]
    row = task_row(pool, task_id)
    assert (row["status"], row["worker_id"], row["attempt"]) == ("completed", "frozen-b", 2)
    assert row["result"] == {"worker_id": "frozen-b", "attempt": 2}
    assert frozen.process.poll() is None, "the thawed worker should go on serving"


def test_a_frozen_worker_that_finishes_before_any_heartbeat_has_its_completion_refused(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # No heartbeat in the test's time: after SIGCONT the handler finishes and the worker calls
    # complete_task for an attempt that is no longer its own. A worker refuses to start with a
    # heartbeat slower than its role's stale threshold: the threshold drops once it runs. It does
    # not LISTEN (pooled, no listen URL): a worker that listens is told of the recovery and aborts
    # the handler at once (tests/test_worker_notified_aborts.py).
    pool.execute("UPDATE task_roles SET stale_threshold = interval '2 minutes' WHERE role = 'test_work'")
    frozen = workers.start("test_work", "late-a", heartbeat_ms=60_000, extra_env={POOLED_ENVVAR: "1"})
    pool.execute("UPDATE task_roles SET stale_threshold = interval '2 seconds' WHERE role = 'test_work'")
    task_id = enqueue(pool, "test_work", {"seconds": 3, "retry_seconds": 0.2, "record": False})
    wait_for_execution(pool, task_id, 1, 10, also=frozen.describe)

    frozen.send(signal.SIGSTOP)
    try:
        assert recover_stale(pool) == 1
        workers.start("test_work", "late-b")
        row = wait_for_status(pool, task_id, "completed", 10, also=workers.describe)
        assert (row["worker_id"], row["attempt"]) == ("late-b", 2)
    finally:
        frozen.send(signal.SIGCONT)

    frozen.wait_for_log(f"Task {task_id} was lost before its outcome was recorded")
    # The first attempt's handler did finish (no abort): its completion was what got refused.
    assert fetch_one(
        pool,
        "SELECT ended_at IS NOT NULL, abort_reason FROM test_executions"
        " WHERE task_id = %s AND attempt = 1",
        (task_id,),
    ) == (True, None)
    row = task_row(pool, task_id)
    assert (row["status"], row["worker_id"], row["attempt"]) == ("completed", "late-b", 2)
    assert row["result"] == {"worker_id": "late-b", "attempt": 2}
    assert f"Task {task_id} completed successfully" not in frozen.log()


def test_cancelling_a_running_task_aborts_its_handler(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_work", "cancel-a", heartbeat_ms=200)
    task_id = enqueue(pool, "test_work", {"seconds": 30})
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)

    assert fetch_one(pool, "SELECT status FROM cancel_task(%s)", (task_id,)) == ("running",)
    sent = time.monotonic()
    wait_for_status(pool, task_id, "cancelled", 5, also=worker.describe)
    assert time.monotonic() - sent < 3

    assert fetch_one(
        pool, "SELECT abort_reason FROM test_executions WHERE task_id = %s", (task_id,)
    ) == ("cancelled",)
    assert completions(pool, task_id) == []
    assert attempt_history(pool, task_id) == [(1, "cancel-a", "cancelled")]
    log = worker.wait_for_log(
        f"Task {task_id} failed: cancelled by an operator while running (now cancelled)"
    )
    assert f"Task {task_id}: heartbeat answered cancel_requested: aborting the handler" in log


def listener_pid(conn: psycopg.Connection, worker_id: str) -> int | None:
    """The backend pid of the worker's LISTEN connection once it listens, else None."""
    row = fetch_one(
        conn,
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = %s AND query ILIKE 'LISTEN%%'",
        (f"pyworker {worker_id} listener",),
    )
    return row[0] if row else None


def test_a_notification_wakes_an_idle_worker_long_before_its_poll(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_work", "notify-a", poll_ms=60_000)
    wait_for(
        lambda: listener_pid(pool, "notify-a"), 10, "the worker to LISTEN", also=worker.describe
    )
    # The listener rings once on connecting; let that claim come back empty first.
    time.sleep(0.3)

    enqueued = time.monotonic()
    task_id = enqueue(pool, "test_work", {})
    row = wait_for_status(pool, task_id, "completed", 2, also=worker.describe)
    assert time.monotonic() - enqueued < 2
    waited = fetch_one(
        pool,
        "SELECT extract(epoch FROM claimed_at - created_at) FROM worker_tasks WHERE id = %s",
        (task_id,),
    )
    assert waited is not None and waited[0] is not None and waited[0] < 2
    assert row["worker_id"] == "notify-a"

    # Idle again, waiting out a one-minute poll: SIGTERM ends the wait too.
    time.sleep(0.3)
    sent = time.monotonic()
    worker.send(signal.SIGTERM)
    assert worker.wait(5) == 0, worker.describe()
    assert time.monotonic() - sent < 2.5
    assert registered_workers(pool) == []


def test_a_worker_whose_connections_are_terminated_reconnects_and_goes_on(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_work", "reconnect-a", poll_ms=60_000, heartbeat_ms=200)
    old_listener = wait_for(lambda: listener_pid(pool, "reconnect-a"), 10, "the worker to LISTEN")
    # Long enough that the heartbeat still beats (and fails) after the terminations below, however
    # slowly a busy machine gets there: a worker heartbeats only while it holds a task.
    task_id = enqueue(pool, "test_work", {"seconds": 6})
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)

    # The heartbeat connects at its first beat.
    wait_for(
        lambda: fetch_one(
            pool,
            "SELECT count(*) = 3 FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name LIKE %s",
            ("pyworker reconnect-a%",),
        )[0],
        5,
        "the worker's three connections",
    )
    terminated = pool.execute(
        "SELECT application_name, pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND application_name LIKE %s"
        " ORDER BY application_name",
        ("pyworker reconnect-a%",),
    ).fetchall()
    assert terminated == [
        ("pyworker reconnect-a", True),
        ("pyworker reconnect-a heartbeat", True),
        ("pyworker reconnect-a listener", True),
    ]

    row = wait_for_status(pool, task_id, "completed", 20, also=worker.describe)
    assert (row["worker_id"], row["attempt"]) == ("reconnect-a", 1)
    assert completions(pool, task_id) == [(1, "reconnect-a")]

    # The listener is back: a task enqueued now is found through its notification alone
    # (the poll interval is a minute).
    wait_for(
        lambda: (listener_pid(pool, "reconnect-a") or old_listener) != old_listener,
        10,
        "the worker to LISTEN again",
        also=worker.describe,
    )
    time.sleep(0.3)
    second = enqueue(pool, "test_work", {})
    row = wait_for_status(pool, second, "completed", 5, also=worker.describe)
    assert row["worker_id"] == "reconnect-a"
    log = worker.log()
    assert "Listener:" in log and "reconnecting" in log
    # The heartbeat thread's connection: its next call is the beat or, when the termination comes
    # between the two, the stale recovery that follows a beat.
    assert re.search(r"(Heartbeat|Stale recovery) failed: database connection failed", log)
    # The main connection's next call (the claim for the freed slot, or the completion) is retried.
    assert re.search(r"(claim|complete tasks?): database connection failed.*; retrying", log)
    assert worker.process.poll() is None
