"""heartbeat_tasks never waits for a task row another transaction holds: it answers busy for it
and beats the others. complete_tasks locks a batch in the order its plan meets the rows, so a
heartbeat that waited for one row while holding others could deadlock with it (the fault suite's
scenario 6 met that deadlock once under load)."""

from __future__ import annotations

import psycopg


def test_a_task_being_changed_elsewhere_is_busy_and_the_rest_are_beaten(conn: psycopg.Connection, db_url: str) -> None:
    conn.execute("SELECT register_worker('hb-w', 'store_discovery', 'host', 1)")
    for _ in range(3):
        conn.execute("SELECT enqueue_task('store_discovery')")
    claimed = conn.execute(
        "SELECT id, attempt, claim_token FROM claim_and_start_tasks('store_discovery', 'hb-w', 3) ORDER BY id"
    ).fetchall()
    ids, attempts, tokens = [row[0] for row in claimed], [row[1] for row in claimed], [row[2] for row in claimed]
    assert len(ids) == 3

    with psycopg.connect(db_url) as completing, psycopg.connect(db_url, autocommit=True) as beating:
        # The middle task's row is held, as by a completion not committed yet.
        completing.execute("SELECT FROM worker_tasks WHERE id = %s FOR NO KEY UPDATE", (ids[1],))
        beating.execute("SET statement_timeout = '5s'")
        answers = dict(
            beating.execute("SELECT * FROM heartbeat_tasks('hb-w', %s, %s, %s)", (ids, attempts, tokens)).fetchall()
        )
        assert answers == {ids[0]: "continue", ids[1]: "busy", ids[2]: "continue"}
        completing.rollback()
        answers = dict(
            beating.execute("SELECT * FROM heartbeat_tasks('hb-w', %s, %s, %s)", (ids, attempts, tokens)).fetchall()
        )
        assert answers == dict.fromkeys(ids, "continue")
