"""Tests of greetings.py: the handlers alone, then a real worker on a throwaway database."""

import greetings  # noqa: F401 - registers the handlers
from pyworker.testing import make_task, run_handler

# Without a database: what the worker would record.


def test_a_greeting_completes_and_queues_its_log():
    outcome = run_handler("send_greeting", {"name": "Ada"})
    assert outcome.completed
    assert outcome.result == {"greeting": "Hello, Ada!"}
    assert outcome.follow_ups == [{"role": "log_greeting", "payload": {"name": "Ada"}}]


def test_no_name_fails_for_good():
    outcome = run_handler("send_greeting", {})
    assert outcome.failed and outcome.permanent
    assert outcome.error == "PermanentError: no name to greet"


def test_a_busy_greeter_snoozes():
    outcome = run_handler("send_greeting", make_task("send_greeting", {"name": "Ada", "busy": True}, attempt=2))
    assert outcome.snoozed and outcome.seconds == 60


def test_a_long_greeting_stops_when_cancelled():
    outcome = run_handler("send_greeting", {"name": "Ada", "steps": 100_000}, abort_after=0.1)
    assert outcome.aborted and outcome.abort_reason == "cancelled"
    assert outcome.stopped  # it returned within the worker's wind-down
    assert outcome.duration < 3


# With a database: the `taskpool` fixture (the taskpool pytest plugin).


def test_a_worker_greets_and_logs(taskpool):
    taskpool.add_role("send_greeting", max_retries=0)
    taskpool.add_role("log_greeting")
    ada = taskpool.enqueue("send_greeting", {"name": "Ada"})
    nameless = taskpool.enqueue("send_greeting", {})

    done = taskpool.drain()  # a real worker for each role, in this thread, until nothing is ready

    assert done.task(ada).status == "completed"
    assert done.task(ada).result == {"greeting": "Hello, Ada!"}
    assert done.task(nameless).status == "failed"
    assert done.task(nameless).error == "PermanentError: no name to greet"
    [log] = done.by_role("log_greeting")
    assert (log.status, log.result) == ("completed", {"logged": "Ada"})
