"""A handler that ignores its abort signal, for the run-timeout tests (tests/test_worker_timeouts.py).

Role test_stuck (the tests insert its task_roles row): sleeps the payload's `seconds` in one
blocking call, never looking at task.abort, then returns {"slept": seconds}.
"""

from __future__ import annotations

import time
from typing import Any

from pyworker.db import Task
from pyworker.handlers import handler


@handler("test_stuck")
def stuck(task: Task) -> dict[str, Any]:
    seconds = task.payload["seconds"]
    time.sleep(seconds)
    return {"slept": seconds}
