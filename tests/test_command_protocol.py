"""The command-handler protocol (docs/commands.md): exit codes, the envelope on the last stdout
line, the output before it, and the structured error kept with each failed attempt in
worker_task_attempts.error_data. Real `python -m pyworker` processes running
tests/worker_commands.py's `scripted` command against a real database; each case is a task whose
payload tells the command what to print and how to exit.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import psycopg
from worker_support import (
    Workers,
    cli_runner_for,
    command_line,
    enqueue,
    fetch_one,
    kill_if_running,
    process_gone,
    run_json,
    wait_for,
    wait_for_status,
)

# name -> (the payload: what the command prints and how it exits; the task's status, retry_count after it)
CASES: dict[str, tuple[dict[str, Any], str, int]] = {
    "plain": ({"stdout": '{"a": 1}\n'}, "completed", 0),
    "plain_indented": ({"stdout": '{\n  "a": [1,\n 2]\n}\n'}, "completed", 0),
    "empty": ({}, "completed", 0),
    "log_then_plain": ({"stdout": 'step 1\nstep 2\n[1, 2, 3]\n'}, "completed", 0),
    "result": ({"stdout": 'progress 1\nprogress 2\n{"result": {"n": 2}}\n'}, "completed", 0),
    "looks_plain": ({"stdout": '{"result": 1}'}, "completed", 0),
    "empty_object": ({"stdout": "{}"}, "completed", 0),
    "follow_ups": (
        {"stdout": json.dumps({"result": 7, "follow_ups": [{"role": "test_outcome", "payload": {"raise": "nothing", "from": "cmd"}}]})},
        "completed",
        0,
    ),
    "error_permanent": ({"stdout": 'looked\n{"error": "store closed", "retryable": false}\n'}, "failed", 0),
    "error_retryable": ({"stdout": '{"error": "platform busy"}\n', "stderr": "503 from platform\n"}, "pending", 1),
    "snooze": ({"stdout": '{"snooze": 30}\n'}, "pending", 0),
    "exit_75": ({"stderr": "try later\n", "exit": 75}, "pending", 1),
    "exit_65": ({"stderr": "bad payload\n", "exit": 65}, "failed", 0),
    "exit_65_error": ({"stdout": '{"error": "no such store"}\n', "exit": 65}, "failed", 0),
    "exit_3": ({"stderr": "crashed\n", "exit": 3}, "pending", 1),
    "exit_3_result": ({"stdout": '{"result": 1}\n', "exit": 3}, "pending", 1),
    "signal": ({"stderr": "dying\n", "signal": "SIGKILL"}, "pending", 1),
    "bad_envelope": ({"stdout": '{"result": 1, "error": "x"}\n'}, "pending", 1),
    "bad_snooze": ({"stdout": '{"snooze": -5}\n'}, "pending", 1),
    "retryable_only": ({"stdout": '{"retryable": false}\n'}, "pending", 1),
    "not_json": ({"stdout": "hello\nworld\n"}, "pending", 1),
    # 'fine\n{"result": "\xff"}\n': the last line is not UTF-8.
    "not_utf8": ({"stdout_hex": "66696e650a7b22726573756c74223a2022ff227d0a"}, "pending", 1),
    "flood": ({"flood": 5 * 1024 * 1024}, "pending", 1),
    # NUL, a control character, é and a byte that is not UTF-8, 200,000 times, then the last words.
    "huge_stderr": (
        {"stderr_hex": "0001c3a9ff", "stderr_repeat": 200_000, "stderr": "last words\n", "exit": 1},
        "pending",
        1,
    ),
}


def attempt_data(conn: psycopg.Connection, task_id: int) -> tuple[str, str, dict[str, Any] | None]:
    return fetch_one(
        conn,
        "SELECT outcome, error_message, error_data FROM worker_task_attempts WHERE task_id = %s",
        (task_id,),
    )


def test_each_way_a_command_ends_gets_its_outcome_and_its_error_data(
    pool: psycopg.Connection, workers: Workers, db_url: str
) -> None:
    worker = workers.start(
        "test_protocol", "proto", command=command_line("scripted"), handlers=None, concurrency=8
    )
    ids: dict[str, int] = {}
    for name, (payload, _status, _retries) in CASES.items():
        ids[name] = enqueue(pool, "test_protocol", payload)

    # Every attempt ends well before the role's run timeout (20 s): the flood is killed at once.
    wait_for(
        lambda: fetch_one(
            pool,
            "SELECT count(*) FROM worker_tasks WHERE id = ANY(%s) AND status IN ('running', 'claimed')"
            " OR (id = ANY(%s) AND attempt = 0)",
            (list(ids.values()), list(ids.values())),
        )[0]
        == 0,
        15,
        "every case's attempt to end",
        also=worker.describe,
    )
    rows = {
        name: fetch_one(
            pool, "SELECT status, retry_count, result, error_message FROM worker_tasks WHERE id = %s", (task_id,)
        )
        for name, task_id in ids.items()
    }
    for name, (_payload, status, retries) in CASES.items():
        assert rows[name][:2] == (status, retries), (name, rows[name], worker.describe())

    results = {name: rows[name][2] for name in ids}
    assert results["plain"] == {"a": 1}
    assert results["plain_indented"] == {"a": [1, 2]}
    assert results["empty"] is None
    assert results["log_then_plain"] == [1, 2, 3]
    assert results["result"] == {"n": 2}
    # The documented rule: an object whose keys are all envelope keys is an envelope.
    assert results["looks_plain"] == 1
    assert results["empty_object"] == {}
    assert results["follow_ups"] == 7
    follow_up = fetch_one(pool, "SELECT payload FROM worker_tasks WHERE role = 'test_outcome'")
    assert follow_up == ({"raise": "nothing", "from": "cmd"},)

    # The output before the envelope is the command's log: logged with a success.
    worker.wait_for_log(f"Task {ids['result']}: command output: progress 1\nprogress 2")

    # Failures: the message, and the structured error beside it.
    outcome, message, data = attempt_data(pool, ids["error_permanent"])
    assert (outcome, message) == ("failed", "CommandFailed: store closed")
    assert data == {
        "type": "CommandFailed",
        "reason": "envelope",
        "retryable": False,
        "exit_code": 0,
        "signal": None,
        "stderr_tail": "",
        "stdout_tail": "looked",
    }
    outcome, message, data = attempt_data(pool, ids["error_retryable"])
    assert (outcome, message) == ("retried", "CommandFailed: platform busy")
    assert data["stderr_tail"] == "503 from platform" and data["retryable"] is True

    assert attempt_data(pool, ids["snooze"])[0] == "released"
    scheduled = fetch_one(
        pool, "SELECT extract(epoch FROM scheduled_for - taskpool_now()) FROM worker_tasks WHERE id = %s", (ids["snooze"],)
    )[0]
    assert 20 < scheduled <= 30

    for name, code in (("exit_75", 75), ("exit_65", 65), ("exit_3", 3)):
        outcome, message, data = attempt_data(pool, ids[name])
        assert message.startswith(f"CommandFailed: command exited with status {code}: "), message
        assert (data["exit_code"], data["signal"], data["reason"]) == (code, None, "exit_code")
        assert data["retryable"] is (code != 65)
    assert attempt_data(pool, ids["exit_75"])[2]["stderr_tail"] == "try later"
    # A non-zero exit decides, whatever the last line says; an error envelope names the error.
    assert attempt_data(pool, ids["exit_65_error"])[1] == "CommandFailed: command exited with status 65: no such store"
    assert attempt_data(pool, ids["exit_3_result"])[2]["stdout_tail"] == '{"result": 1}'

    outcome, message, data = attempt_data(pool, ids["signal"])
    assert message == "CommandFailed: command killed by SIGKILL: dying"
    assert (data["exit_code"], data["signal"], data["reason"]) == (None, "SIGKILL", "signal")

    for name in ("bad_envelope", "bad_snooze", "retryable_only"):
        outcome, message, data = attempt_data(pool, ids[name])
        assert message.startswith("CommandFailed: command printed an invalid envelope: "), (name, message)
        assert data["reason"] == "bad_envelope"
    for name in ("not_json", "not_utf8"):
        outcome, message, data = attempt_data(pool, ids[name])
        assert message.startswith("CommandFailed: command printed something that is not JSON: "), (name, message)
        assert data["reason"] == "bad_output"
    assert "not UTF-8" in attempt_data(pool, ids["not_utf8"])[1]

    outcome, message, data = attempt_data(pool, ids["flood"])
    assert message == f"CommandFailed: command printed more than {4 * 1024 * 1024} bytes on stdout: killed"
    assert data["reason"] == "stdout_too_large"

    # Huge stderr with NULs and control characters: kept, bounded, storable.
    outcome, message, data = attempt_data(pool, ids["huge_stderr"])
    assert message.endswith("last words")
    assert data["stderr_tail"].endswith("last words")
    assert len(json.dumps(data).encode()) <= 16384
    size = fetch_one(pool, "SELECT octet_length(error_data::text) FROM worker_task_attempts WHERE task_id = %s", (ids["huge_stderr"],))[0]
    assert size <= 16384

    # `pyworker show` prints the error data under the attempt history, and --json has it.
    run = cli_runner_for(db_url)
    shown = run("show", str(ids["exit_75"]))
    assert shown.exit_code == 0, shown.output
    (line,) = [line for line in shown.output.splitlines() if line.startswith("error data of attempt 1: ")]
    assert json.loads(line.split(": ", 1)[1]) == attempt_data(pool, ids["exit_75"])[2]
    assert run_json(run, "show", str(ids["signal"]))["attempts"][0]["error_data"]["signal"] == "SIGKILL"

    # The worker went on through all of it.
    assert worker.process.poll() is None
    follow_up_id = fetch_one(pool, "SELECT id FROM worker_tasks WHERE role = 'test_outcome'")[0]
    assert follow_up_id not in ids.values()


def test_a_python_handler_failure_records_its_exception_type_as_error_data(
    pool: psycopg.Connection, workers: Workers
) -> None:
    retried = enqueue(pool, "test_outcome", {"raise": "value_error"})
    permanent = enqueue(pool, "test_outcome", {"raise": "permanent"})
    worker = workers.start("test_outcome", "proto-py")
    for task_id in (retried, permanent):
        wait_for(
            lambda task_id=task_id: attempt_data(pool, task_id),
            10,
            f"task {task_id}'s attempt to be recorded",
            also=worker.describe,
        )
    assert attempt_data(pool, retried)[2] == {"type": "ValueError"}
    assert attempt_data(pool, permanent)[2] == {"type": "PermanentError"}
    wait_for_status(pool, permanent, "failed", 5)


# Prints its result and exits, leaving a child that holds its stdout open for ten minutes.
LINGERING_CHILD_SCRIPT = """#!/bin/sh
cat > /dev/null
sleep 600 &
echo $! > "$1"
echo '{"result": {"done": true}}'
"""


def test_a_command_s_result_is_taken_when_it_exits_though_a_child_holds_its_stdout(
    pool: psycopg.Connection, workers: Workers, tmp_path: Path
) -> None:
    # A run timeout far beyond the wait below: the attempt must end when the command exits, not
    # when the child's stdout closes or the run timeout kills it.
    pool.execute("INSERT INTO task_roles (role, run_timeout, max_retries) VALUES ('test_lingering_command', '5 minutes', 0)")
    script = tmp_path / "lingering.sh"
    script.write_text(LINGERING_CHILD_SCRIPT)
    pid_file = tmp_path / "child.pid"
    worker = workers.start(
        "test_lingering_command", "cmd-lingering", command=shlex.join(["sh", str(script), str(pid_file)]), handlers=None
    )
    task_id = enqueue(pool, "test_lingering_command")
    try:
        row = wait_for_status(pool, task_id, ("completed", "failed"), 20, also=worker.describe)
        assert (row["status"], row["result"], row["error_message"]) == ("completed", {"done": True}, None)
        # The child the command left running in its process group is killed once it exits.
        child = int(pid_file.read_text())
        wait_for(lambda: process_gone(child), 10, f"the command's child {child} to be killed", also=worker.describe)
    finally:
        if pid_file.exists():
            kill_if_running(int(pid_file.read_text()))
    assert worker.process.poll() is None
