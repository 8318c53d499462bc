"""pyworker.testing without a database: make_task and run_handler say what a worker would record."""

from __future__ import annotations

import asyncio
import threading
import time
from decimal import Decimal

import pytest
from pyworker import handlers
from pyworker import Task
from pyworker.db import NotJson
from pyworker.errors import ConfigurationError, PermanentError, Snooze
from pyworker.handlers import Completion, Registry
from pyworker.testing import HandlerOutcome, make_task, run_handler


@pytest.fixture
def registry() -> Registry:
    return Registry()


def test_make_task_is_a_running_task_with_its_own_abort_signal():
    task = make_task("resize", {"size": (1, 2), "price": Decimal("1.50")}, id=7, attempt=3, dispensary_id=4)
    assert isinstance(task, Task)
    assert (task.id, task.role, task.attempt, task.retry_count, task.dispensary_id, task.status) == (
        7,
        "resize",
        3,
        2,
        4,
        "running",
    )
    # As the database would give it: JSON through and through.
    assert task.payload == {"size": [1, 2], "price": 1.5}
    assert not task.abort.fired
    other = make_task("resize")
    task.abort.fire("cancelled")
    assert task.abort.reason == "cancelled" and not other.abort.fired
    assert other.payload == {}


@pytest.mark.parametrize(
    ("payload", "error", "text"),
    [
        ({"bad": float("nan")}, NotJson, "make_task: the payload is not JSON: payload['bad'] is nan"),
        ({"bad": {1, 2}}, NotJson, "payload['bad'] is of type set"),
        ([1, 2], ValueError, "the payload must be a JSON object (a dict), not list"),
        ("text", ValueError, "the payload must be a JSON object (a dict), not str"),
    ],
)
def test_make_task_refuses_a_payload_that_is_not_a_json_object(payload, error, text):
    with pytest.raises(error) as raised:
        make_task("resize", payload)
    assert text in str(raised.value)


def test_make_task_refuses_a_bad_role_or_attempt():
    with pytest.raises(ValueError, match="the role must be a non-empty string"):
        make_task("")
    with pytest.raises(ValueError, match="the attempt must be 1 or more"):
        make_task("resize", attempt=0)


def test_a_result_completes_with_the_json_the_database_would_store(registry):
    @registry.handler("resize")
    def resize(task):
        return {"at": Decimal("1.10"), "sizes": (1, 2)}

    outcome = run_handler("resize", {"n": 1}, registry=registry)
    assert isinstance(outcome, HandlerOutcome)
    assert outcome.completed and outcome.status == "completed"
    assert outcome.result == {"at": 1.1, "sizes": [1, 2]}
    assert outcome.returned == {"at": Decimal("1.10"), "sizes": (1, 2)}
    assert outcome.follow_ups == []
    assert outcome.task.payload == {"n": 1} and outcome.task.role == "resize"


def test_a_completion_gives_its_result_and_follow_ups(registry):
    @registry.handler("resize")
    def resize(task):
        return Completion({"done": task.payload["n"]}, follow_ups=[{"role": "notify", "payload": {"n": 1}}])

    outcome = run_handler("resize", {"n": 5}, registry=registry)
    assert outcome.completed
    assert outcome.result == {"done": 5}
    assert outcome.follow_ups == [{"role": "notify", "payload": {"n": 1}}]
    assert run_handler(lambda task: None).result is None


@pytest.mark.parametrize(
    ("raised", "error", "retryable"),
    [
        (PermanentError("store closed"), "PermanentError: store closed", False),
        (RuntimeError("HTTP 503"), "RuntimeError: HTTP 503", True),
        (KeyError("sku"), "KeyError: 'sku'", True),
        (SystemExit(3), "SystemExit: 3", True),
    ],
)
def test_an_exception_fails_the_attempt_as_the_worker_records_it(registry, raised, error, retryable):
    @registry.handler("resize")
    def resize(task):
        raise raised

    outcome = run_handler("resize", registry=registry)
    assert outcome.failed
    assert outcome.error == error
    assert outcome.retryable is retryable and outcome.permanent is not retryable
    assert outcome.exception is raised


def test_a_snooze_puts_the_task_back(registry):
    @registry.handler("resize")
    def resize(task):
        raise Snooze(90)

    outcome = run_handler("resize", registry=registry)
    assert outcome.snoozed and outcome.seconds == 90


def test_a_result_that_is_not_json_fails_the_attempt_retryable(registry):
    @registry.handler("resize")
    def resize(task):
        return {"tags": {"a"}}

    outcome = run_handler("resize", registry=registry)
    assert outcome.failed and outcome.retryable
    assert outcome.error.startswith("the result is not JSON: result['tags'] is of type set")

    @registry.handler("chain")
    def chain(task):
        return Completion({}, follow_ups=[{"role": "x", "payload": {"n": float("inf")}}])

    outcome = run_handler("chain", registry=registry)
    assert outcome.failed and outcome.error.startswith("the result is not JSON: follow_ups[0]['payload']['n']")


def test_middlewares_wrap_the_handler_with_the_current_task_set(registry):
    seen = []

    @registry.middleware
    def outer(task, call_next):
        seen.append(("outer", handlers.current_task.get() is task))
        return {"wrapped": call_next(task)}

    @registry.handler("resize")
    def resize(task):
        seen.append(("handler", handlers.current_task.get() is task, threading.current_thread().name))
        return 1

    outcome = run_handler("resize", registry=registry)
    assert outcome.result == {"wrapped": 1}
    # In a thread of its own, as in a worker.
    assert seen == [("outer", True), ("handler", True, "handler")]
    assert handlers.current_task.get() is None
    # A plain function runs through the registry's middlewares too, under its own name as role.
    outcome = run_handler(lambda task: task.role, registry=registry, role="adhoc")
    assert outcome.result == {"wrapped": "adhoc"}


def test_an_async_handler_is_awaited(registry):
    @registry.handler("fetch")
    async def fetch(task):
        await asyncio.sleep(0.01)
        return {"task": handlers.current_task.get().id}

    outcome = run_handler("fetch", make_task("fetch", id=42), registry=registry)
    assert outcome.completed and outcome.result == {"task": 42}


def test_abort_after_cancels_a_handler_that_waits_on_its_abort(registry):
    @registry.handler("crawl")
    def crawl(task):
        task.abort.wait(10)
        return {"reason": task.abort.reason}

    started = time.monotonic()
    outcome = run_handler("crawl", registry=registry, abort_after=0.1)
    assert time.monotonic() - started < 2
    assert outcome.aborted and outcome.abort_reason == "cancelled" and outcome.stopped
    # As the worker records a cancel: failed for good, and the task ends cancelled.
    assert outcome.error == "cancelled by an operator while running" and outcome.permanent
    assert outcome.returned == {"reason": "cancelled"}


def test_a_test_can_fire_the_abort_itself(registry):
    task = make_task("crawl")
    ready = threading.Event()

    @registry.handler("crawl")
    def crawl(task):
        ready.set()
        while not task.abort.fired:
            time.sleep(0.01)

    threading.Thread(target=lambda: ready.wait(5) and task.abort.fire("taken_by_another_worker")).start()
    outcome = run_handler("crawl", task, registry=registry)
    # A lost attempt records nothing.
    assert outcome.aborted and outcome.abort_reason == "taken_by_another_worker"
    assert outcome.error is None and outcome.retryable is None


@pytest.mark.parametrize(
    ("reason", "error", "retryable"),
    [("timeout", "timed out after 30 s", True), ("shutdown", None, None), ("not_found", None, None)],
)
def test_each_abort_reason_is_recorded_as_the_worker_does(registry, reason, error, retryable):
    @registry.handler("crawl")
    def crawl(task):
        task.abort.wait(10)

    outcome = run_handler("crawl", registry=registry, abort_after=0.05, abort_reason=reason, run_timeout=30)
    assert outcome.aborted and outcome.abort_reason == reason
    assert (outcome.error, outcome.retryable) == (error, retryable)


def test_an_abort_cancels_an_async_handler(registry):
    cancelled = threading.Event()

    @registry.handler("fetch")
    async def fetch(task):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    outcome = run_handler("fetch", registry=registry, abort_after=0.1)
    assert outcome.aborted and outcome.stopped and outcome.abort_reason == "cancelled"
    assert cancelled.is_set()


def test_a_handler_that_ignores_its_abort_is_left_behind_after_the_wind_down(registry):
    release = threading.Event()

    @registry.handler("stuck")
    def stuck(task):
        release.wait(10)

    started = time.monotonic()
    outcome = run_handler("stuck", registry=registry, abort_after=0.05, wind_down=0.2)
    release.set()
    assert time.monotonic() - started < 2
    assert outcome.aborted and not outcome.stopped
    assert outcome.error == "cancelled by an operator while running"


def test_a_task_aborted_before_its_turn_is_not_run(registry):
    ran = []

    @registry.handler("crawl")
    def crawl(task):
        ran.append(task.id)

    task = make_task("crawl")
    task.abort.fire("cancelled")
    outcome = run_handler("crawl", task, registry=registry)
    assert outcome.aborted and ran == []


def test_bad_input_gets_a_clear_error(registry):
    @registry.handler("resize")
    def resize(task):
        return None

    with pytest.raises(ConfigurationError, match=r"no handler for role 'nope' \(handlers are registered for: resize\)"):
        run_handler("nope", registry=registry)
    with pytest.raises(TypeError, match="the handler must be a role name or a callable taking the task, not int"):
        run_handler(42)
    with pytest.raises(TypeError, match="the task must be a pyworker Task .* not list"):
        run_handler("resize", [1], registry=registry)
    with pytest.raises(NotJson, match="the payload is not JSON"):
        run_handler("resize", {"x": float("nan")}, registry=registry)
    with pytest.raises(ValueError, match="the task is of role 'other', the handler of role 'resize'"):
        run_handler("resize", make_task("other"), registry=registry)
    with pytest.raises(ValueError, match="abort_reason must be one of"):
        run_handler("resize", registry=registry, abort_after=1, abort_reason="bored")
    with pytest.raises(ValueError, match="abort_after must be 0 or more"):
        run_handler("resize", registry=registry, abort_after=-1)


def test_the_global_registry_is_the_default():
    @handlers.handler("pyworker_testing_global_role")
    def global_role(task):
        return {"ok": True}

    try:
        assert run_handler("pyworker_testing_global_role").result == {"ok": True}
    finally:
        handlers.registry._handlers.pop("pyworker_testing_global_role")
