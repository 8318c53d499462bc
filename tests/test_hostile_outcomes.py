"""Hostile outcomes, payloads and rows (issue 11): whatever a handler returns or raises, and
whatever a stored task holds, the worker records an outcome for that task alone and goes on, and
the CLI prints the task.

Worker cases run real `python -m pyworker` processes with tests/hostile_handlers.py. Rows the
SQL functions would refuse (an unreadable payload, an infinite time) are written as the test
superuser, the way an older version or an operator's hand could have left them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import Result
from worker_support import WorkerProcess, Workers, enqueue, fetch_one, task_row, wait_for, wait_for_status

from pyworker.errors import Snooze

HOSTILE = "test_hostile"
# A payload psycopg's JSON load refuses: Python's json nests about 1,000 deep at most.
DEEP_PAYLOAD = '{"do": "ok", "deep": ' + "[" * 1500 + "]" * 1500 + "}"
# Python refuses to read an integer of more than 4,300 digits.
LONG_NUMBER_PAYLOAD = '{"do": "ok", "n": ' + "9" * 5000 + "}"


@pytest.fixture
def hostile(pool: psycopg.Connection) -> psycopg.Connection:
    """The test pool with the role of hostile_handlers.py: retried after 20 s (no jitter), 3 retries."""
    pool.execute(
        "INSERT INTO task_roles (role, backoff_base, backoff_jitter, max_retries) VALUES (%s, '20 seconds', 'none', 3)",
        (HOSTILE,),
    )
    return pool


def start(workers: Workers, name: str, prefetch: int = 1) -> WorkerProcess:
    return workers.start(HOSTILE, name, handlers="hostile_handlers", prefetch=prefetch)


def enqueue_hostile(conn: psycopg.Connection, do: str) -> int:
    return enqueue(conn, HOSTILE, {"do": do})


def store_payload(conn: psycopg.Connection, task_id: int, payload: str) -> None:
    """Give a pending task a payload enqueue may refuse (written as the superuser)."""
    conn.execute("UPDATE worker_tasks SET payload = %s::jsonb WHERE id = %s", (payload, task_id))


def goes_on(conn: psycopg.Connection, worker: WorkerProcess) -> None:
    """The worker is alive and still works: a task enqueued now completes."""
    assert worker.process.poll() is None, worker.describe()
    after = enqueue_hostile(conn, "ok")
    wait_for_status(conn, after, "completed", 10, also=worker.describe)
    assert worker.process.poll() is None, worker.describe()


def completed_result(conn: psycopg.Connection, worker: WorkerProcess, task_id: int) -> Any:
    return wait_for_status(conn, task_id, "completed", 10, also=worker.describe)["result"]


def failed_attempt(conn: psycopg.Connection, worker: WorkerProcess, task_id: int) -> dict[str, Any]:
    """The task's row once its first attempt ended in a failure (retried or final)."""

    def ended() -> dict[str, Any] | None:
        row = task_row(conn, task_id)
        return row if row["status"] in ("pending", "failed") and row["error_message"] else None

    return wait_for(ended, 10, f"the first attempt of task {task_id} to fail", also=worker.describe)


def assert_retried(row: dict[str, Any], message_start: str) -> None:
    assert (row["status"], row["attempt"], row["retry_count"]) == ("pending", 1, 1), row
    assert row["error_message"].startswith(message_start), row["error_message"]


# Results JSON cannot hold as they are


def test_a_datetime_in_the_result_is_stored_as_iso_8601(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "datetime")
    worker = start(workers, "hostile-datetime")
    assert completed_result(hostile, worker, task_id) == {
        "at": "2026-01-02T03:04:05+00:00",
        "day": "2026-01-02",
    }
    goes_on(hostile, worker)


def test_a_decimal_in_the_result_is_stored_with_every_digit(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "decimal")
    worker = start(workers, "hostile-decimal")
    wait_for_status(hostile, task_id, "completed", 10, also=worker.describe)
    stored = fetch_one(
        hostile,
        "SELECT jsonb_typeof(result->'price'), result->>'price' FROM worker_tasks WHERE id = %s",
        (task_id,),
    )
    assert stored == ("number", "0.1000000000000000000001")
    goes_on(hostile, worker)


def test_a_uuid_in_the_result_is_stored_as_text(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "uuid")
    worker = start(workers, "hostile-uuid")
    assert completed_result(hostile, worker, task_id) == {"id": "12345678-1234-5678-1234-567812345678"}
    goes_on(hostile, worker)


def test_a_result_that_is_not_json_fails_that_attempt_saying_why(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "set")
    worker = start(workers, "hostile-set")
    assert_retried(
        failed_attempt(hostile, worker, task_id),
        "the result is not JSON: result['tags'] is of type set",
    )
    goes_on(hostile, worker)


def test_a_nan_in_the_result_fails_that_attempt_saying_why(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "nan")
    worker = start(workers, "hostile-nan")
    assert_retried(
        failed_attempt(hostile, worker, task_id),
        "the result is not JSON: result['ratio'] is nan",
    )
    goes_on(hostile, worker)


def test_an_unexpected_error_while_recording_fails_that_task(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "items_raise")
    worker = start(workers, "hostile-items")
    assert_retried(
        failed_attempt(hostile, worker, task_id),
        "the outcome could not be stored: RuntimeError: items() is broken",
    )
    goes_on(hostile, worker)


def test_with_prefetch_a_bad_result_fails_alone_and_the_batch_completes(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    good = [enqueue_hostile(hostile, "ok") for _ in range(2)]
    bad = enqueue_hostile(hostile, "set")
    good.append(enqueue_hostile(hostile, "ok"))
    worker = start(workers, "hostile-prefetch", prefetch=4)
    for task_id in good:
        assert completed_result(hostile, worker, task_id) == {"ok": True}
    assert_retried(failed_attempt(hostile, worker, bad), "the result is not JSON: result['tags'] is of type set")
    goes_on(hostile, worker)


def test_with_prefetch_an_unexpected_error_fails_alone_and_the_batch_completes(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    good = enqueue_hostile(hostile, "ok")
    bad = enqueue_hostile(hostile, "items_raise")
    last = enqueue_hostile(hostile, "ok")
    worker = start(workers, "hostile-prefetch-items", prefetch=3)
    assert completed_result(hostile, worker, good) == {"ok": True}
    assert completed_result(hostile, worker, last) == {"ok": True}
    assert_retried(
        failed_attempt(hostile, worker, bad),
        "the outcome could not be stored: RuntimeError: items() is broken",
    )
    goes_on(hostile, worker)


# Snoozes the database cannot store


@pytest.mark.parametrize(
    ("seconds", "reason"),
    [
        (float("inf"), "a finite delay in seconds, not inf"),
        (float("nan"), "a finite delay in seconds, not nan"),
        (1e12, "a delay of at most 31622400 seconds (366 days), not 1000000000000.0"),
    ],
)
def test_snooze_refuses_a_delay_it_cannot_store(seconds: float, reason: str) -> None:
    with pytest.raises(ValueError, match="^Snooze needs " + re.escape(reason) + "$"):
        Snooze(seconds)


@pytest.mark.parametrize("do", ["snooze_inf", "snooze_nan", "snooze_1e12"])
def test_a_snooze_out_of_bounds_fails_that_attempt(
    hostile: psycopg.Connection, workers: Workers, do: str
) -> None:
    task_id = enqueue_hostile(hostile, do)
    worker = start(workers, f"hostile-{do.replace('_', '-')}")
    assert_retried(failed_attempt(hostile, worker, task_id), "ValueError: Snooze needs ")
    goes_on(hostile, worker)


def test_a_snooze_the_database_refuses_fails_that_attempt(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "snooze_refused")
    worker = start(workers, "hostile-snooze-refused")
    assert_retried(
        failed_attempt(hostile, worker, task_id), "the outcome could not be stored: the snooze of 1e+300 s"
    )
    goes_on(hostile, worker)


# Error messages text cannot hold as they are


def test_a_nul_byte_in_the_error_message_is_escaped(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "nul")
    worker = start(workers, "hostile-nul")
    row = failed_attempt(hostile, worker, task_id)
    assert_retried(row, "ValueError: bad")
    assert row["error_message"] == "ValueError: bad\\x00byte"
    goes_on(hostile, worker)


def test_a_lone_surrogate_in_the_error_message_is_escaped(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "surrogate")
    worker = start(workers, "hostile-surrogate")
    row = failed_attempt(hostile, worker, task_id)
    assert_retried(row, "ValueError: bad")
    assert row["error_message"] == "ValueError: bad\\udc80byte"
    goes_on(hostile, worker)


def test_an_exception_whose_str_raises_is_recorded_by_its_type(
    hostile: psycopg.Connection, workers: Workers
) -> None:
    task_id = enqueue_hostile(hostile, "unprintable")
    worker = start(workers, "hostile-unprintable")
    assert_retried(
        failed_attempt(hostile, worker, task_id),
        "Unprintable (its message cannot be read: RuntimeError: __str__ is broken)",
    )
    goes_on(hostile, worker)


# Payloads a worker cannot load


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (DEEP_PAYLOAD, "the payload cannot be read: JSON nested too deeply"),
        (LONG_NUMBER_PAYLOAD, "the payload cannot be read: Exceeds the limit (4300 digits)"),
    ],
    ids=["nested-1500-deep", "number-of-5000-digits"],
)
def test_an_unreadable_payload_fails_that_task_alone(
    hostile: psycopg.Connection, workers: Workers, payload: str, reason: str
) -> None:
    before = enqueue_hostile(hostile, "ok")
    unreadable = enqueue_hostile(hostile, "ok")
    store_payload(hostile, unreadable, payload)
    after = enqueue_hostile(hostile, "ok")
    worker = start(workers, "hostile-payload", prefetch=3)
    assert completed_result(hostile, worker, before) == {"ok": True}
    assert completed_result(hostile, worker, after) == {"ok": True}
    # Not SELECT *: the test's psycopg cannot load that payload either.
    status, attempt, retry_count, error_message = wait_for(
        lambda: fetch_one(
            hostile,
            "SELECT status, attempt, retry_count, error_message FROM worker_tasks"
            " WHERE id = %s AND status = 'failed'",
            (unreadable,),
        ),
        10,
        f"task {unreadable} to fail",
        also=worker.describe,
    )
    assert (attempt, retry_count) == (1, 0)
    assert error_message.startswith(reason), error_message
    goes_on(hostile, worker)


# The CLI prints any stored row


@pytest.mark.parametrize("payload", [DEEP_PAYLOAD, LONG_NUMBER_PAYLOAD], ids=["nested-1500-deep", "number-of-5000-digits"])
def test_show_and_list_print_a_task_whose_payload_python_cannot_load(
    conn: psycopg.Connection, run: Callable[..., Result], payload: str
) -> None:
    task_id = enqueue(conn, "analytics_refresh")
    store_payload(conn, task_id, payload)
    shown = run("show", str(task_id))
    assert shown.exit_code == 0, shown.output
    assert "[[[[" in shown.output or "9" * 5000 in shown.output
    as_json = run("show", str(task_id), "--json")
    assert as_json.exit_code == 0, as_json.output
    # Printed as the database holds it: the same JSON, every digit and bracket.
    same = fetch_one(
        conn,
        "SELECT payload = %s::jsonb FROM worker_tasks WHERE id = %s",
        (_payload_text(as_json.stdout), task_id),
    )
    assert same == (True,)
    listed = run("list")
    assert listed.exit_code == 0, listed.output
    assert str(task_id) in listed.output


def _payload_text(document: str) -> str:
    """The payload's JSON text out of `show --json` output, without parsing it (too deep)."""
    start = document.index('"payload": ') + len('"payload": ')
    depth = 0
    for index in range(start, len(document)):
        depth += {"{": 1, "[": 1, "}": -1, "]": -1}.get(document[index], 0)
        if depth == 0:
            return document[start : index + 1]
    raise AssertionError("no payload in the output")


@pytest.mark.parametrize("stored", ["infinity", "-infinity", "33715-08-20 15:55:24+00"])
def test_show_and_list_print_a_time_python_cannot_hold(
    conn: psycopg.Connection, run: Callable[..., Result], stored: str
) -> None:
    task_id = enqueue(conn, "analytics_refresh")
    conn.execute(
        "UPDATE worker_tasks SET scheduled_for = %s::timestamptz WHERE id = %s", (stored, task_id)
    )
    # As the database writes it (in the session's time zone).
    expected = fetch_one(conn, "SELECT scheduled_for::text FROM worker_tasks WHERE id = %s", (task_id,))[0]
    shown = run("show", str(task_id))
    assert shown.exit_code == 0, shown.output
    assert f"scheduled_for: {expected}" in " ".join(shown.output.split())
    as_json = run("show", str(task_id), "--json")
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["task"]["scheduled_for"] == expected
    listed = run("list")
    assert listed.exit_code == 0, listed.output
    assert expected in listed.output
    listed_json = run("list", "--json")
    assert listed_json.exit_code == 0, listed_json.output
    assert json.loads(listed_json.stdout)[0]["scheduled_for"] == expected


def test_enqueue_json_prints_every_digit_of_a_payload_number(
    conn: psycopg.Connection, run: Callable[..., Result]
) -> None:
    result = run("enqueue", "analytics_refresh", "--payload", '{"n": 0.1000000000000000000001}', "--json")
    assert result.exit_code == 0, result.output
    assert '"n": 0.1000000000000000000001' in result.stdout
    (task,) = json.loads(result.stdout)
    shown = run("show", str(task["id"]), "--json")
    assert shown.exit_code == 0, shown.output
    assert '"n": 0.1000000000000000000001' in shown.stdout


def test_enqueue_a_file_that_is_not_utf8_exits_2_naming_the_line(
    conn: psycopg.Connection, run: Callable[..., Result], tmp_path: Path
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b'{"role": "analytics_refresh"}\n{"role": "analytics_refresh", "payload": {"x": "\xff"}}\n')
    result = run("enqueue", "--file", str(path))
    assert result.exit_code == 2, result.output
    assert "line 2 is not UTF-8" in result.output
    assert fetch_one(conn, "SELECT count(*) FROM worker_tasks")[0] == 0


def test_enqueue_a_line_nested_too_deeply_exits_2(
    conn: psycopg.Connection, run: Callable[..., Result]
) -> None:
    line = '{"role": "analytics_refresh", "payload": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}\n"
    result = run("enqueue", "--file", "-", input=line)
    assert result.exit_code == 2, result.output
    assert "line 1 is not valid JSON: nested too deeply" in result.output
    assert fetch_one(conn, "SELECT count(*) FROM worker_tasks")[0] == 0
