"""The benchmark's handlers, loaded by the worker processes it starts (--handlers bench.handlers).

- bench_noop: does nothing; the drain figures measure the queue, not the work. bench_noop_async
  too, an `async def`, for the batch runtime's drain.
- bench_sleep: sleeps BENCH_SLEEP_MS (100 ms by default), as an I/O-bound handler waits on the
  network; the I/O-bound figure measures how many a process keeps in flight. bench_sleep_other
  too: a worker serving both roles keeps both in flight.
- bench_wakeup: appends "task_id wall_clock" to the file named by BENCH_EVENTS_FILE at the
  moment the handler starts, for the wake-up latency figure. One write(2) per line: lines from
  several processes appending to one file never interleave.
"""

from __future__ import annotations

import os
import time

from pyworker import Task
from pyworker.handlers import handler


@handler("bench_noop")
def noop(task: Task) -> None:
    return None


@handler("bench_noop_async")
async def noop_async(task: Task) -> None:
    return None


@handler("bench_sleep")
@handler("bench_sleep_other")
def sleep(task: Task) -> None:
    time.sleep(int(os.environ.get("BENCH_SLEEP_MS", "100")) / 1000)


@handler("bench_wakeup")
def wakeup(task: Task) -> None:
    started = time.time()
    fd = os.open(os.environ["BENCH_EVENTS_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{task.id} {started:.6f}\n".encode())
    finally:
        os.close(fd)
