"""Handlers for tests/test_worker_batch_runtime.py (`--batch-runtime`), imported by the worker
processes (TASKPOOL_HANDLERS); the sync handlers of worker_handlers.py come along.

Role test_batch (the tests insert its task_roles row), an `async def` handler: raises
ValueError(payload's `fail`) when it names one, else awaits asyncio.sleep(payload's `seconds`);
it answers the thread it ran in, the task its log context names, and the most attempts of this
process that were inside it at once (so far).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import worker_handlers  # noqa: F401 - test_work beside test_batch, for a worker of both
from pyworker import Task
from pyworker.handlers import current_task, handler

in_flight = most_in_flight = 0


@handler("test_batch")
async def batch_work(task: Task) -> dict[str, Any]:
    global in_flight, most_in_flight
    in_flight += 1
    most_in_flight = max(most_in_flight, in_flight)
    try:
        if "fail" in task.payload:
            raise ValueError(task.payload["fail"])
        await asyncio.sleep(task.payload.get("seconds", 0))
    finally:
        in_flight -= 1
    context = current_task.get()
    return {
        "thread": threading.current_thread().name,
        "context_task_id": None if context is None else context.id,
        "most_in_flight": most_in_flight,
    }
