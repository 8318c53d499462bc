"""What the worker records for each way a handler ends, command handlers, start-up failures
and log lines: real `python -m pyworker` processes against a real database.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import psycopg
from worker_support import (
    Workers,
    command_line,
    enqueue,
    fetch_one,
    kill_if_running,
    process_gone,
    wait_for,
    wait_for_status,
)


def seconds_until_scheduled(conn: psycopg.Connection, task_id: int) -> float:
    """How far in the future (database time) the task is scheduled."""
    return float(
        fetch_one(
            conn,
            "SELECT extract(epoch FROM scheduled_for - taskpool_now())"
            " FROM worker_tasks WHERE id = %s",
            (task_id,),
        )[0]
    )


def outcome_of(conn: psycopg.Connection, task_id: int) -> tuple[str, int, int, str | None]:
    return fetch_one(
        conn,
        "SELECT status, attempt, retry_count, error_message FROM worker_tasks WHERE id = %s",
        (task_id,),
    )


def test_retryable_permanent_and_snooze_outcomes(
    pool: psycopg.Connection, workers: Workers
) -> None:
    retried = enqueue(pool, "test_outcome", {"raise": "value_error"})
    permanent = enqueue(pool, "test_outcome", {"raise": "permanent"})
    snoozed = enqueue(pool, "test_outcome", {"raise": "snooze"})
    worker = workers.start("test_outcome", "outcome-a")

    wait_for(
        lambda: fetch_one(
            pool,
            "SELECT count(*) = 3 FROM worker_tasks"
            " WHERE attempt = 1 AND status IN ('pending', 'failed')",
        )[0],
        10,
        "the three attempts to end",
        also=worker.describe,
    )
    # ValueError: retried after the role's backoff_base (20 s), one retry spent.
    assert outcome_of(pool, retried) == ("pending", 1, 1, "ValueError: the platform answered 503")
    assert 15 < seconds_until_scheduled(pool, retried) <= 20
    # PermanentError: failed now, retries left unspent.
    assert outcome_of(pool, permanent) == (
        "failed",
        1,
        0,
        "PermanentError: the store is closed for good",
    )
    # Snooze(30): back in 30 s, no retry spent.
    assert outcome_of(pool, snoozed) == ("pending", 1, 0, None)
    assert 25 < seconds_until_scheduled(pool, snoozed) <= 30

    history = dict(
        pool.execute(
            "SELECT task_id, outcome FROM worker_task_attempts ORDER BY task_id"
        ).fetchall()
    )
    assert history == {retried: "retried", permanent: "failed", snoozed: "released"}
    # Each line is logged after its outcome commits: wait for it rather than read the log once.
    worker.wait_for_log(f"Task {retried} failed: ValueError: the platform answered 503 (now pending)")
    worker.wait_for_log(
        f"Task {permanent} failed: PermanentError: the store is closed for good (now failed)"
    )
    worker.wait_for_log(f"Task {snoozed} snoozed for 30 s")


# Command handlers


def test_a_command_gets_the_task_on_stdin_and_its_stdout_is_the_result(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_command", "cmd-ok", command=command_line("echo"), handlers=None)
    task_id = enqueue(pool, "test_command", {"store": "Green Leaf", "products": [1, 2]})

    row = wait_for_status(pool, task_id, ("completed", "failed"), 10, also=worker.describe)
    assert row["status"] == "completed", row["error_message"]
    assert row["result"] == {
        "echo": {"store": "Green Leaf", "products": [1, 2]},
        "task_id": task_id,
        "attempt": 1,
    }


def test_a_command_that_exits_non_zero_fails_the_task_with_its_stderr_tail(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_command", "cmd-fail", command=command_line("fail"), handlers=None)
    task_id = enqueue(pool, "test_command", {})

    # test_command has max_retries 0: the first failure is final.
    row = wait_for_status(pool, task_id, "failed", 10, also=worker.describe)
    message = row["error_message"]
    assert message.startswith("CommandFailed: command exited with status 3: ")
    assert message.endswith("the last words of the command")
    # Only the tail: the command wrote 6,000 characters of noise before its last words.
    assert len(message) < 2100
    worker.wait_for_log(f"Task {task_id} failed: CommandFailed: command exited with status 3")


def start_sleeping_command(
    pool: psycopg.Connection, workers: Workers, worker_id: str, tmp_path: Path
) -> tuple[Any, int, list[int]]:
    """A worker running a task whose command sleeps with a child that ignores SIGTERM.

    Returns the worker, the task id and the PIDs of the command and its child.
    """
    pid_file = tmp_path / "command.pids"
    worker = workers.start(
        "test_command", worker_id, command=command_line("sleep-tree", str(pid_file)), handlers=None
    )
    task_id = enqueue(pool, "test_command", {})
    wait_for(pid_file.exists, 10, "the command to write its PIDs", also=worker.describe)
    pids = [int(pid) for pid in pid_file.read_text().split()]
    assert len(pids) == 2 and not any(process_gone(pid) for pid in pids)
    return worker, task_id, pids


def test_a_command_past_the_run_timeout_is_killed_with_its_children(
    pool: psycopg.Connection, workers: Workers, tmp_path: Path
) -> None:
    worker, task_id, pids = start_sleeping_command(pool, workers, "cmd-slow", tmp_path)
    try:
        # The role's run_timeout is 2 seconds.
        row = wait_for_status(pool, task_id, "failed", 10, also=worker.describe)
        assert row["error_message"] == "timed out after 2 s"
        # The command and its child, which ignores SIGTERM, are gone.
        wait_for(
            lambda: all(process_gone(pid) for pid in pids),
            5,
            f"the command's processes {pids} to end",
        )
    finally:
        for pid in pids:
            kill_if_running(pid)
    assert f"Task {task_id} passed its run timeout of 2 s: aborting it" in worker.log()
    assert worker.process.poll() is None


def test_a_second_sigterm_kills_a_running_command_with_its_children(
    pool: psycopg.Connection, workers: Workers, tmp_path: Path
) -> None:
    worker, _task_id, pids = start_sleeping_command(pool, workers, "cmd-term", tmp_path)
    try:
        worker.send(signal.SIGTERM)
        worker.wait_for_log("Received SIGTERM: finishing the tasks in flight")
        worker.send(signal.SIGTERM)
        assert worker.wait(5) != 0
        # Gone with the worker, though the command runs in its own session and its child
        # ignores SIGTERM.
        wait_for(
            lambda: all(process_gone(pid) for pid in pids),
            5,
            f"the command's processes {pids} to end",
        )
    finally:
        for pid in pids:
            kill_if_running(pid)


def test_processes_runs_that_many_worker_processes_and_stops_them_together(
    pool: psycopg.Connection, workers: Workers
) -> None:
    parent = workers.start("test_outcome", "pool", ready=False, args=("--processes", "2"))
    wait_for(
        lambda: [row[0] for row in pool.execute("SELECT worker_id FROM task_workers ORDER BY 1")]
        == ["pool-1", "pool-2"],
        15,
        "both worker processes to register",
        also=parent.describe,
    )
    task_ids = [enqueue(pool, "test_outcome", {"raise": "nothing"}) for _ in range(6)]
    for task_id in task_ids:
        wait_for_status(pool, task_id, "completed", 10, also=parent.describe)

    parent.send(signal.SIGTERM)
    assert parent.wait(10) == 0
    assert pool.execute("SELECT count(*) FROM task_workers").fetchone()[0] == 0


# Start-up failures


def test_an_unknown_role_exits_2_naming_the_known_roles(
    pool: psycopg.Connection, workers: Workers
) -> None:
    code, stderr = workers.run_to_exit("no_such_role", "start-a")
    assert code == 2, stderr
    assert "unknown role 'no_such_role'" in stderr
    assert "Known roles: " in stderr and "store_discovery" in stderr and "test_work" in stderr
    assert fetch_one(pool, "SELECT count(*) FROM task_workers")[0] == 0


def test_a_role_without_a_handler_exits_2(pool: psycopg.Connection, workers: Workers) -> None:
    code, stderr = workers.run_to_exit("test_command", "start-b")
    assert code == 2, stderr
    assert "no handler for role 'test_command'" in stderr
    assert "test_work" in stderr  # the roles it does have handlers for
    assert fetch_one(pool, "SELECT count(*) FROM task_workers")[0] == 0


def test_a_database_without_the_schema_exits_1_saying_to_deploy(
    workers: Workers, empty_db_url: str
) -> None:
    code, stderr = workers.run_to_exit("test_work", "start-c", database_url=empty_db_url)
    assert code == 1, stderr
    assert "`pyworker schema apply`" in stderr and "`make deploy`" in stderr


# Log lines


def run_success_and_failure(
    pool: psycopg.Connection, workers: Workers, worker_id: str, **settings: Any
) -> tuple[int, int, str]:
    """Run one task that completes and one that fails permanently, stop the worker: its log."""
    ok = enqueue(pool, "test_outcome", {"raise": "nothing"})
    bad = enqueue(pool, "test_outcome", {"raise": "permanent"})
    worker = workers.start("test_outcome", worker_id, **settings)
    wait_for_status(pool, ok, "completed", 10, also=worker.describe)
    wait_for_status(pool, bad, "failed", 10, also=worker.describe)
    worker.send(signal.SIGTERM)
    assert worker.wait(10) == 0, worker.describe()
    return ok, bad, worker.log()


def test_text_log_lines(pool: psycopg.Connection, workers: Workers) -> None:
    ok, bad, log = run_success_and_failure(pool, workers, "log-text")
    lines = log.splitlines()
    for expected in [
        "INFO [log-text] Starting worker log-text for role: test_outcome",
        f"INFO [log-text] Claimed task {ok} (test_outcome)",
        f"INFO [log-text] Task {ok} completed successfully",
        f"INFO [log-text] Claimed task {bad} (test_outcome)",
        f"WARNING [log-text] Task {bad} failed: PermanentError: the store is closed for good (now failed)",
        "INFO [log-text] Worker log-text stopped",
    ]:
        assert any(line.endswith(expected) for line in lines), (expected, log)
    line_format = re.compile(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR) \[log-text\] "
    )
    # Every line is a record, but the failure's traceback, which follows it.
    failure = next(number for number, line in enumerate(lines) if f"Task {bad} failed" in line)
    traceback_end = next(
        number for number, line in enumerate(lines) if line.startswith("pyworker.errors.PermanentError: ")
    )
    assert lines[failure + 1] == "Traceback (most recent call last):", log
    assert all(
        line_format.match(line) for number, line in enumerate(lines) if not failure < number <= traceback_end
    ), log


def test_json_log_lines(pool: psycopg.Connection, workers: Workers) -> None:
    ok, bad, log = run_success_and_failure(pool, workers, "log-json", log_format="json")
    entries = []
    for line in log.splitlines():
        entry = json.loads(line)
        assert isinstance(entry, dict), line
        entries.append(entry)
    assert entries
    assert all(
        entry["worker_id"] == "log-json" and entry["role"] == "test_outcome" for entry in entries
    )
    by_message = {entry["message"]: entry for entry in entries}
    assert "Starting worker log-json for role: test_outcome" in by_message
    assert f"Claimed task {ok} (test_outcome)" in by_message
    assert by_message[f"Task {ok} completed successfully"]["task_id"] == ok
    failed = by_message[
        f"Task {bad} failed: PermanentError: the store is closed for good (now failed)"
    ]
    assert failed["task_id"] == bad and failed["level"] == "warning"
    assert failed["traceback"].endswith("PermanentError: the store is closed for good")
