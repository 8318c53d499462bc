"""Batch handlers: one call for many tasks of a role, as graphile-worker's and Oban Pro's batch jobs.

    from pyworker.admin.batch_handlers import batch_handler

    @batch_handler("send_email", max_retries=5)
    async def send_emails(tasks):
        sent = await mailer.send_many([task.payload for task in tasks])
        return [{"message_id": m} if ok else PermanentError(why) for ok, m, why in sent]

The function takes the list of tasks and returns one outcome per task: a list in the tasks'
order, or a dict by task id. An outcome is what a handler returns (a result, a Completion, None)
or an exception instance (Snooze, PermanentError, any other: retried), which ends that task alone
as if its handler had raised it. A task the answer leaves out, or an answer that is neither a
list of the right length nor a dict, fails the tasks concerned (retryable), saying why; an
exception the function raises fails every task of the call. The function may be `async def` or
plain (a plain one runs on the event loop: keep it short).

With `--batch-runtime` the worker hands the function all the tasks of the role one claim brought
(up to its share), in one call; anywhere else (the threaded runtime, pyworker.testing's
run_handler and drain) it gets one task a call. The role is declared as @handler declares it
(same settings). Middlewares wrap each task's attempt, so they do not run around a batch call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pyworker.errors import ConfigurationError
from pyworker.handlers import Registry, registry as default_registry
from pyworker.task import Task

# Where the decorator leaves the batch function on the one-task handler it registers.
BATCH_ATTRIBUTE = "__taskpool_batch__"

BatchT = TypeVar("BatchT", bound=Callable[[list[Task]], Any])


class NoOutcome(Exception):
    """A batch handler's answer gave this task no outcome: the attempt fails (retryable)."""


def batch_handler(role: str, *, target: Registry = default_registry, **declaration: Any) -> Callable[[BatchT], BatchT]:
    """Decorator: `fn(tasks)` handles the tasks of `role` many a call; `declaration`: @handler's
    settings (max_retries, run_timeout, ...) but payload_type. The function is returned unchanged."""
    if "payload_type" in declaration:
        raise ConfigurationError(
            f"batch_handler({role!r}) takes no payload_type: a batch function gets the tasks, and reads"
            " each task's payload (task.payload)"
        )

    def register(fn: BatchT) -> BatchT:
        async def one_at_a_time(task: Task) -> Any:
            (outcome,) = await run_batch(fn, [task])
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome

        one_at_a_time.__name__ = one_at_a_time.__qualname__ = getattr(fn, "__name__", "batch_handler")
        one_at_a_time.__module__ = getattr(fn, "__module__", None) or "__main__"
        setattr(one_at_a_time, BATCH_ATTRIBUTE, fn)
        target.handler(role, **declaration)(one_at_a_time)
        return fn

    return register


def batch_function_of(handler: Any) -> Callable[[list[Task]], Any] | None:
    """The batch function behind a role's registered handler; None for a one-task handler."""
    return getattr(handler, BATCH_ATTRIBUTE, None)


async def run_batch(fn: Callable[[list[Task]], Any], tasks: Sequence[Task]) -> list[Any]:
    """Call `fn` with the tasks; one outcome per task, in their order: what the answer gave it,
    or an exception (the call's own, NoOutcome when the answer left the task out or was not one
    outcome per task)."""
    tasks = list(tasks)
    try:
        answer = fn(tasks)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as error:  # noqa: BLE001 - every task of the call fails with it
        return [error] * len(tasks)
    return outcomes_of(answer, tasks)


def outcomes_of(answer: Any, tasks: list[Task]) -> list[Any]:
    """The answer of a batch function, one outcome per task (see run_batch)."""
    if isinstance(answer, dict):
        missing = NoOutcome("the batch handler's answer (a dict by task id) has no entry for this task")
        return [answer.get(task.id, missing) for task in tasks]
    if isinstance(answer, (list, tuple)) and len(answer) == len(tasks):
        return list(answer)
    what = f"a {type(answer).__name__} of {len(answer)}" if isinstance(answer, (list, tuple)) else type(answer).__name__
    problem = NoOutcome(
        f"the batch handler answered {what} for {len(tasks)} tasks: it must return a list with one outcome"
        " per task, in their order, or a dict by task id"
    )
    return [problem] * len(tasks)
