"""Handlers for tests/test_batch_handlers.py, imported by the worker processes (TASKPOOL_HANDLERS).

Role test_batch_many (the tests insert its task_roles row): a batch handler that answers a dict by
task id. Each task's payload says what its outcome is: `fail` (a ValueError), `permanent` (a
PermanentError), `snooze` (Snooze for that many seconds), `skip` (left out of the answer),
`seconds` (the call waits that long before it answers), else a result naming how many tasks its
call had. A task whose payload says `explode` makes the whole call raise; `short` makes it answer
a list one outcome short.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pyworker import PermanentError, Snooze, Task
from pyworker.admin.batch_handlers import batch_handler


@batch_handler("test_batch_many")
async def many(tasks: list[Task]) -> Any:
    payloads = [task.payload for task in tasks]
    if any("explode" in payload for payload in payloads):
        raise RuntimeError("the whole call failed")
    await asyncio.sleep(max((payload.get("seconds", 0) for payload in payloads), default=0))
    if any("short" in payload for payload in payloads):
        return [{"size": len(tasks)}] * (len(tasks) - 1)
    answer: dict[int, Any] = {}
    for task in tasks:
        payload = task.payload
        if "fail" in payload:
            answer[task.id] = ValueError(payload["fail"])
        elif "permanent" in payload:
            answer[task.id] = PermanentError(payload["permanent"])
        elif "snooze" in payload:
            answer[task.id] = Snooze(payload["snooze"])
        elif "skip" not in payload:
            answer[task.id] = {"size": len(tasks)}
    return answer
