"""A worker and its platforms' rate limits and turns (issue 29): the claim hands out a task of a
role with claims_platform_token only with a token of its platform, so no slot holds a task that
waits for one, and a worker whose ready tasks all wait for tokens claims again when the next one
comes (platform_token_wait), not at its poll interval; at equal priority its slots rotate between
platforms. Real `python -m pyworker` processes against a real database.
"""

from __future__ import annotations

import json
from datetime import datetime

import psycopg
from worker_support import Workers, wait_for

THROTTLED_TASKS = 15
OPEN_TASKS = 10
# 60 a minute: a token a second after a burst of five
THROTTLED_PER_MINUTE = 60
THROTTLED_BURST = 5


def enqueue_on(conn: psycopg.Connection, role: str, platform: str, count: int, seconds: float) -> list[int]:
    specs = [{"role": role, "platform": platform, "payload": {"seconds": seconds}} for _ in range(count)]
    return [row[0] for row in conn.execute("SELECT id FROM enqueue_tasks(%s::jsonb)", (json.dumps(specs),))]


def completed(conn: psycopg.Connection, task_ids: list[int]) -> bool:
    return conn.execute(
        "SELECT count(*) = %s FROM worker_tasks WHERE id = ANY(%s) AND status = 'completed'",
        (len(task_ids), task_ids),
    ).fetchone()[0]


def starts(conn: psycopg.Connection, task_ids: list[int]) -> list[datetime]:
    """When each task's claim started it, in order."""
    return [
        row[0]
        for row in conn.execute(
            "SELECT started_at FROM worker_tasks WHERE id = ANY(%s) ORDER BY started_at", (task_ids,)
        )
    ]


def test_a_throttled_platform_holds_no_slot_and_never_runs_above_its_limit(
    pool: psycopg.Connection, workers: Workers
) -> None:
    pool.execute("UPDATE task_roles SET claims_platform_token = true WHERE role = 'test_work'")
    pool.execute(
        "INSERT INTO platform_governance (platform, requests_per_minute) VALUES ('rl_throttled', %s), ('rl_open', 6000)",
        (THROTTLED_PER_MINUTE,),
    )
    # The throttled platform's tasks come first: a claim in plain FIFO order would fill every slot
    # with them.
    throttled = enqueue_on(pool, "test_work", "rl_throttled", THROTTLED_TASKS, 0.2)
    open_ids = enqueue_on(pool, "test_work", "rl_open", OPEN_TASKS, 0.2)
    # A poll interval longer than the whole run: the worker learns of each next token from
    # platform_token_wait, or waits 30 s.
    worker = workers.start("test_work", "rl-w1", concurrency=4, poll_ms=30_000)

    wait_for(lambda: completed(pool, open_ids), 15, "the open platform's tasks", also=worker.describe)
    wait_for(lambda: completed(pool, throttled), 30, "the throttled platform's tasks", also=worker.describe)

    throttled_starts = starts(pool, throttled)
    open_starts = starts(pool, open_ids)
    first = min(throttled_starts[0], open_starts[0])
    # The open platform's tasks ran as soon as slots were free: none waited behind the throttled
    # platform's tasks (which, in FIFO order, would have run for ten seconds first).
    assert (open_starts[-1] - first).total_seconds() < 3, (open_starts, throttled_starts)
    # The throttled platform: never more starts in a stretch than its burst plus the tokens
    # refilled in it (a tenth of a token of slack for the clock between the claim and its start).
    rate = THROTTLED_PER_MINUTE / 60
    for i, began in enumerate(throttled_starts):
        for j in range(i, len(throttled_starts)):
            stretch = (throttled_starts[j] - began).total_seconds()
            assert j - i + 1 <= THROTTLED_BURST + stretch * rate + 0.1, (i, j, throttled_starts)
    # Each token was claimed when it came: no gap near the poll interval between two starts.
    gaps = [(b - a).total_seconds() for a, b in zip(throttled_starts, throttled_starts[1:])]
    assert max(gaps) < 3, gaps
    tokens_taken = pool.execute(
        "SELECT requests_total FROM platform_governance WHERE platform = 'rl_throttled'"
    ).fetchone()[0]
    assert tokens_taken == THROTTLED_TASKS


def test_slots_rotate_between_platforms_at_equal_priority(pool: psycopg.Connection, workers: Workers) -> None:
    busy = enqueue_on(pool, "test_work", "rl_busy", 16, 0.3)
    quiet = enqueue_on(pool, "test_work", "rl_quiet", 4, 0.3)
    worker = workers.start("test_work", "rl-w2", concurrency=2)

    wait_for(lambda: completed(pool, busy + quiet), 30, "every task", also=worker.describe)

    order = [
        row[0]
        for row in pool.execute(
            "SELECT platform FROM worker_tasks WHERE id = ANY(%s) ORDER BY started_at, id", (busy + quiet,)
        )
    ]
    # The quiet platform's four tasks, enqueued after the busy one's sixteen, ran among the first
    # ten: every other slot, not after the busy platform's queue.
    assert order[:10].count("rl_quiet") == 4, order
