"""Handlers for the read-only and failover tests (tests/test_read_only.py), imported by the
worker processes (TASKPOOL_HANDLERS). They write nothing to the database: a read-only server
must stop the worker's own writes, not theirs.

- test_gate: waits until the file the payload's `gate` names exists (the test opens the gate
  once the server is read-only), then returns {"ok": true, "n": payload n}.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pyworker.db import Task
from pyworker.handlers import Aborted, handler

STEP_SECONDS = 0.05


@handler("test_gate")
def gate(task: Task) -> dict[str, Any]:
    opened = Path(task.payload["gate"])
    while not opened.exists():
        if task.abort.fired:
            raise Aborted(task.abort.reason)
        time.sleep(STEP_SECONDS)
    return {"ok": True, "n": task.payload.get("n")}
