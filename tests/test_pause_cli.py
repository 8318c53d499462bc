"""`pyworker pause ROLE` / `pyworker resume ROLE` and `pyworker platforms disable|enable|list`:
pause_role, resume_role, disable_platform and enable_platform from the CLI, shown by `capacity` and
`health`; and a running worker that stops getting a paused role's tasks, finishes the one it holds,
and picks them up after the resume. (SQL behaviour: sql_tests/pause.sql.)"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from worker_support import (
    Run,
    Workers,
    enqueue,
    fetch_one,
    run_json,
    wait_for,
    wait_for_execution,
    wait_for_status,
)


def paused_at(conn: psycopg.Connection, role: str) -> object:
    return fetch_one(conn, "SELECT paused_at FROM task_roles WHERE role = %s", (role,))[0]


def health(run: Run, conn: psycopg.Connection) -> tuple[int, dict[str, Any]]:
    """`pyworker health --json`'s exit code and document, with no schedule enabled (so that no
    tick is due and no schedule enqueues behind the test's back)."""
    conn.execute("UPDATE task_schedules SET enabled = false")
    result = run("health", "--json")
    return result.exit_code, json.loads(result.stdout)


def test_pause_and_resume_a_role(run: Run, conn: psycopg.Connection) -> None:
    paused = run("pause", "product_resync", "--reason", "platform maintenance")
    assert paused.exit_code == 0, paused.output
    assert paused.stdout.startswith("role product_resync paused since ")
    assert paused.stdout.rstrip().endswith(": platform maintenance")
    first = paused_at(conn, "product_resync")
    assert first is not None

    again = run_json(run, "pause", "product_resync", "--reason", "another")
    assert again["paused_at"] is not None and again["pause_reason"] == "platform maintenance"
    assert paused_at(conn, "product_resync") == first

    [row] = run_json(run, "capacity", "product_resync")
    assert row["paused"] is True
    assert {r["role"]: r["paused"] for r in run_json(run, "capacity")}["analytics_refresh"] is False

    resumed = run("resume", "product_resync")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.strip() == "role product_resync is not paused: its ready tasks are handed out"
    assert paused_at(conn, "product_resync") is None
    assert run_json(run, "resume", "product_resync")["paused_at"] is None


def test_health_asks_for_attention_to_a_paused_role_with_ready_tasks(run: Run, conn: psycopg.Connection) -> None:
    run("pause", "analytics_refresh")
    code, quiet = health(run, conn)
    assert code == 0, quiet
    assert quiet["checks"]["paused_roles"]["status"] == "ok"
    assert quiet["checks"]["paused_roles"]["detail"].startswith("1 role(s) paused: analytics_refresh since ")

    conn.execute("SELECT enqueue_task('analytics_refresh')")
    result = run("health")
    assert result.exit_code == 1, result.output
    text = " ".join(result.stdout.split())  # the lines are wrapped to the terminal
    assert "ATTENTION paused_roles: 1 role(s) paused: analytics_refresh since " in text
    assert "1 ready task(s) waiting" in text
    assert "(pyworker resume analytics_refresh)" in text

    run("resume", "analytics_refresh")
    assert health(run, conn)[0] == 0


def test_disable_and_enable_a_platform(run: Run, conn: psycopg.Connection) -> None:
    conn.execute("SELECT add_store('Green Leaf', platform := 'dutchie')")
    disabled = run("platforms", "disable", "dutchie", "--reason", "they asked us to stop")
    assert disabled.exit_code == 0, disabled.output
    assert disabled.stdout.startswith("platform dutchie disabled since ")
    assert disabled.stdout.rstrip().endswith(": they asked us to stop")

    [platform] = run_json(run, "platforms", "list")
    assert (platform["platform"], platform["enabled"], platform["disable_reason"]) == (
        "dutchie",
        False,
        "they asked us to stop",
    )
    assert "dutchie   false" in run("platforms", "list").stdout

    conn.execute("SELECT enqueue_task('analytics_refresh', platform := 'dutchie')")
    code, report = health(run, conn)
    assert code == 1, report
    assert report["checks"]["disabled_platforms"]["status"] == "attention"
    assert "pyworker platforms enable dutchie" in report["checks"]["disabled_platforms"]["action"]

    enabled = run_json(run, "platforms", "enable", "dutchie")
    assert (enabled["enabled"], enabled["disabled_at"]) == (True, None)
    code, report = health(run, conn)
    assert code == 0, report
    assert report["checks"]["disabled_platforms"]["status"] == "ok"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pause", "nope"], "Error: unknown role 'nope' (Known roles: "),
        (["resume", "nope"], "Error: unknown role 'nope' (Known roles: "),
        (["pause", "analytics_refresh", "--reason", "x" * 1001], "reason must be at most 1000 characters, not 1001"),
        (["platforms", "disable", "nowhere"], "unknown platform 'nowhere': no store, task or platform_governance row"),
        (["platforms", "enable", "nowhere"], "unknown platform 'nowhere': no store, task or platform_governance row"),
        (["pause"], "Missing argument 'ROLE'"),
    ],
)
def test_bad_input_exits_2_and_changes_nothing(
    run: Run, conn: psycopg.Connection, args: list[str], message: str
) -> None:
    before = conn.execute("SELECT * FROM task_roles ORDER BY role").fetchall()
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert conn.execute("SELECT * FROM task_roles ORDER BY role").fetchall() == before
    assert fetch_one(conn, "SELECT count(*) FROM platform_governance")[0] == 0


def test_a_running_worker_stops_getting_a_paused_roles_tasks_and_picks_them_up_after_resume(
    pool: psycopg.Connection, workers: Workers, run: Run
) -> None:
    def waiting() -> bool:
        return fetch_one(pool, "SELECT count(*) FROM task_worker_waits WHERE worker_id = 'pausable'")[0] == 1

    # Polling every ten minutes: after the first wait, only a wake-up brings it a task in time.
    workers.start("test_work", "pausable", poll_ms=600_000, heartbeat_ms=200)
    in_flight = enqueue(pool, "test_work", {"seconds": 2})
    wait_for_execution(pool, in_flight, 1, timeout=20)

    assert run("pause", "test_work").exit_code == 0
    # The task it holds finishes while the role is paused, and the worker goes back to waiting.
    wait_for_status(pool, in_flight, "completed", timeout=20)
    wait_for(waiting, 20, "the worker waiting for test_work after its task")

    # An enqueue wakes it (the enqueue takes it out of the waits); it claims nothing of the
    # paused role and waits again, the task left pending.
    held_back = enqueue(pool, "test_work", {"seconds": 0})
    wait_for(waiting, 20, "the worker waiting again after the wake-up")
    assert fetch_one(pool, "SELECT status, attempt FROM worker_tasks WHERE id = %s", (held_back,)) == ("pending", 0)

    # The resume wakes it, and it runs the task.
    assert run("resume", "test_work").exit_code == 0
    row = wait_for_status(pool, held_back, "completed", timeout=20)
    assert row["worker_id"] == "pausable"
