"""An `async def` handler that blocks the event loop (a time.sleep, a sync call) fails its own
attempt once it has held the loop past --loop-block-limit-seconds; the other async tasks of the
process, begun before it or after, are handed back without spending a retry and run again on a
new loop; the loop's lag is a metric, and /healthz fails while a handler holds a loop. Real
`python -m pyworker` processes against a real database.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time

import psycopg
from pyworker.attempts import EventLoopThread
from test_worker_metrics import SERVING, get, samples
from worker_support import Workers, enqueue, wait_for, wait_for_status

HANDLERS = "worker_async_handlers"
REPLACED = re.compile(r"Task (\d+): its handler has blocked the event loop for more than 1 s")


def test_a_handler_blocking_the_event_loop_fails_alone_and_the_others_run_on_a_new_loop(
    pool: psycopg.Connection, workers: Workers
) -> None:
    pool.execute("INSERT INTO task_roles (role, max_retries) VALUES ('test_async', 0)")
    before = enqueue(pool, "test_async", {"seconds": 3})
    culprit = enqueue(pool, "test_async", {"block": 8})
    worker = workers.start(
        "test_async",
        "loop-a",
        concurrency=4,
        handlers=HANDLERS,
        args=("--metrics-port", "0"),
        extra_env={"TASKPOOL_LOOP_BLOCK_LIMIT_SECONDS": "1"},
    )
    port = int(SERVING.search(worker.wait_for_log("Serving /metrics")).group(1))
    wait_for_status(pool, culprit, "running", 10, also=worker.describe)
    # Begun while the loop is blocked, or on the new loop: either way it is not failed for it.
    after = enqueue(pool, "test_async", {"seconds": 0})

    # Liveness fails while the handler holds the loop, saying so; the lag is served.
    status, reason = wait_for(lambda: (answer := get(port, "/healthz"))[0] == 503 and answer, 10,
                              "/healthz to fail", also=worker.describe)
    assert re.match(r"the event loop has been blocked for \d+ s", reason), reason
    assert samples(port)[("pyworker_event_loop_lag_seconds", ())] > 1

    assert REPLACED.search(worker.wait_for_log("has blocked the event loop")).group(1) == str(culprit)
    row = wait_for_status(pool, culprit, "failed", 10, also=worker.describe)
    assert row["error_message"] == "EventLoopBlocked: the handler blocked the event loop for more than 1 s"
    later = enqueue(pool, "test_async", {"seconds": 0})
    for task_id in (before, after, later):
        row = wait_for_status(pool, task_id, "completed", 15, also=worker.describe)
        assert row["retry_count"] == 0, row
        assert row["result"]["thread"] == "asyncio"
    assert f"Task {before} handed back: another handler blocked its event loop" in worker.log()
    found = samples(port)
    assert found[("pyworker_event_loops_replaced_total", ())] == 1
    assert found[("pyworker_tasks_total", (("outcome", "released"), ("role", "test_async")))] >= 1

    # Once the handler lets go (its 8 s sleep ends), the old loop winds down and liveness is back.
    wait_for(lambda: get(port, "/healthz") == (200, "ok\n"), 15, "/healthz to answer ok", also=worker.describe)
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_the_loop_block_limit_must_be_positive(pool: psycopg.Connection, workers: Workers) -> None:
    code, stderr = workers.run_to_exit(
        "test_work", "loop-b", extra_env={"TASKPOOL_LOOP_BLOCK_LIMIT_SECONDS": "0"}
    )
    assert code == 2, stderr
    assert "TASKPOOL_LOOP_BLOCK_LIMIT_SECONDS" in stderr


def test_a_loop_busy_with_short_steps_lags_but_is_not_blocked() -> None:
    """Many coroutines taking turns make the loop lag past the limit; no step blocks it, so the
    watchdog reports nothing. A callback that is no attempt's step and blocks the loop is
    reported, with no culprit."""
    reports: list[EventLoopThread] = []
    loop = EventLoopThread(0.5, reports.append)

    async def turns() -> None:
        for _ in range(3):
            time.sleep(0.01)
            await asyncio.sleep(0)

    async def crowd() -> None:
        await asyncio.gather(*(turns() for _ in range(150)))

    busy = loop.submit(crowd())
    most_lag = 0.0
    while not busy.done():
        most_lag = max(most_lag, loop.lag)
        time.sleep(0.05)
    busy.result()
    assert most_lag > 0.5
    assert reports == []

    loop.loop.call_soon_threadsafe(time.sleep, 2)
    wait_for(lambda: reports, 10, "the watchdog to report the loop blocked")
    assert reports == [loop]
    assert loop.blocked_by is None
    loop.retire()
    wait_for(lambda: not loop.alive, 10, "the loop's thread to end")
