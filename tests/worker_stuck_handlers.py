"""A handler that ignores its abort signal, for the run-timeout tests (tests/test_worker_timeouts.py)
and the abandoned-thread tests (tests/test_worker_abandoned_threads.py).

Role test_stuck (the tests insert its task_roles row), never looking at task.abort: with
`stack_size` in the payload, first sets threading.stack_size to it (a huge one: no thread can
start in the process any more) and creates the file `started`; then sleeps the payload's
`seconds` in one blocking call, or with `until`, waits until that file exists; then puts the
stack size back and returns {"slept": seconds}.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from pyworker import Task
from pyworker.handlers import handler


@handler("test_stuck")
def stuck(task: Task) -> dict[str, Any]:
    payload = task.payload
    if "stack_size" in payload:
        threading.stack_size(payload["stack_size"])
        Path(payload["started"]).touch()
    seconds = payload.get("seconds", 0)
    if "until" in payload:
        while not Path(payload["until"]).exists():
            time.sleep(0.05)
    else:
        time.sleep(seconds)
    if "stack_size" in payload:
        threading.stack_size(0)
    return {"slept": seconds}
