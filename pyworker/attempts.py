"""One attempt: the threads and the event loop handlers run in, what an attempt's outcome was,
and what the worker records for it (decide(): the one place that classifies outcomes, for the
worker and for pyworker.testing alike)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import Any

from pyworker import handlers
from pyworker.db import JsonText, NotJson, dump_json
from pyworker.task import Task
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
        """Run `job` in an idle thread or a new one; RuntimeError when no new thread can start
        (the process is at its thread limit), and then nothing is queued."""
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


# How long an aborted handler has to stop before its attempt ends without it.
ABORT_WIND_DOWN_SECONDS = 3.0


class EventLoopBlocked(Exception):
    """An async handler held the event loop past the worker's bound (--loop-block-limit-seconds):
    the error its attempt fails with."""


# How often the watchdog measures the loop's lag, while it turns.
LAG_PROBE_INTERVAL_SECONDS = 0.5


class EventLoopThread:
    """One asyncio event loop in a thread of its own, for the `async def` handlers, and a
    watchdog thread that measures its lag: how long a callback posted to it waits to run.

    Every step of every task on the loop runs through StepTracker, which notes the attempt whose
    step runs (handlers.current_task in the step's context) and when each step begins and ends.
    The loop is blocked while a probe waits and no step has begun or ended: a loop busy with many
    short steps lags without being blocked. Once blocked for more than `block_limit` seconds,
    the watchdog calls `on_blocked(self)`, with `blocked_by` the attempt's task whose step holds
    the loop (None when no step of an attempt does) and `blocked_at` where the loop thread is.
    retire() winds the loop down: its tasks cancelled, it stops once they end (at once if
    nothing blocks it), and its thread with it."""

    def __init__(self, block_limit: float, on_blocked: Callable[[EventLoopThread], None]) -> None:
        self.block_limit = block_limit
        self.running: Task | None = None
        # When the last step began or ended (time.monotonic()).
        self.last_step_edge = time.monotonic()
        self.blocked_by: Task | None = None
        self.blocked_at = ""
        self.retired = False
        self._on_blocked = on_blocked
        self._probe_sent: float | None = None
        self._last_lag = 0.0
        self.loop = asyncio.new_event_loop()
        self.loop.set_task_factory(self._tracked_task)
        self.thread = threading.Thread(target=self._run, name="asyncio", daemon=True)
        try:
            self.thread.start()
        except RuntimeError:
            self.loop.close()
            raise
        try:
            threading.Thread(target=self._watch, name="asyncio-watchdog", daemon=True).start()
        except RuntimeError:
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    @property
    def lag(self) -> float:
        """Seconds the loop has kept the pending probe waiting, else what the last one waited."""
        sent = self._probe_sent
        return self._last_lag if sent is None else max(self._last_lag, time.monotonic() - sent)

    @property
    def blocked_for(self) -> float:
        """How long the loop has been held by one step (or by what runs between steps) while a
        probe waits; 0 while it answers."""
        sent = self._probe_sent
        if sent is None:
            return 0.0
        now = time.monotonic()
        return min(now - sent, now - self.last_step_edge)

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def retire(self) -> None:
        """Cancel the loop's tasks and stop it once they end (or ABORT_WIND_DOWN_SECONDS later)."""
        self.retired = True
        asyncio.run_coroutine_threadsafe(self._wind_up(), self.loop)

    async def _wind_up(self) -> None:
        tasks = asyncio.all_tasks() - {asyncio.current_task()}
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=ABORT_WIND_DOWN_SECONDS)
        self.loop.stop()

    def _run(self) -> None:
        self.loop.run_forever()
        self.loop.close()

    def _tracked_task(self, loop: asyncio.AbstractEventLoop, coroutine: Any, **kwargs: Any) -> asyncio.Task:
        return asyncio.Task(_tracked(coroutine, self), loop=loop, **kwargs)

    def _answered(self, sent: float, answered: threading.Event) -> None:
        self._last_lag = time.monotonic() - sent
        self._probe_sent = None
        answered.set()

    def _watch(self) -> None:
        """Post a probe to the loop every LAG_PROBE_INTERVAL_SECONDS; report the loop blocked
        once a probe waits past block_limit. Runs as long as the loop's thread does."""
        check_every = min(LAG_PROBE_INTERVAL_SECONDS, self.block_limit / 4)
        while self.thread.is_alive():
            reported = False
            answered = threading.Event()
            sent = self._probe_sent = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(self._answered, sent, answered)
            except RuntimeError:
                return  # closed: its thread is ending
            while not answered.wait(check_every):
                if not self.thread.is_alive():
                    return
                if not reported and self.blocked_for > self.block_limit:
                    reported = True
                    self.blocked_by = self.running
                    self.blocked_at = self._where()
                    self._on_blocked(self)
            time.sleep(LAG_PROBE_INTERVAL_SECONDS)

    def _where(self) -> str:
        """The loop thread's stack now, from the step that blocks it (the frames below it are
        the loop's and this module's)."""
        frame = sys._current_frames().get(self.thread.ident or -1)
        if frame is None:
            return ""
        stack = traceback.extract_stack(frame)
        ours = [index for index, entry in enumerate(stack) if entry.filename == __file__]
        return "".join(traceback.format_list(stack[ours[-1] + 1 :] if ours else stack))


class StepTracker:
    """Awaits a coroutine one step at a time, noting in `owner.running` the attempt whose step
    runs (handlers.current_task in the step's context; None between steps), and in
    `owner.last_step_edge` when the step began, then when it ended."""

    def __init__(self, coroutine: Any, owner: EventLoopThread) -> None:
        self.coroutine = coroutine
        self.owner = owner

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, owner = self.coroutine, self.owner
        step: Callable[[Any], Any] = coroutine.send
        value: Any = None
        while True:
            owner.running = handlers.current_task.get()
            owner.last_step_edge = time.monotonic()
            try:
                yielded = step(value)
            except StopIteration as stop:
                return stop.value
            finally:
                owner.running = None
                owner.last_step_edge = time.monotonic()
            try:
                value, step = (yield yielded), coroutine.send
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as error:  # noqa: BLE001 - thrown into the coroutine, as `await` does
                value, step = error, coroutine.throw


async def _tracked(coroutine: Any, owner: EventLoopThread) -> Any:
    return await StepTracker(coroutine, owner)


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


def error_data_of(error: BaseException) -> dict[str, Any]:
    """The structured error kept with a failed attempt: the exception's own `error_data` when it
    carries a JSON object there (a command's CommandFailed does), else its type
    ({"type": "KeyError"})."""
    data = getattr(error, "error_data", None)
    return data if isinstance(data, dict) else {"type": type(error).__name__}


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
    task, whose context carries the task for the log lines, and for EventLoopThread's watchdog
    the attempt a step that blocks the loop belongs to: the handler's first step comes after a
    yield, so that its context names the task already)."""
    handlers.current_task.set(task)
    try:
        await asyncio.sleep(0)
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
