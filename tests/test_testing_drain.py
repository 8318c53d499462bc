"""The drain mode (Worker(until_empty=True), pyworker.testing.drain) and the `taskpool` fixture of
the taskpool pytest plugin: a real worker, in the test's thread, on a throwaway database."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from pyworker.config import WorkerConfig
from pyworker.errors import ConfigurationError, InvalidInput, PermanentError, Refused, Snooze
from pyworker.handlers import Completion, Registry
from pyworker.testing import DrainTimeout, drain
from pyworker.testing.database import TaskpoolDatabase
from pyworker.worker import Worker


@pytest.fixture
def registry() -> Registry:
    return Registry()


def test_the_fixture_is_a_fresh_deployed_database(taskpool: TaskpoolDatabase):
    with taskpool.connect() as conn:
        assert conn.execute("SELECT taskpool_schema_version()").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM worker_tasks").fetchone()[0] == 0
        name = conn.execute("SELECT current_database()").fetchone()[0]
    assert name.startswith("taskpool_testing_") and name == taskpool.name
    assert taskpool.tasks() == []


def test_a_drain_runs_chains_across_roles_and_reports_every_task(taskpool: TaskpoolDatabase, registry: Registry):
    taskpool.add_role("split", max_retries=0)
    taskpool.add_role("piece", max_retries=0)

    @registry.handler("split")
    def split(task):
        return Completion(
            {"pieces": task.payload["n"]},
            follow_ups=[{"role": "piece", "payload": {"i": i}} for i in range(task.payload["n"])],
        )

    @registry.handler("piece")
    def piece(task):
        if task.payload["i"] == 2:
            raise PermanentError("piece 2 is broken")
        if task.payload["i"] == 0:
            # A follow-up of another role, once more: the drain goes round until nothing is ready.
            return Completion({"i": 0}, follow_ups=[{"role": "split", "payload": {"n": 0}}])
        return {"i": task.payload["i"], "db": os.environ["DATABASE_URL"] == taskpool.url}

    first = taskpool.enqueue("split", {"n": 4})
    done = taskpool.drain(registry)

    assert done.ran == 6
    assert len(done) == 6
    assert done.task(first).status == "completed" and done.task(first).result == {"pieces": 4}
    pieces = {report.payload["i"]: report for report in done.by_role("piece")}
    assert {i: report.status for i, report in pieces.items()} == {
        0: "completed",
        1: "completed",
        2: "failed",
        3: "completed",
    }
    assert pieces[1].result == {"i": 1, "db": True}
    assert pieces[2].error == "PermanentError: piece 2 is broken"
    assert pieces[2].attempt_errors == ["PermanentError: piece 2 is broken"]
    assert pieces[2].attempts == 1
    [second_split] = [report for report in done.by_role("split") if report.id != first]
    assert second_split.status == "completed"
    # The worker deregistered, and the environment is as it was.
    with taskpool.connect() as conn:
        assert conn.execute("SELECT count(*) FROM task_workers").fetchone()[0] == 0
    assert os.environ.get("DATABASE_URL") != taskpool.url


def test_concurrent_drain_with_prefetch_records_every_outcome_before_it_stops(
    taskpool: TaskpoolDatabase, registry: Registry
):
    taskpool.add_role("work", max_retries=0)
    taskpool.add_role("after", max_retries=0)

    @registry.handler("work")
    def work(task):
        time.sleep(0.01 * (task.payload["i"] % 3))
        return Completion({"i": task.payload["i"]}, follow_ups=[{"role": "after", "payload": task.payload}])

    @registry.handler("after")
    def after(task):
        return {"after": task.payload["i"]}

    taskpool.enqueue_many({"role": "work", "payload": {"i": i}} for i in range(60))
    done = taskpool.drain(registry, concurrency=8, prefetch=20)
    assert done.ran == 120
    assert {report.status for report in done} == {"completed"}
    assert sorted(report.result["after"] for report in done.by_role("after")) == list(range(60))


def test_retries_and_snoozes_due_later_stay_pending_until_the_clock_moves(
    taskpool: TaskpoolDatabase, registry: Registry
):
    taskpool.add_role("flaky", max_retries=2, backoff_base="10 seconds", backoff_jitter="none")
    taskpool.add_role("sleepy", max_retries=0)

    @registry.handler("flaky")
    def flaky(task):
        if task.attempt < 3:
            raise RuntimeError(f"attempt {task.attempt} failed")
        return {"attempt": task.attempt}

    @registry.handler("sleepy")
    def sleepy(task):
        if task.attempt == 1:
            raise Snooze(300)
        return {"woke": True}

    flaky_id = taskpool.enqueue("flaky")
    sleepy_id = taskpool.enqueue("sleepy")
    done = taskpool.drain(registry)
    assert done.ran == 2
    assert done.statuses == {flaky_id: "pending", sleepy_id: "pending"}
    assert done.task(flaky_id).retry_count == 1
    assert done.task(flaky_id).attempt_errors == ["RuntimeError: attempt 1 failed"]

    # Nothing due: a drain ends at once, running nothing.
    assert taskpool.drain(registry).ran == 0

    taskpool.advance(3600)
    done = taskpool.drain(registry)
    # The second retry is due 20 s after the second failure: the same drain does not wait for it.
    assert done.task(flaky_id).status == "pending" and done.task(flaky_id).retry_count == 2
    assert done.task(sleepy_id).status == "completed" and done.task(sleepy_id).result == {"woke": True}
    taskpool.advance(3600)
    done = taskpool.drain(registry)
    assert done.task(flaky_id).status == "completed" and done.task(flaky_id).result == {"attempt": 3}
    assert done.task(flaky_id).attempt_errors == ["RuntimeError: attempt 1 failed", "RuntimeError: attempt 2 failed"]


def test_a_drain_that_never_empties_stops_at_its_timeout(taskpool: TaskpoolDatabase, registry: Registry):
    taskpool.add_role("forever", max_retries=0)

    @registry.handler("forever")
    def forever(task):
        raise Snooze(0)  # ready again at once, for ever

    task_id = taskpool.enqueue("forever")
    started = time.monotonic()
    with pytest.raises(DrainTimeout, match=r"the queue was not empty after 1 s \(role 'forever' still had work\)"):
        taskpool.drain(registry, timeout=1)
    assert time.monotonic() - started < 10
    [report] = taskpool.tasks()
    assert report.id == task_id and report.status == "pending"


def test_a_handler_still_running_at_the_timeout_is_aborted_and_handed_back(
    taskpool: TaskpoolDatabase, registry: Registry
):
    taskpool.add_role("slow", max_retries=0)
    aborted = []

    @registry.handler("slow")
    def slow(task):
        task.abort.wait(30)
        aborted.append(task.abort.reason)

    taskpool.enqueue("slow")
    with pytest.raises(DrainTimeout):
        taskpool.drain(registry, timeout=0.5)
    assert aborted == ["shutdown"]
    [report] = taskpool.tasks()
    assert report.status == "pending" and report.retry_count == 0


def test_a_drain_installs_no_signal_handler(taskpool: TaskpoolDatabase, registry: Registry):
    taskpool.add_role("noop", max_retries=0)
    registry.register("noop", lambda task: None)
    taskpool.enqueue("noop")
    before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))
    wakeup = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wakeup)
    assert taskpool.drain(registry).ran == 1
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    assert signal.set_wakeup_fd(wakeup) == wakeup


def test_a_drain_runs_in_any_thread(taskpool: TaskpoolDatabase, registry: Registry):
    taskpool.add_role("noop", max_retries=0)
    registry.register("noop", lambda task: {"thread": threading.current_thread().name})
    taskpool.enqueue("noop")
    ran = []
    thread = threading.Thread(target=lambda: ran.append(drain(taskpool.url, "noop", registry)))
    thread.start()
    thread.join(30)
    assert ran == [1]
    assert [report.status for report in taskpool.tasks()] == ["completed"]


def test_a_drain_of_async_handlers_leaves_no_event_loop_thread_behind(
    taskpool: TaskpoolDatabase, registry: Registry
):
    taskpool.add_role("async_noop", max_retries=0)

    @registry.handler("async_noop")
    async def async_noop(task):
        return {"thread": threading.current_thread().name}

    taskpool.enqueue("async_noop")
    assert taskpool.drain(registry).ran == 1
    assert [report.result for report in taskpool.tasks()] == [{"thread": "asyncio"}]

    def loop_threads() -> list[str]:
        """The event loop's thread and its watchdog's, while they live."""
        return [thread.name for thread in threading.enumerate() if thread.name.startswith("asyncio")]

    deadline = time.monotonic() + 10
    while loop_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert loop_threads() == []


def test_drain_refuses_bad_input_clearly(taskpool: TaskpoolDatabase, registry: Registry):
    with pytest.raises(ConfigurationError, match="no handler is registered"):
        drain(taskpool.url, None, registry)
    with pytest.raises(ConfigurationError, match="no role given"):
        drain(taskpool.url, [], registry)
    registry.register("noop", lambda task: None)
    with pytest.raises(ConfigurationError, match="unknown role 'nope'"):
        drain(taskpool.url, "nope", registry)
    with pytest.raises(ConfigurationError, match="no handler for role 'store_discovery'"):
        drain(taskpool.url, "store_discovery", registry)
    with pytest.raises(Refused, match="task_roles_role_is_identifier"):
        taskpool.add_role("Not A Role")
    with pytest.raises(InvalidInput, match="unknown role 'nope'"):
        taskpool.enqueue("nope")
    assert taskpool.tasks() == []


def test_a_worker_in_drain_mode_returns_when_nothing_is_ready(taskpool: TaskpoolDatabase, registry: Registry):
    """Worker(until_empty=True).run() itself: no signal needed to return."""
    taskpool.add_role("noop", max_retries=0)
    registry.register("noop", lambda task: {"n": task.payload["n"]})
    taskpool.enqueue_many({"role": "noop", "payload": {"n": n}} for n in range(5))
    worker = Worker(
        WorkerConfig(database_url=taskpool.url, roles="noop", heartbeat_interval=1.0), registry, until_empty=True
    )
    assert worker.run() == 0
    assert worker.taken == 5
    assert [report.result for report in taskpool.tasks()] == [{"n": n} for n in range(5)]


def test_a_completion_the_database_refuses_fails_its_attempt_alone_and_the_rest_of_its_batch_completes(
    taskpool: TaskpoolDatabase, registry: Registry
):
    """complete_tasks records a batch in one call; a follow-up it refuses (an unknown role) refuses
    the call, and the recorder records the batch's completions one by one: that one fails its
    attempt, saying why, the others complete."""
    taskpool.add_role("fan", max_retries=0)
    together = threading.Barrier(4, timeout=10)

    @registry.handler("fan")
    def fan(task):
        together.wait()
        role = "no_such_role" if task.payload["i"] == 1 else "fan_done"
        return Completion({"i": task.payload["i"]}, follow_ups=[{"role": role}] if task.payload["i"] < 2 else [])

    taskpool.add_role("fan_done", max_retries=0)
    ids = [taskpool.enqueue("fan", {"i": i}) for i in range(4)]
    done = taskpool.drain(registry, roles=["fan"], concurrency=4)

    statuses = {done.task(task_id).payload["i"]: done.task(task_id).status for task_id in ids}
    assert statuses == {0: "completed", 1: "failed", 2: "completed", 3: "completed"}
    refused = done.task(ids[1])
    assert refused.error.startswith("the outcome could not be stored: "), refused.error
    assert "no_such_role" in refused.error
    assert done.task(ids[0]).result == {"i": 0}
