"""Handlers for the worker tests, imported by the worker processes (TASKPOOL_HANDLERS).

Each handler writes what it did to tables that the test creates in its own database
(worker_support.TABLES: test_executions, test_completions), through its own connection: the
worker's connections are the worker's business, and a test that terminates them must not take
the handler's record with them.

Roles (the tests insert their task_roles rows):

- test_work: records the execution in test_executions, works for `seconds` (`retry_seconds`
  from the second attempt on) in small steps, polling task.abort, then records the completion
  in test_completions (UNIQUE task_id) unless the payload says `"record": false`. On an abort
  it records the reason and stops.
- test_outcome: raises what the payload's `raise` names: ValueError (retried), PermanentError
  or Snooze(30); with "nothing", returns {"ok": true}.
- test_chain: completes at once with one follow-up, a `to_role` task for the payload's `store`
  (its enqueue, in the recording transaction, locks that store's row FOR KEY SHARE).
- test_logs: logs as handlers and their libraries do (its own logger at DEBUG and INFO, a
  library's logger at WARNING, warnings.warn, a thread of its own that dies), then raises
  ValueError (`"raise": "value_error"`), a ValueError with a 50,000-character message
  (`"huge"`), or returns {"ok": true}.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from typing import Any

from pyworker import Task
from pyworker.errors import PermanentError, Snooze
from pyworker.handlers import Aborted, Completion, handler
from testkit.recorder import Recorder

STEP_SECONDS = 0.05

handler_log = logging.getLogger("worker_handlers")
# A library's logger, as requests or psycopg have: its lines reach the worker's log too.
library_log = logging.getLogger("acme_client")

# This process's own connection (a test that terminates the worker's must not take the record
# with it), reconnected once if it broke.
_execute = Recorder("test handlers")


def _owner(task: Task) -> dict[str, Any]:
    return {"task_id": task.id, "attempt": task.attempt, "worker_id": task.worker_id}


@handler("test_work")
@handler("test_other")
def work(task: Task) -> dict[str, Any]:
    _execute(
        "INSERT INTO test_executions (task_id, attempt, worker_id)"
        " VALUES (%(task_id)s, %(attempt)s, %(worker_id)s)",
        _owner(task),
    )
    payload = task.payload
    seconds = payload.get("seconds", 0) if task.attempt == 1 else payload.get("retry_seconds", 0)
    # Counted in steps, not by the clock: time spent stopped (SIGSTOP) does not count as work.
    for _ in range(round(seconds / STEP_SECONDS)):
        if task.abort.fired:
            _execute(
                "UPDATE test_executions SET ended_at = clock_timestamp(), abort_reason = %(reason)s"
                " WHERE task_id = %(task_id)s AND attempt = %(attempt)s",
                {**_owner(task), "reason": task.abort.reason},
            )
            raise Aborted(task.abort.reason)
        time.sleep(STEP_SECONDS)
    if payload.get("record", True):
        # One statement: the completion and the end of the execution are recorded together.
        _execute(
            "WITH done AS (INSERT INTO test_completions (task_id, attempt, worker_id)"
            "              VALUES (%(task_id)s, %(attempt)s, %(worker_id)s))"
            " UPDATE test_executions SET ended_at = clock_timestamp()"
            " WHERE task_id = %(task_id)s AND attempt = %(attempt)s",
            _owner(task),
        )
    else:
        _execute(
            "UPDATE test_executions SET ended_at = clock_timestamp()"
            " WHERE task_id = %(task_id)s AND attempt = %(attempt)s",
            _owner(task),
        )
    return {"worker_id": task.worker_id, "attempt": task.attempt}


@handler("test_outcome")
def outcome(task: Task) -> dict[str, Any]:
    kind = task.payload["raise"]
    if kind == "nothing":
        return {"ok": True}
    if kind == "value_error":
        raise ValueError("the platform answered 503")
    if kind == "permanent":
        raise PermanentError("the store is closed for good")
    if kind == "snooze":
        raise Snooze(30)
    raise AssertionError(f"unknown outcome {kind!r}")


@handler("test_chain")
def chain(task: Task) -> Completion:
    return Completion(
        result={"ok": True},
        follow_ups=[{"role": task.payload["to_role"], "dispensary_id": task.payload["store"]}],
    )


@handler("test_logs")
def chatty(task: Task) -> dict[str, Any]:
    handler_log.debug("task %s: the menu request in full", task.id)
    handler_log.info("task %s: fetching the menu", task.id)
    library_log.warning("task %s: connection pool is full", task.id)
    warnings.warn(f"task {task.id}: menu_v1 is deprecated", UserWarning, stacklevel=1)
    dying = threading.Thread(target=_die, args=(task.id,), name=f"helper-of-{task.id}")
    dying.start()
    dying.join()
    kind = task.payload.get("raise", "nothing")
    if kind == "value_error":
        raise ValueError("the menu has no prices")
    if kind == "huge":
        raise ValueError("x" * 50000)
    return {"ok": True}


def _die(task_id: int) -> None:
    raise RuntimeError(f"the helper thread of task {task_id} gave up")
