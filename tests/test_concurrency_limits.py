"""Concurrency keys (issue 29, item 2): caps on how many tasks run at once per key, fleet-wide.
Real `python -m pyworker` processes, two of them at concurrency 8, against a real database: the
tasks of a capped key never run more than its limit at once (seen by the handler itself, which
records its start and end in test_executions), while the tasks of other keys take the other
slots; and `pyworker limits` sets, lists and clears the limits. The claim's rules, one call at a
time, and the counts through every transition: sql_tests/concurrency_limits.sql."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import psycopg
import pytest
from worker_support import Run, Workers, run_json, wait_for

from pyworker.client import Client

CAPPED = 12
FREE = 12
SECONDS = 0.3


def most_at_once(intervals: list[tuple[datetime, datetime]]) -> int:
    """The most intervals that overlap at any instant (an end and a start at one instant do not)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals],
                    key=lambda event: (event[0], event[1]))
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def runs(conn: psycopg.Connection, task_ids: list[int]) -> list[tuple[datetime, datetime]]:
    """Each handler run of the tasks: (start, end) as the handler recorded them."""
    return [
        (row[0], row[1])
        for row in conn.execute(
            "SELECT started_at, ended_at FROM test_executions WHERE task_id = ANY(%s) AND ended_at IS NOT NULL",
            (task_ids,),
        )
    ]


def completed(conn: psycopg.Connection, task_ids: list[int]) -> bool:
    return conn.execute(
        "SELECT count(*) = %s FROM worker_tasks WHERE id = ANY(%s) AND status = 'completed'",
        (len(task_ids), task_ids),
    ).fetchone()[0]


def enqueue(conn: psycopg.Connection, count: int, **spec: Any) -> list[int]:
    specs = [{"role": "test_work", "payload": {"seconds": SECONDS}, **spec} for _ in range(count)]
    return [row[0] for row in conn.execute("SELECT id FROM enqueue_tasks(%s::jsonb)", (json.dumps(specs),))]


def two_workers(workers: Workers) -> None:
    for name in ("ck-w1", "ck-w2"):
        workers.start("test_work", name, concurrency=8)


@pytest.mark.parametrize(
    ("kind", "key", "spec"),
    [
        ("key", "ck_tenant", {"headers": {"concurrency_key": "ck_tenant"}}),
        ("proxy", "ck_proxy", {"headers": {"concurrency_key": "proxy:ck_proxy"}}),
        ("platform", "ck_shop", {"platform": "ck_shop"}),
    ],
)
def test_a_capped_key_never_runs_more_than_its_limit_while_other_keys_proceed(
    pool: psycopg.Connection, workers: Workers, kind: str, key: str, spec: dict[str, Any]
) -> None:
    pool.execute("SELECT set_concurrency_limit(%s, %s, 2)", (kind, key))
    # The capped tasks first: a claim in plain FIFO order would give them every slot.
    capped = enqueue(pool, CAPPED, **spec)
    free = enqueue(pool, FREE)
    two_workers(workers)

    wait_for(lambda: completed(pool, capped + free), 60, "every task", also=workers.describe)

    capped_runs, free_runs = runs(pool, capped), runs(pool, free)
    assert len(capped_runs) == CAPPED and len(free_runs) == FREE
    assert most_at_once(capped_runs) == 2, capped_runs
    # The other tasks were not held behind the capped ones: they ran side by side, in the slots
    # the cap left free, and were all done before the capped key's last task began.
    assert most_at_once(free_runs) > 2, free_runs
    assert max(end for _, end in free_runs) < max(start for start, _ in capped_runs)
    assert pool.execute("SELECT recount_concurrency()").fetchone()[0] == 0
    assert pool.execute(
        "SELECT running FROM v_concurrency_limits WHERE kind = %s AND key = %s", (kind, key)
    ).fetchone()[0] == 0


def test_a_role_cap_holds_across_two_workers(pool: psycopg.Connection, workers: Workers) -> None:
    pool.execute("SELECT set_concurrency_limit('role', 'test_work', 3)")
    tasks = enqueue(pool, CAPPED)
    two_workers(workers)

    wait_for(lambda: completed(pool, tasks), 60, "every task", also=workers.describe)

    assert most_at_once(runs(pool, tasks)) == 3


def test_a_kinds_default_caps_each_key_apart(pool: psycopg.Connection, workers: Workers, db_url: str) -> None:
    pool.execute("SELECT set_concurrency_limit('key', '*', 1)")
    with Client.connect(db_url) as client:
        by_key = {
            name: [client.enqueue("test_work", {"seconds": SECONDS}, concurrency_key=name).id for _ in range(4)]
            for name in ("ck_a", "ck_b", "ck_c")
        }
    two_workers(workers)
    every = [task for tasks in by_key.values() for task in tasks]

    wait_for(lambda: completed(pool, every), 60, "every task", also=workers.describe)

    for name, tasks in by_key.items():
        assert most_at_once(runs(pool, tasks)) == 1, name
    # the three keys ran side by side
    assert most_at_once(runs(pool, every)) == 3


def test_slots_rotate_between_keys_at_equal_priority_without_a_limit(
    pool: psycopg.Connection, workers: Workers
) -> None:
    busy = enqueue(pool, 16, headers={"concurrency_key": "ck_busy"})
    quiet = enqueue(pool, 4, headers={"concurrency_key": "ck_quiet"})
    worker = workers.start("test_work", "ck-w3", concurrency=2)

    wait_for(lambda: completed(pool, busy + quiet), 60, "every task", also=worker.describe)

    order = [
        row[0]
        for row in pool.execute(
            "SELECT headers ->> 'concurrency_key' FROM worker_tasks WHERE id = ANY(%s) ORDER BY started_at, id",
            (busy + quiet,),
        )
    ]
    # The quiet key's four tasks, enqueued after the busy key's sixteen, ran among the first ten:
    # a long queue of one key does not take every slot, limit or not.
    assert order[:10].count("ck_quiet") == 4, order


def test_the_client_names_the_key_as_the_header(db_url: str, conn: psycopg.Connection) -> None:
    with Client.connect(db_url) as client:
        task = client.enqueue("analytics_refresh", concurrency_key="tenant-7", headers={"traceparent": "00-a"})
        assert task.headers == {"traceparent": "00-a", "concurrency_key": "tenant-7"}
        [many] = client.enqueue_many([{"role": "analytics_refresh", "concurrency_key": "tenant-8"}])
        assert many.headers == {"concurrency_key": "tenant-8"}
        with pytest.raises(ValueError, match="not both"):
            client.enqueue("analytics_refresh", concurrency_key="a", headers={"concurrency_key": "b"})
        with pytest.raises(psycopg.errors.InvalidParameterValue, match='header "concurrency_key"'):
            client.enqueue("analytics_refresh", concurrency_key="*")


def test_limits_from_the_cli(run: Run, conn: psycopg.Connection) -> None:
    done = run("limits", "set", "platform", "ck_shop", "3")
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "platform ck_shop: at most 3 running at once"
    assert run_json(run, "limits", "set", "key", "*", "2")["max_running"] == 2
    listed = {(row["kind"], row["key"]): row for row in run_json(run, "limits", "list")}
    assert set(listed) == {("platform", "ck_shop"), ("key", "*"), ("store", "*")}
    assert (listed[("platform", "ck_shop")]["max_running"], listed[("platform", "ck_shop")]["running"]) == (3, 0)
    table = run("limits", "list")
    assert table.exit_code == 0 and "ck_shop" in table.stdout

    cleared = run("limits", "clear", "platform", "ck_shop")
    assert cleared.exit_code == 0 and cleared.stdout.strip() == "platform ck_shop: limit cleared"
    again = run("limits", "clear", "platform", "ck_shop")
    assert again.exit_code == 0 and again.stdout.strip() == "platform ck_shop had no limit of its own"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("platform", "ck_shop", "0"), "max_running must be 1 or more, not 0"),
        (("key", "", "2"), "key must not be empty"),
        (("role", "ck_no_such_role", "2"), "unknown role 'ck_no_such_role'"),
        (("store", "*", "2"), "a store runs one task at a time"),
        (("tenant", "a", "2"), "'tenant' is not one of"),
    ],
)
def test_bad_limits_exit_2_and_change_nothing(run: Run, conn: psycopg.Connection, args: tuple[str, ...], message: str) -> None:
    before = conn.execute("SELECT * FROM concurrency_limits ORDER BY kind, key").fetchall()
    refused = run("limits", "set", *args)
    assert refused.exit_code == 2, refused.output
    assert message in refused.output
    assert conn.execute("SELECT * FROM concurrency_limits ORDER BY kind, key").fetchall() == before
