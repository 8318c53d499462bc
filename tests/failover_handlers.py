"""Handlers for the read-only and failover tests (tests/test_read_only.py), imported by the
worker processes (TASKPOOL_HANDLERS). They write nothing to the database: a read-only server
must stop the worker's own writes, not theirs.

- test_gate: waits until the file the payload's `gate` names exists (the test opens the gate
  once the server is read-only), then returns {"ok": true, "n": payload n}.
- test_failover (tests/test_failover.py): works the payload's `ms` milliseconds, then appends
  "<task id> <attempt>" to <payload's `record` directory>/<worker id>.runs: the handler's own
  record of every run that ended well, kept outside the database that fails over, then returns
  {"n": payload n}.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pyworker import Task
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


@handler("test_failover")
def record_run(task: Task) -> dict[str, Any]:
    time.sleep(task.payload.get("ms", 0) / 1000)
    # One file a worker process, appended a line at a time: the other worker never writes it.
    with open(Path(task.payload["record"]) / f"{os.environ['WORKER_ID']}.runs", "a") as runs:
        runs.write(f"{task.id} {task.attempt}\n")
    return {"n": task.payload.get("n")}
