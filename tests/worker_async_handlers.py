"""An `async def` handler, for tests/test_worker_concurrency.py and tests/test_worker_event_loop.py.

Role test_async (the tests insert its task_roles row): blocks the event loop for the payload's
`block` seconds with time.sleep (the hostile case: a sync call in an async handler), awaits
asyncio.sleep(payload's `seconds`), then answers where it ran: the thread's name, how many
threads the process has, and the task the log context names.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from pyworker import Task
from pyworker.handlers import current_task, handler


@handler("test_async")
async def sleeper(task: Task) -> dict[str, Any]:
    time.sleep(task.payload.get("block", 0))
    await asyncio.sleep(task.payload.get("seconds", 0))
    context = current_task.get()
    return {
        "thread": threading.current_thread().name,
        "threads": threading.active_count(),
        "context_task_id": None if context is None else context.id,
    }
