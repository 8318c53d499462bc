"""`pyworker retry` and `pyworker cancel` by filters: retry_tasks and cancel_tasks in committed
batches, --dry-run showing the count and a sample, and bad filters refused with nothing changed.
(SQL behaviour: sql_tests/bulk_actions.sql.)"""

from __future__ import annotations

import psycopg
import pytest

from worker_support import Run, run_json


def failed_task(conn: psycopg.Connection, role: str, error: str) -> int:
    """A task of `role` that failed for good with `error`, through the worker's own calls."""
    conn.execute("SELECT enqueue_task(%s, '{}', max_retries := 0)", (role,))
    task_id, attempt, token = conn.execute(
        "SELECT id, attempt, claim_token FROM claim_task(%s, 'w-bulk')", (role,)
    ).fetchone()
    conn.execute("SELECT fail_task(%s, 'w-bulk', %s, %s, %s, false)", (task_id, attempt, token, error))
    return task_id


def statuses(conn: psycopg.Connection, role: str) -> dict[str, int]:
    rows = conn.execute("SELECT status, count(*) FROM worker_tasks WHERE role = %s GROUP BY status", (role,))
    return dict(rows.fetchall())


@pytest.fixture
def failures(conn: psycopg.Connection) -> list[int]:
    """Five analytics_refresh tasks failed with a timeout, two with a parse error."""
    return [failed_task(conn, "analytics_refresh", "GET /menu: Timeout after 30 s") for _ in range(5)] + [
        failed_task(conn, "analytics_refresh", "bad JSON") for _ in range(2)
    ]


def test_retry_by_error_pattern_in_batches(run: Run, conn: psycopg.Connection, failures: list[int]) -> None:
    result = run("retry", "--role", "analytics_refresh", "--error", "%timeout%", "--batch-size", "2")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "retried 5 tasks"
    assert statuses(conn, "analytics_refresh") == {"pending": 5, "failed": 2}


def test_retry_dry_run_counts_and_samples_without_changing_anything(
    run: Run, conn: psycopg.Connection, failures: list[int]
) -> None:
    before = conn.execute("SELECT * FROM worker_tasks ORDER BY id").fetchall()
    shown = run_json(run, "retry", "--status", "failed", "--error", "%json%", "--dry-run")
    assert shown["dry_run"] is True and shown["tasks"] == 2
    assert [task["id"] for task in shown["sample"]] == failures[5:]
    assert {task["error_message"] for task in shown["sample"]} == {"bad JSON"}
    text = run("retry", "--role", "analytics_refresh", "--dry-run")
    assert text.stdout.splitlines()[0] == "would retry 7 tasks"
    assert conn.execute("SELECT * FROM worker_tasks ORDER BY id").fetchall() == before


def test_cancel_pending_and_running_by_role(run: Run, conn: psycopg.Connection) -> None:
    for _ in range(3):
        conn.execute("SELECT enqueue_task('analytics_refresh', '{}')")
    task_id, attempt, token = conn.execute(
        "SELECT id, attempt, claim_token FROM claim_task('analytics_refresh', 'w-bulk')"
    ).fetchone()
    conn.execute("SELECT start_task(%s, 'w-bulk', %s, %s)", (task_id, attempt, token))
    shown = run_json(run, "cancel", "--role", "analytics_refresh")
    assert shown == {"tasks": 3}
    assert statuses(conn, "analytics_refresh") == {"cancelled": 2, "running": 1}
    (requested,) = conn.execute("SELECT cancel_requested_at FROM worker_tasks WHERE id = %s", (task_id,)).fetchone()
    assert requested is not None
    assert run_json(run, "cancel", "--role", "analytics_refresh") == {"tasks": 0}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["retry"], "give the ID of a task to retry, or filters"),
        (["cancel"], "give the ID of a task to cancel, or filters"),
        (["retry", "1", "--role", "analytics_refresh"], "give a task ID or filters, not both"),
        (["retry", "--status", "pending"], "'pending' is not one of 'failed', 'cancelled'"),
        (["cancel", "--status", "failed"], "'failed' is not one of 'pending', 'claimed', 'running'"),
        (["cancel", "--created-before", "someday"], 'invalid input syntax for type timestamp with time zone: "someday"'),
        (["retry", "--role", "analytics_refresh", "--batch-size", "0"], "0 is not in the range"),
    ],
)
def test_bad_filters_exit_2_and_change_nothing(
    run: Run, conn: psycopg.Connection, failures: list[int], args: list[str], message: str
) -> None:
    before = conn.execute("SELECT * FROM worker_tasks ORDER BY id").fetchall()
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert conn.execute("SELECT * FROM worker_tasks ORDER BY id").fetchall() == before
