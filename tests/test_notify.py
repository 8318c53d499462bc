"""NOTIFY on the channel workers LISTEN to: a ready task says its role; a future one says nothing."""

from __future__ import annotations

import psycopg

CHANNEL = "taskpool_task_enqueued"


def received(listener: psycopg.Connection, timeout: float, expect: int | None = None) -> list[str]:
    """Payloads on CHANNEL within `timeout` seconds (sooner once `expect` have come)."""
    return [
        n.payload
        for n in listener.notifies(timeout=timeout, stop_after=expect)
        if n.channel == CHANNEL
    ]


def test_enqueue_notifies_the_role_once_per_statement(conn: psycopg.Connection, db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        conn.execute(
            "SELECT count(*) FROM enqueue_tasks(%s::jsonb)",
            ('[{"role": "store_discovery"}, {"role": "store_discovery"}, {"role": "analytics_refresh"}]',),
        )
        assert sorted(received(listener, timeout=1.0)) == ["analytics_refresh", "store_discovery"]


def test_a_task_scheduled_later_wakes_nobody(conn: psycopg.Connection, db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        conn.execute(
            "SELECT enqueue_task('store_discovery', scheduled_for := now() + interval '1 hour')"
        )
        assert received(listener, timeout=0.5) == []


def test_nothing_is_sent_before_commit(conn: psycopg.Connection, db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        with conn.transaction(force_rollback=True):
            conn.execute("SELECT enqueue_task('store_discovery')")
            assert received(listener, timeout=0.3) == []
        assert received(listener, timeout=0.3) == []


def test_a_released_task_wakes_workers_again(conn: psycopg.Connection, db_url: str) -> None:
    task_id = conn.execute("SELECT id FROM enqueue_task('store_discovery')").fetchone()[0]
    task = conn.execute("SELECT id, attempt FROM claim_task('store_discovery', 'w1')").fetchone()
    assert task == (task_id, 1)
    with psycopg.connect(db_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        conn.execute("SELECT release_task(%s, 'w1', 1)", (task_id,))
        assert received(listener, timeout=2.0, expect=1) == ["store_discovery"]
