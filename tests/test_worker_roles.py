"""`pyworker --role a --role b`: one worker process serves several roles, on the same fixed set of
connections, under one worker id; `--role a=N` caps how many of a role's tasks run at once. The
registry and the capacity view count the worker for each role it serves, and a wake-up for any of
its roles reaches it. Real `python -m pyworker` processes against a real database.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import psycopg
from worker_support import Workers, enqueue, fetch_one, wait_for, wait_for_status

from pyworker.config import RoleShare, WorkerConfig


def most_at_once(intervals: Sequence[tuple[datetime, datetime]]) -> int:
    """The most of these [start, end) intervals that overlap at one moment."""
    edges = sorted([(start, 1) for start, _end in intervals] + [(end, -1) for _start, end in intervals])
    running = peak = 0
    for _moment, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def executions(conn: psycopg.Connection, task_ids: list[int]) -> list[tuple[datetime, datetime]]:
    return conn.execute(
        "SELECT started_at, ended_at FROM test_executions WHERE task_id = ANY(%s) ORDER BY task_id",
        (task_ids,),
    ).fetchall()


def start_two_role_worker(workers: Workers, roles: str, worker_id: str, **settings) -> None:
    worker = workers.start(roles, worker_id, ready=False, **settings)
    worker.wait_for_log(f"Starting worker {worker_id} for roles: ")


def test_one_process_serves_two_roles_under_one_id_on_at_most_4_connections(
    pool: psycopg.Connection, workers: Workers
) -> None:
    work = [enqueue(pool, "test_work", {"seconds": 1}) for _ in range(6)]
    other = [enqueue(pool, "test_other", {"seconds": 1}) for _ in range(6)]
    start_two_role_worker(workers, "test_work test_other", "two-roles", concurrency=4)

    wait_for(lambda: len(executions(pool, work + other)) >= 4, 20, "four tasks running")
    # Counted while it works: once for each role, by the registry and by the capacity view.
    assert fetch_one(pool, "SELECT roles FROM v_workers WHERE worker_id = 'two-roles'")[0] == [
        "test_work",
        "test_other",
    ]
    assert pool.execute(
        "SELECT role, active_workers FROM v_worker_capacity WHERE role IN ('test_work', 'test_other')"
        " ORDER BY role"
    ).fetchall() == [("test_other", 1), ("test_work", 1)]
    assert fetch_one(
        pool,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name LIKE 'pyworker two-roles%%'",
    )[0] <= 4

    for task_id in work + other:
        row = wait_for_status(pool, task_id, "completed", timeout=30)
        assert row["worker_id"] == "two-roles"
    # Four at once at most, both roles together.
    assert most_at_once(executions(pool, work + other)) <= 4


def test_a_share_caps_its_role_and_leaves_the_other_slots_to_the_rest(
    pool: psycopg.Connection, workers: Workers
) -> None:
    work = [enqueue(pool, "test_work", {"seconds": 1}) for _ in range(4)]
    other = [enqueue(pool, "test_other", {"seconds": 1}) for _ in range(4)]
    # test_work=1: one of its tasks at a time; test_other: any of the three slots.
    start_two_role_worker(workers, "test_work=1 test_other", "shares", concurrency=3)
    for task_id in work + other:
        wait_for_status(pool, task_id, "completed", timeout=30)
    assert most_at_once(executions(pool, work)) == 1
    assert most_at_once(executions(pool, other)) >= 2
    assert most_at_once(executions(pool, work + other)) <= 3


def test_a_wake_up_for_either_role_reaches_the_idle_worker(pool: psycopg.Connection, workers: Workers) -> None:
    # Polling every ten minutes: only a notification can bring these tasks to it in time.
    start_two_role_worker(workers, "test_work,test_other", "sleeper", poll_ms=600_000)
    wait_for(
        lambda: fetch_one(pool, "SELECT count(*) FROM task_worker_waits WHERE worker_id = 'sleeper'")[0] == 2,
        20,
        "the worker waiting for both roles",
    )
    other = enqueue(pool, "test_other", {"seconds": 0})
    wait_for_status(pool, other, "completed", timeout=30)
    # Woken for test_other, it still waits for test_work.
    assert pool.execute("SELECT role FROM task_worker_waits WHERE worker_id = 'sleeper' ORDER BY role").fetchall() in (
        [("test_work",)],
        [("test_other",), ("test_work",)],
    )
    work = enqueue(pool, "test_work", {"seconds": 0})
    wait_for_status(pool, work, "completed", timeout=30)


def test_an_unknown_role_among_several_stops_the_worker_naming_it(
    pool: psycopg.Connection, workers: Workers
) -> None:
    code, log = workers.run_to_exit("test_work no_such_role", "unknown-role")
    assert code == 2
    assert "unknown role 'no_such_role'" in log
    assert fetch_one(pool, "SELECT count(*) FROM task_workers WHERE worker_id = 'unknown-role'")[0] == 0


def test_a_role_without_a_handler_among_several_stops_the_worker(pool: psycopg.Connection, workers: Workers) -> None:
    code, log = workers.run_to_exit("test_work test_command", "no-handler", handlers="worker_handlers")
    assert code == 2
    assert "no handler for role 'test_command'" in log
    assert fetch_one(pool, "SELECT count(*) FROM task_workers WHERE worker_id = 'no-handler'")[0] == 0


def test_roles_and_shares_in_the_config() -> None:
    config = WorkerConfig("postgresql://x/y", roles=("a=20", "b=4"))
    assert config.roles == (RoleShare("a", 20), RoleShare("b", 4))
    assert (config.concurrency, config.share("a"), config.share("b")) == (24, 20, 4)
    config = WorkerConfig("postgresql://x/y", roles="a, b=2", concurrency=10)
    assert (config.role_names, config.share("a"), config.share("b")) == (("a", "b"), 10, 2)
