"""Handler threads left behind are bounded: once --max-abandoned-threads handlers that ignore
their abort are left behind, still running, the worker stops claiming, says why (its log and
/healthz) and hands back the tasks it claimed and had not begun, without spending their retry;
once one of those handlers returns, it claims again. A handler thread that cannot start hands
its task back instead of ending the worker. Real `python -m pyworker` processes against a real
database.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psycopg
import pytest
from test_worker_metrics import SERVING, get, samples
from worker_support import Workers, enqueue, task_row, wait_for, wait_for_status

HANDLERS = "worker_stuck_handlers"


@pytest.fixture
def stuck_role(pool: psycopg.Connection) -> psycopg.Connection:
    """`pool` with the role test_stuck: a 1 second run_timeout, no retry."""
    pool.execute(
        "INSERT INTO task_roles (role, run_timeout, max_retries) VALUES ('test_stuck', interval '1 second', 0)"
    )
    return pool


def test_at_the_cap_of_abandoned_threads_the_worker_stops_claiming_until_one_returns(
    stuck_role: psycopg.Connection, workers: Workers, tmp_path: Path
) -> None:
    pool = stuck_role
    released = [tmp_path / "release-1", tmp_path / "release-2"]
    hung = [enqueue(pool, "test_stuck", {"until": str(path)}) for path in released]
    # Claimed with the hung ones (--prefetch 4), waiting their turn; and one never claimed.
    waiting = [enqueue(pool, "test_stuck", {"seconds": 0}) for _ in range(2)]
    unclaimed = enqueue(pool, "test_stuck", {"seconds": 0})
    worker = workers.start(
        "test_stuck",
        "abandoned-a",
        concurrency=2,
        prefetch=4,
        handlers=HANDLERS,
        args=("--metrics-port", "0"),
        extra_env={"TASKPOOL_MAX_ABANDONED_THREADS": "2"},
    )
    port = int(SERVING.search(worker.wait_for_log("Serving /metrics")).group(1))
    worker.wait_for_log("2 handler threads are left behind, still running (--max-abandoned-threads 2)", 20)
    for task_id in hung:
        assert wait_for_status(pool, task_id, "failed", 5)["error_message"] == "timed out after 1 s"
    for task_id in waiting:
        row = wait_for_status(pool, task_id, "pending", 5, also=worker.describe)
        assert (row["worker_id"], row["retry_count"], row["started_at"]) == (None, 0, None), row
    assert f"Task {waiting[0]} handed back: the worker claims no more for now" in worker.log()
    status, reason = get(port, "/healthz")
    assert (status, reason) == (
        503,
        "2 handler threads are left behind, still running (--max-abandoned-threads 2): not claiming until one returns\n",
    )
    assert samples(port)[("pyworker_abandoned_threads", ())] == 2

    # Alive, and claiming nothing: five polls later, the tasks are still where they were.
    time.sleep(1)
    assert worker.popen.poll() is None
    for task_id in [*waiting, unclaimed]:
        assert task_row(pool, task_id)["status"] == "pending"
    assert task_row(pool, unclaimed)["attempt"] == 0

    # One hung handler returns: its thread serves again, and the worker claims again.
    released[0].touch()
    worker.wait_for_log("A handler thread left behind has returned (1 left behind): claiming again", 10)
    for task_id in [*waiting, unclaimed]:
        assert wait_for_status(pool, task_id, "completed", 10, also=worker.describe)["retry_count"] == 0
    assert get(port, "/healthz") == (200, "ok\n")
    assert samples(port)[("pyworker_abandoned_threads", ())] == 1
    released[1].touch()
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_a_handler_thread_that_cannot_start_hands_its_task_back(
    pool: psycopg.Connection, workers: Workers, tmp_path: Path
) -> None:
    pool.execute("INSERT INTO task_roles (role, max_retries) VALUES ('test_stuck', 0)")
    started, release = tmp_path / "started", tmp_path / "release"
    # Its handler makes every new thread of the process fail to start, and holds its own.
    holder = enqueue(pool, "test_stuck", {"stack_size": 2**40, "started": str(started), "until": str(release)})
    worker = workers.start("test_stuck", "abandoned-b", concurrency=2, handlers=HANDLERS)
    wait_for(started.exists, 10, "the holder to start", also=worker.describe)

    quick = enqueue(pool, "test_stuck", {"seconds": 0})
    worker.wait_for_log(f"Task {quick}: no thread could start for its handler (can't start new thread)", 10)
    worker.wait_for_log(f"Task {quick} handed back: no thread could start for its handler", 10)
    assert worker.popen.poll() is None
    assert task_row(pool, quick)["retry_count"] == 0

    # The holder returns: its thread runs the task.
    release.touch()
    for task_id in (holder, quick):
        assert wait_for_status(pool, task_id, "completed", 10, also=worker.describe)["retry_count"] == 0
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
