"""Wake-ups: an enqueue or requeue notifies waiting workers, one per ready task, each on its own
channel (worker_wake_channel), and nobody else; a busy pool gets no NOTIFY at all.

A worker marks itself waiting with mark_worker_waiting after an empty claim, claims once more,
and sleeps. Why that one extra claim is enough, and that no session waits on another's open
transaction for it, is tested in tests/test_enqueue_concurrency.py.
"""

from __future__ import annotations

import psycopg
import pytest
from worker_support import listen, received, register


def waiting(conn: psycopg.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT worker_id FROM task_worker_waits ORDER BY 1")]


def test_an_enqueue_wakes_a_waiting_worker_with_the_role(conn: psycopg.Connection, db_url: str) -> None:
    channel = register(conn, "w1")
    assert conn.execute("SELECT mark_worker_waiting('w1')").fetchone() == (True,)
    assert conn.execute("SELECT mark_worker_waiting('w1')").fetchone() == (False,)
    with listen(db_url, channel) as listener:
        conn.execute("SELECT enqueue_task('store_discovery')")
        assert received(listener, timeout=2.0, expect=1) == ["store_discovery"]
    # Woken means unmarked: the next enqueue does not notify it again.
    assert waiting(conn) == []


def test_one_task_wakes_one_of_two_waiting_workers(conn: psycopg.Connection, db_url: str) -> None:
    channels = [register(conn, name) for name in ("w1", "w2")]
    for name in ("w1", "w2"):
        conn.execute("SELECT mark_worker_waiting(%s)", (name,))
    with listen(db_url, channels[0]) as first, listen(db_url, channels[1]) as second:
        conn.execute("SELECT enqueue_task('store_discovery')")
        woken = received(first, timeout=1.0) + received(second, timeout=0.5)
        assert woken == ["store_discovery"]
        assert len(waiting(conn)) == 1
        # A batch of ready tasks wakes as many as it needs.
        conn.execute(
            "SELECT count(*) FROM enqueue_tasks(%s::jsonb)",
            ('[{"role": "store_discovery"}, {"role": "store_discovery"}]',),
        )
        assert len(received(first, timeout=1.0) + received(second, timeout=0.5)) == 1
        assert waiting(conn) == []


def test_workers_of_other_roles_and_busy_workers_are_not_woken(conn: psycopg.Connection, db_url: str) -> None:
    other = register(conn, "w-other", role="analytics_refresh")
    busy = register(conn, "w-busy")
    conn.execute("SELECT mark_worker_waiting('w-other')")
    with listen(db_url, other) as other_listener, listen(db_url, busy) as busy_listener:
        conn.execute("SELECT enqueue_task('store_discovery')")
        assert received(other_listener, timeout=0.5) == []
        assert received(busy_listener, timeout=0.3) == []
    assert waiting(conn) == ["w-other"]


def test_a_task_scheduled_later_wakes_nobody(conn: psycopg.Connection, db_url: str) -> None:
    channel = register(conn, "w1")
    conn.execute("SELECT mark_worker_waiting('w1')")
    with listen(db_url, channel) as listener:
        conn.execute("SELECT enqueue_task('store_discovery', scheduled_for := now() + interval '1 hour')")
        assert received(listener, timeout=0.5) == []
    assert waiting(conn) == ["w1"]


def test_nothing_is_sent_or_unmarked_before_commit(conn: psycopg.Connection, db_url: str) -> None:
    channel = register(conn, "w1")
    conn.execute("SELECT mark_worker_waiting('w1')")
    with listen(db_url, channel) as listener:
        with conn.transaction(force_rollback=True):
            conn.execute("SELECT enqueue_task('store_discovery')")
            assert received(listener, timeout=0.3) == []
        assert received(listener, timeout=0.3) == []
    assert waiting(conn) == ["w1"]


def test_a_released_task_wakes_a_waiting_worker(conn: psycopg.Connection, db_url: str) -> None:
    task_id = conn.execute("SELECT id FROM enqueue_task('store_discovery')").fetchone()[0]
    conn.execute("SELECT register_worker('w1', 'store_discovery', 'test-host', 1)")
    assert conn.execute("SELECT id, attempt FROM claim_and_start_tasks('store_discovery', 'w1')").fetchone() == (task_id, 1)
    channel = register(conn, "w2")
    conn.execute("SELECT mark_worker_waiting('w2')")
    with listen(db_url, channel) as listener:
        conn.execute("SELECT release_task(id, 'w1', 1, claim_token) FROM worker_tasks WHERE id = %s", (task_id,))
        assert received(listener, timeout=2.0, expect=1) == ["store_discovery"]


def test_a_successful_claim_unmarks_the_worker(conn: psycopg.Connection) -> None:
    conn.execute("SELECT enqueue_task('store_discovery')")
    register(conn, "w1")
    assert conn.execute("SELECT mark_worker_waiting('w1')").fetchone() == (True,)
    assert conn.execute("SELECT count(*) FROM claim_and_start_tasks('store_discovery', 'w1')").fetchone() == (1,)
    assert waiting(conn) == []


def test_an_unregistered_worker_cannot_wait(conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.NoDataFound, match="worker 'nobody' is not registered"):
        conn.execute("SELECT mark_worker_waiting('nobody')")
