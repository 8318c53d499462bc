"""The history of finished tasks as the operator's CLI and the dashboard show it: a task that the
tick moved from worker_tasks to worker_task_history is still listed, shown, counted, retried and
deleted by id, and `pyworker tasks runs ID` lists the runs of its spec. (SQL behaviour:
sql_tests/task_history.sql.)"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from core_fixtures import real_clock
from dashboard_support import dashboard_server, http
from worker_support import Run, enqueue, fetch_one, run_json


def moved_to_history(pool: psycopg.Connection, in_the_past: Callable[[str], None], payload: dict) -> int:
    """A task cancelled two hours ago, moved to the history by the tick as it runs every minute."""
    in_the_past("2 hours")
    task_id = enqueue(pool, "test_outcome", payload)
    pool.execute("SELECT cancel_task(%s)", (task_id,))
    real_clock(pool)
    pool.execute("SELECT set_task_history(history_after := interval '1 minute')")
    report = fetch_one(pool, "SELECT tick_schedules()")[0]
    assert report["moved_to_history"] == 1, report
    assert fetch_one(pool, "SELECT in_history FROM worker_tasks_with_history WHERE id = %s", (task_id,)) == (True,)
    return task_id


def test_a_moved_task_is_shown_listed_and_counted(
    run: Run, pool: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    task_id = moved_to_history(pool, in_the_past, {"raise": "nothing"})

    shown = run_json(run, "show", str(task_id))
    assert (shown["task"]["id"], shown["task"]["status"], shown["task"]["in_history"]) == (task_id, "cancelled", True)

    listed = run_json(run, "list", "--status", "cancelled")
    assert [task["id"] for task in listed] == [task_id]

    counts = run_json(run, "counts")
    assert {"role": "test_outcome", "status": "cancelled", "tasks": 1} in counts


def test_a_moved_task_is_retried_back_into_the_hot_table_and_deleted(
    run: Run, pool: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    task_id = moved_to_history(pool, in_the_past, {"raise": "nothing"})
    retried = run("retry", str(task_id))
    assert retried.exit_code == 0, retried.output
    assert fetch_one(pool, "SELECT status FROM worker_tasks WHERE id = %s", (task_id,)) == ("pending",)
    assert fetch_one(pool, "SELECT count(*) FROM worker_task_history WHERE id = %s", (task_id,)) == (0,)

    other = moved_to_history(pool, in_the_past, {"raise": "nothing", "n": 2})
    deleted = run_json(run, "tasks", "delete", str(other))
    assert (deleted["id"], deleted["status"]) == (other, "cancelled")
    again = run("tasks", "delete", str(other))
    assert again.exit_code == 2 and f"task {other} does not exist" in again.output


def test_tasks_runs_lists_the_runs_of_a_spec_in_the_history_and_the_hot_table(
    run: Run, pool: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    earlier = moved_to_history(pool, in_the_past, {"sku": 7})
    replay = enqueue(pool, "test_outcome", {"sku": 7})
    enqueue(pool, "test_outcome", {"sku": 8})

    runs = run_json(run, "tasks", "runs", str(replay))
    assert [(r["id"], r["in_history"]) for r in runs] == [(replay, False), (earlier, True)]
    assert [r["id"] for r in run_json(run, "tasks", "runs", str(replay), "--limit", "1")] == [replay]

    unknown = run("tasks", "runs", "999999999")
    assert unknown.exit_code == 2 and "task 999999999 does not exist" in unknown.output
    assert run("tasks", "runs", str(replay), "--limit", "0").exit_code == 2


def test_the_dashboard_shows_lists_and_counts_a_moved_task(
    db_url: str, pool: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    task_id = moved_to_history(pool, in_the_past, {"raise": "nothing"})
    with dashboard_server(db_url, None) as dashboard:
        shown = http(dashboard.url + f"/api/tasks/{task_id}").json()
        assert (shown["task"]["status"], shown["task"]["in_history"]) == ("cancelled", True)
        listed = http(dashboard.url + "/api/tasks?status=cancelled").json()
        assert [task["id"] for task in listed["tasks"]] == [task_id] and listed["total"] == 1
        overview = http(dashboard.url + "/api/overview").json()
        (row,) = [row for row in overview["roles"] if row["role"] == "test_outcome"]
        assert row["cancelled_tasks"] == 1
