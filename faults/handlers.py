"""Handlers for the fault suite, loaded by its worker processes (TASKPOOL_HANDLERS=faults.handlers).

Every execution is recorded in fault_executions (harness.FIXTURE) through this process's own
connection (a testkit.recorder Recorder), not the worker's: a fault aimed at the worker's sessions
must not take the record with it, and the record must say what really ran, whatever the worker
later manages to tell the database. The row is written when the handler starts and closed when it ends; an execution cut
short by SIGKILL keeps ended_at NULL, and the checker ends it at the kill recorded in
fault_events.

Role fault_work; the payload says what the handler does:
- {"ms": N}: work N milliseconds in steps, polling the abort signal (default 10);
- {"raise": "always"}: raise every time (a poison task);
- {"die": true}: SIGKILL its own process (a poison task that takes its worker with it);
- {"echo": true}: return the payload as the result (read back by the fuzzing scenario).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from pyworker import Task
from pyworker.handlers import Aborted, handler
from testkit.recorder import Recorder

STEP_SECONDS = 0.01

START = (
    "INSERT INTO fault_executions (task_id, attempt, worker_id, pid, dispensary_id, claimed_at)"
    " VALUES (%(task_id)s, %(attempt)s, %(worker_id)s, %(pid)s, %(dispensary_id)s, %(claimed_at)s)"
    # A retried start whose first answer was lost finds its own row.
    " ON CONFLICT ON CONSTRAINT fault_executions_once DO UPDATE SET pid = excluded.pid"
    " RETURNING id"
)
# The end is the start (database time) plus the handler's own measure of how long it ran: a record
# delayed by a fault (the server restarting) must not stretch the execution.
END = (
    "UPDATE fault_executions SET ended_at = started_at + make_interval(secs => %(seconds)s),"
    " outcome = %(outcome)s WHERE id = %(id)s"
)

# The record must not be lost to the very faults under test (a terminated session, a restarted
# server): a statement is retried for up to a minute before the handler gives up.
_record = Recorder("fault recorder", patience=60)


@handler("fault_work")
def work(task: Task) -> Any:
    execution = _record(
        START,
        {
            "task_id": task.id,
            "attempt": task.attempt,
            "worker_id": task.worker_id,
            "pid": os.getpid(),
            "dispensary_id": task.dispensary_id,
            "claimed_at": task.claimed_at,
        },
    )
    # Timed from the start record's answer: a start delayed by a fault shifts started_at, not the span.
    begun = time.monotonic()
    payload = task.payload
    if payload.get("die"):
        os.kill(os.getpid(), signal.SIGKILL)
    if payload.get("raise") == "always":
        _record(END, {"id": execution, "outcome": "raised", "seconds": time.monotonic() - begun})
        raise RuntimeError(f"poison task {task.id} raises on every attempt")
    steps = max(0, round(payload.get("ms", 10) / 1000 / STEP_SECONDS))
    for _ in range(steps):
        if task.abort.fired:
            _record(END, {"id": execution, "outcome": f"aborted: {task.abort.reason}", "seconds": time.monotonic() - begun})
            raise Aborted(task.abort.reason)
        time.sleep(STEP_SECONDS)
    _record(END, {"id": execution, "outcome": "finished", "seconds": time.monotonic() - begun})
    if payload.get("echo"):
        return {"echo": payload}
    return {"execution": execution}
