"""One attempt: the threads and the event loop handlers run in, what an attempt's outcome was,
and what the worker records for it (decide(): the one place that classifies outcomes, for the
worker and for pyworker.testing alike)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import queue
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from pyworker import handlers
from pyworker.db import JsonText, NotJson, Task, dump_json
from pyworker.errors import PermanentError, Snooze


class HandlerPool:
    """The threads sync handlers run in, kept from task to task (starting a thread per task costs
    more than a no-op handler): an idle one takes the next job, else a new one starts. A handler
    that will not stop keeps its thread; the pool never waits for it."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        if start:
            threading.Thread(target=self._serve, name="handler", daemon=True).start()
        self._jobs.put(job)

    def _serve(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


class EventLoopThread:
    """One asyncio event loop in a thread of its own, for the `async def` handlers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="asyncio", daemon=True).start()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)


def is_async_handler(fn: Any) -> bool:
    """An `async def` function, or an object whose __call__ is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


@dataclass
class Outcome:
    """How an attempt ended, as the main thread saw it."""

    result: Any = None
    error: BaseException | None = None
    handed_back: bool = False
    # Why the handler was not given the task at all: the attempt fails for good, saying so.
    refused: str | None = None
    # Seconds from the attempt's start to its outcome (the log lines report it).
    duration: float | None = None


@dataclass(frozen=True)
class Decision:
    """What the worker records for an attempt that ended (decide() says which):

    - `released`: handed back (release_task), no retry spent: the worker is stopping;
    - `lost`: nothing, the attempt is no longer the worker's (`message`: the abort's reason);
    - `failed`: fail_task with `message`, `retryable`; `error`: the handler's exception, if any
      (its traceback goes with the attempt);
    - `snoozed`: snooze_task for `seconds`;
    - `completed`: complete_task with `result` and `follow_ups`, JSON already written.
    """

    kind: str
    message: str | None = None
    retryable: bool = False
    error: BaseException | None = None
    seconds: Any = None
    result: JsonText | None = None
    follow_ups: JsonText | None = None


def decide(task: Task, outcome: Outcome, run_timeout: float) -> Decision:
    """How the worker records the attempt of `task` that ended with `outcome`: the one place
    that classifies outcomes, for the worker and for pyworker.testing alike. The abort's reason
    comes first (a cancelled attempt ends cancelled whatever its handler returned), then a
    refusal, a Snooze, an exception (PermanentError: not retryable), and last the result, written
    as JSON now: a value JSON cannot hold fails the attempt (retryable), saying where."""
    reason = task.abort.reason
    if outcome.handed_back:
        return Decision("released")
    if reason in ("taken_by_another_worker", "not_found"):
        return Decision("lost", message=reason)
    if reason == "cancelled":
        return Decision("failed", message="cancelled by an operator while running", retryable=False)
    if reason == "timeout":
        return Decision("failed", message=f"timed out after {run_timeout:.0f} s", retryable=True)
    if outcome.refused is not None:
        return Decision("failed", message=outcome.refused, retryable=False)
    if isinstance(outcome.error, Snooze):
        return Decision("snoozed", seconds=outcome.error.seconds)
    if outcome.error is not None:
        return Decision(
            "failed",
            message=describe(outcome.error),
            # A command's envelope says {"retryable": false}: CommandFailed(retryable=False).
            retryable=not isinstance(outcome.error, PermanentError)
            and getattr(outcome.error, "retryable", True) is not False,
            error=outcome.error,
        )
    result, follow_ups = outcome.result, None
    if isinstance(result, handlers.Completion):
        result, follow_ups = result.result, result.follow_ups
    try:
        # Written now: a value JSON cannot hold fails this attempt, not a batch later.
        result = None if result is None else JsonText(dump_json(result, name="result"))
        if follow_ups is not None:
            follow_ups = JsonText(dump_json(follow_ups, name="follow_ups"))
    except NotJson as error:
        return Decision("failed", message=f"the result is not JSON: {error}", retryable=True)
    return Decision("completed", result=result, follow_ups=follow_ups)


def run_attempt(registry: handlers.Registry, task: Task) -> Outcome:
    """Run a sync handler through the middlewares, the task in handlers.current_task: what it
    returned or raised (any exception, BaseException included)."""
    token = handlers.current_task.set(task)
    outcome = Outcome()
    try:
        outcome.result = registry.run(task)
    except BaseException as error:  # noqa: BLE001 - every failure is recorded
        outcome.error = error
    finally:
        end_lease(task)
        handlers.current_task.reset(token)
    return outcome


async def run_attempt_async(registry: handlers.Registry, task: Task) -> Any:
    """Run an async handler through the middlewares (on the event loop, in its own asyncio
    task, whose context carries the task for the log lines)."""
    handlers.current_task.set(task)
    try:
        result = registry.run(task)
        if inspect.isawaitable(result):
            result = await result
        return result
    finally:
        end_lease(task)


def end_lease(task: Task) -> None:
    """The handler returned: its attempt's connection, if it borrowed one, goes back to the pool
    (rolled back if left in a transaction) before the outcome is recorded."""
    if task.lease is not None:
        task.lease.end(task.id)


def async_outcome(task: Task, future: concurrent.futures.Future) -> Outcome:
    """The outcome of an async handler's finished future: cancelled (its attempt was aborted),
    raised, or returned."""
    outcome = Outcome()
    if future.cancelled():
        outcome.error = handlers.Aborted(task.abort.reason)
    elif (error := future.exception()) is not None:
        outcome.error = error
    else:
        outcome.result = future.result()
    return outcome


def describe(error: BaseException) -> str:
    """The error text recorded for a failed attempt: its type and message. Never raises: an
    exception whose message cannot be read is described by its type and what went wrong."""
    name = type(error).__name__
    try:
        message = str(error).strip()
    except Exception as broken:  # noqa: BLE001 - a handler's broken __str__ must not end the worker
        try:
            why = f"{type(broken).__name__}: {str(broken).strip()}"
        except Exception:  # noqa: BLE001 - broken twice over: its type must do
            why = type(broken).__name__
        return f"{name} (its message cannot be read: {why})"
    return f"{name}: {message}" if message else name
