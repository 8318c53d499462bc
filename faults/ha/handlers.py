"""The failover suite's handler, loaded by its workers (TASKPOOL_HANDLERS=faults.ha.handlers).

Role fault_work, payload {"key": ..., "ms": N}: work N milliseconds, recording the execution in a
file of the worker's own (FAULTS_HA_RECORDS/<worker id>.jsonl), not in the database: a failover
may lose what the database was told, and the record is what the checker compares the database
with. One line, written and flushed in one call, when the execution begins: a task run twice
(its claim forgotten by a promoted replica) shows as two lines.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from pyworker import Task
from pyworker.handlers import handler

RECORDS_ENVVAR = "FAULTS_HA_RECORDS"

_lock = threading.Lock()
_path = Path(os.environ.get(RECORDS_ENVVAR, ".")) / f"{os.environ.get('WORKER_ID', os.getpid())}.jsonl"


def _record(line: dict[str, Any]) -> None:
    text = json.dumps(line) + "\n"
    with _lock, open(_path, "a") as records:
        records.write(text)


@handler("fault_work")
def work(task: Task) -> Any:
    _record({"task_id": task.id, "attempt": task.attempt, "key": task.payload.get("key"),
             "worker": task.worker_id, "at": time.time()})
    time.sleep(task.payload.get("ms", 10) / 1000)
    return None
