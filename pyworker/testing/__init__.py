"""Test helpers for the users of pyworker: run a handler without a database, or a real worker
against a throwaway one.

Without a database:

    from pyworker.testing import make_task, run_handler

    outcome = run_handler("send_email", {"to": "a@example.com"}, registry=my_registry)
    assert outcome.completed and outcome.result == {"sent": 1}

run_handler runs the handler exactly as a worker does: through the registry's middlewares, with
handlers.current_task set, an `async def` handler awaited on an event loop (cancelled when its
abort fires), the result written as JSON; and it says what the worker would record, with the
worker's own classification (pyworker.attempts.decide): completed, failed (retryable or not),
snoozed, or aborted.

With a database: the `taskpool` pytest fixture (pyworker.testing.pytest_plugin, installed as a
pytest plugin) deploys the schema into a throwaway database and drains the queue with a real
worker in the test's thread (pyworker.testing.draining.drain). See docs/testing.md.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pyworker import handlers
from pyworker.task import Task
from pyworker.db import NotJson
from pyworker.db import dump_json as _dump_json
from pyworker.errors import ConfigurationError
from pyworker.attempts import (
    ABORT_WIND_DOWN_SECONDS,
    Outcome,
    async_outcome,
    decide,
    is_async_handler,
    run_attempt,
    run_attempt_async,
)
from pyworker.testing.draining import DrainTimeout, drain

__all__ = [
    "HandlerOutcome",
    "make_task",
    "run_handler",
    "drain",
    "DrainTimeout",
    "ABORT_REASONS",
]

# The reasons a worker fires a task's abort with (pyworker.task.AbortSignal).
ABORT_REASONS = ("cancelled", "taken_by_another_worker", "not_found", "timeout", "shutdown")
# The run timeout run_handler reports in a timeout's error text when none is given.
DEFAULT_RUN_TIMEOUT = 3600.0

def make_task(
    role: str,
    payload: Mapping[str, Any] | None = None,
    *,
    id: int = 1,  # noqa: A002 - the Task's own field name
    attempt: int = 1,
    dispensary_id: int | None = None,
    platform: str | None = None,
    priority: int = 0,
    dedupe_key: str | None = None,
    worker_id: str = "test-worker",
    retry_count: int | None = None,
    max_retries: int = 3,
    scheduled_for: datetime | None = None,
    now: datetime | None = None,
    headers: Mapping[str, str] | None = None,
    parent_id: int | None = None,
) -> Task:
    """A pyworker.Task as a worker holds it while its handler runs (status `running`), with a
    fresh abort signal, and no database behind it.

    The payload goes through JSON as it would through the database, so the handler sees what it
    would see there (tuples become lists, a Decimal a number); a payload JSON cannot hold is a
    ValueError naming the place. `retry_count` defaults to `attempt - 1` (every earlier attempt
    failed and was retried). `headers`: what the enqueue sent along (a traceparent, say);
    `parent_id`: the task whose completion enqueued this one.
    """
    if not isinstance(role, str) or not role:
        raise ValueError(f"make_task: the role must be a non-empty string, not {role!r}")
    if payload is None:
        payload = {}
    if not isinstance(payload, Mapping):
        raise ValueError(
            f"make_task: the payload must be a JSON object (a dict), not {type(payload).__name__}"
        )
    try:
        loaded = json.loads(_dump_json(dict(payload), name="payload"))
    except NotJson as error:
        raise NotJson(f"make_task: the payload is not JSON: {error}") from error
    if not isinstance(attempt, int) or attempt < 1:
        raise ValueError(f"make_task: the attempt must be 1 or more, not {attempt!r}")
    if retry_count is None:
        retry_count = attempt - 1
    now = now or datetime.now(timezone.utc)
    return Task(
        id=id,
        role=role,
        dispensary_id=dispensary_id,
        platform=platform,
        status="running",
        priority=priority,
        scheduled_for=scheduled_for or now,
        payload=loaded,
        dedupe_key=dedupe_key,
        worker_id=worker_id,
        attempt=attempt,
        claim_token=uuid.uuid4(),
        claimed_at=now,
        started_at=now,
        last_heartbeat_at=now,
        cancel_requested_at=None,
        completed_at=None,
        result=None,
        error_message=None,
        retry_count=retry_count,
        max_retries=max_retries,
        created_at=now,
        updated_at=now,
        headers=dict(headers or {}),
        parent_id=parent_id,
    )


@dataclass
class HandlerOutcome:
    """What a worker would record for the attempt run_handler ran.

    status:
    - `completed`: complete_task with `result` and `follow_ups`, as the database would store
      them (JSON read back); `returned` is the handler's return value itself;
    - `failed`: fail_task with `error` (the text recorded, `Type: message` for an exception),
      `retryable` (False for PermanentError: the task fails now); `exception`: what it raised;
    - `snoozed`: snooze_task, back to pending in `seconds`, no retry spent;
    - `aborted`: the task's abort fired (`abort_reason`): `cancelled` ends the task cancelled
      (`error` says so), `timeout` fails it retryable, `taken_by_another_worker` and
      `not_found` record nothing, `shutdown` hands it back. `stopped`: whether the handler
      returned within the worker's wind-down (3 s) after the abort; a worker leaves a handler
      that did not behind.
    """

    status: str
    task: Task
    result: Any = None
    follow_ups: list[dict[str, Any]] = field(default_factory=list)
    returned: Any = None
    error: str | None = None
    retryable: bool | None = None
    exception: BaseException | None = None
    seconds: float | None = None
    abort_reason: str | None = None
    stopped: bool = True
    duration: float = 0.0

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def snoozed(self) -> bool:
        return self.status == "snoozed"

    @property
    def aborted(self) -> bool:
        return self.status == "aborted"

    @property
    def permanent(self) -> bool:
        """Failed for good (PermanentError, a refusal, a cancel): no retry."""
        return self.status in ("failed", "aborted") and self.retryable is False

    def __str__(self) -> str:
        if self.completed:
            return f"completed: {self.result!r}" + (f", follow-ups {self.follow_ups!r}" if self.follow_ups else "")
        if self.failed:
            return f"failed ({'retryable' if self.retryable else 'permanent'}): {self.error}"
        if self.snoozed:
            return f"snoozed for {self.seconds} s"
        return f"aborted ({self.abort_reason})" + (f": {self.error}" if self.error else "")


def run_handler(
    handler: str | Callable[[Task], Any],
    task: Task | Mapping[str, Any] | None = None,
    *,
    registry: handlers.Registry | None = None,
    role: str | None = None,
    abort_after: float | None = None,
    abort_reason: str = "cancelled",
    wind_down: float = ABORT_WIND_DOWN_SECONDS,
    run_timeout: float = DEFAULT_RUN_TIMEOUT,
) -> HandlerOutcome:
    """Run a handler on a task as a worker would, with no database, and say what the worker
    would record (a HandlerOutcome).

    handler: a role (its handler is looked up in `registry`, the global pyworker.handlers
    registry by default) or a handler function itself (then run through `registry`'s
    middlewares, if one is given, under `role`, else the task's role, else the function's
    name). task: a Task (make_task), or a payload (a dict, or None for {}) for a task of that
    role, made with make_task.

    The handler runs in a thread of its own (an `async def` one on an event loop of its own), as
    in a worker, with handlers.current_task set. `abort_after` seconds after it starts, the
    task's abort fires with `abort_reason` (`cancelled` by default; `timeout`, `shutdown`,
    `taken_by_another_worker`, `not_found`), as the worker's heartbeat or run timeout fires it;
    a test may also fire `task.abort` itself, from the handler's side or another thread. An abort
    cancels an async handler. After an abort the handler has `wind_down` seconds to return, the
    worker's grace; one that takes longer is left running (outcome.stopped is False). A task
    whose abort fired before the call is not run at all, as in a worker.
    """
    if abort_reason not in ABORT_REASONS:
        raise ValueError(f"run_handler: abort_reason must be one of {', '.join(ABORT_REASONS)}, not {abort_reason!r}")
    if abort_after is not None and not abort_after >= 0:
        raise ValueError(f"run_handler: abort_after must be 0 or more seconds, not {abort_after!r}")
    if isinstance(task, Task):
        task_role = task.role
    elif task is None or isinstance(task, Mapping):
        task_role = None
    else:
        raise TypeError(
            f"run_handler: the task must be a pyworker Task (make_task) or a payload dict, not {type(task).__name__}"
        )
    runner, role = _registry_for(handler, registry, role or task_role)
    if not isinstance(task, Task):
        task = make_task(role, task)
    elif task.role != role:
        raise ValueError(f"run_handler: the task is of role {task.role!r}, the handler of role {role!r}")

    if task.abort.fired:
        # Aborted while it waited its turn: a worker does not run it.
        return _outcome(task, Outcome(duration=0.0), run_timeout, stopped=True)

    started = time.monotonic()
    timer = None
    if abort_after is not None:
        timer = threading.Timer(abort_after, task.abort.fire, args=(abort_reason,))
        timer.daemon = True
        timer.start()
    try:
        if is_async_handler(runner.get(task.role)):
            outcome, stopped = _run_async(runner, task, wind_down)
        else:
            outcome, stopped = _run_sync(runner, task, wind_down)
    finally:
        if timer is not None:
            timer.cancel()
    outcome.duration = time.monotonic() - started
    return _outcome(task, outcome, run_timeout, stopped=stopped)


def _registry_for(
    handler: Any, registry: handlers.Registry | None, role: str | None
) -> tuple[handlers.Registry, str]:
    """The registry to run with, and the role: for a role name, `registry` (or the global one),
    which must have a handler for it; for a function, a registry of that function alone (under
    its declared role, else `role`, else its name) with `registry`'s middlewares."""
    if isinstance(handler, str):
        source = registry if registry is not None else handlers.registry
        if source.get(handler) is None:
            known = ", ".join(source.roles) or "none"
            raise ConfigurationError(f"no handler for role {handler!r} (handlers are registered for: {known})")
        if role is not None and role != handler:
            raise ValueError(f"run_handler: the task is of role {role!r}, the handler of role {handler!r}")
        return source, handler
    if not callable(handler):
        raise TypeError(
            "run_handler: the handler must be a role name or a callable taking the task,"
            f" not {type(handler).__name__}"
        )
    runner = handlers.Registry()
    declaration = handlers.declaration_of(handler)
    if declaration is not None:
        # A function @handler declared: its role, and its payload read as its payload type.
        if role is not None and role != declaration.role:
            raise ValueError(f"run_handler: the task is of role {role!r}, the handler of role {declaration.role!r}")
        role = declaration.role
        runner.declare(declaration, handler)
    else:
        role = role or getattr(handler, "__name__", None) or "test_role"
        runner.register(role, handler)
    for middleware in registry._middlewares if registry is not None else ():
        runner.middleware(middleware)
    return runner, role


def _run_sync(registry: handlers.Registry, task: Task, wind_down: float) -> tuple[Outcome, bool]:
    """Run the handler in a thread of its own; wait for it, and after an abort `wind_down` s more."""
    done = threading.Event()
    box: list[Outcome] = []

    def attempt() -> None:
        try:
            box.append(run_attempt(registry, task))
        finally:
            done.set()

    threading.Thread(target=attempt, name="handler", daemon=True).start()
    while not done.wait(0.05):
        if task.abort.fired:
            if done.wait(wind_down):
                break
            return Outcome(), False
    return box[0], True


def _run_async(registry: handlers.Registry, task: Task, wind_down: float) -> tuple[Outcome, bool]:
    """Run an async handler as an asyncio task on an event loop in a thread of its own,
    cancelled when the abort fires; wait for it, and after an abort `wind_down` s more."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="asyncio", daemon=True)
    thread.start()
    done = threading.Event()
    box: list[asyncio.Task] = []

    def start() -> None:
        attempt = loop.create_task(run_attempt_async(registry, task))
        attempt.add_done_callback(lambda _attempt: done.set())
        box.append(attempt)

    try:
        loop.call_soon_threadsafe(start)
        while not done.wait(0.05):
            if task.abort.fired:
                loop.call_soon_threadsafe(lambda: box[0].cancel())
                if done.wait(wind_down):
                    break
                return Outcome(), False
        # asyncio.Task answers cancelled(), exception() and result() as the worker's future does.
        return async_outcome(task, box[0]), True
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=1.0)
        if not thread.is_alive() and done.is_set():
            loop.close()


def _outcome(task: Task, outcome: Outcome, run_timeout: float, *, stopped: bool) -> HandlerOutcome:
    """The worker's decision (pyworker.attempts.decide) about `outcome`, as a HandlerOutcome."""
    reason = task.abort.reason
    if reason == "shutdown":
        # The worker hands back an attempt that its shutdown stopped (Worker._end).
        outcome.handed_back = True
    decision = decide(task, outcome, run_timeout)
    common = {"task": task, "returned": outcome.result, "exception": outcome.error, "stopped": stopped}
    common["duration"] = outcome.duration or 0.0
    if reason is not None:
        return HandlerOutcome(
            "aborted",
            abort_reason=reason,
            error=decision.message if decision.kind == "failed" else None,
            retryable=decision.retryable if decision.kind == "failed" else None,
            **common,
        )
    if decision.kind == "failed":
        return HandlerOutcome("failed", error=decision.message, retryable=decision.retryable, **common)
    if decision.kind == "snoozed":
        return HandlerOutcome("snoozed", seconds=decision.seconds, **common)
    if decision.kind == "completed":
        return HandlerOutcome(
            "completed",
            result=None if decision.result is None else json.loads(decision.result.text),
            follow_ups=[] if decision.follow_ups is None else json.loads(decision.follow_ups.text),
            **common,
        )
    # released or lost without an abort: not an outcome a handler can produce.
    raise AssertionError(f"unexpected decision {decision.kind!r} for task {task.id}")
