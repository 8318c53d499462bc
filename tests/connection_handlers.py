"""Handlers that use their attempt's own connection (task.connection(), task.database()), for
tests/test_handler_connections.py. They write to conn_events, which the test creates:

- conn_hold: in a transaction on its connection, records its backend pid in conn_events, then
  waits (reading conn_release, committed rows only) until the test inserts a row there; commits.
- conn_write: records its backend pid in conn_events, autocommit, through task.database().
- conn_leave_open: sets its session's statement_timeout and takes a session advisory lock, then
  opens a transaction (BEGIN), records its pid, and returns with it open.
- conn_raise_inside: opens a transaction, records its pid, and raises in it.
- conn_stuck: opens a transaction, records its pid, then sleeps in a statement (pg_sleep) far past
  its run timeout, whatever its abort says.
- conn_check: returns its backend pid, the transaction status its connection had when it got it,
  how many conn_events rows it sees, its statement_timeout and the advisory locks its session holds.
"""

from __future__ import annotations

from typing import Any

from pyworker import Task
from pyworker.handlers import Aborted, handler

INSERT_EVENT = "INSERT INTO conn_events (task_id, role, pid) VALUES (%s, %s, pg_backend_pid())"


@handler("conn_hold")
def hold(task: Task) -> dict[str, Any]:
    conn = task.connection()
    with conn.transaction():
        conn.execute(INSERT_EVENT, (task.id, task.role))
        while not conn.execute("SELECT count(*) AS n FROM conn_release").fetchone()["n"]:
            if task.abort.wait(0.05):
                raise Aborted(task.abort.reason)
    return {"pid": conn.info.backend_pid}


@handler("conn_write")
def write(task: Task) -> dict[str, Any]:
    db = task.database()
    row = db.query_one(
        "INSERT INTO conn_events (task_id, role, pid) VALUES (%(id)s, %(role)s, pg_backend_pid()) RETURNING pid",
        {"id": task.id, "role": task.role},
    )
    return {"pid": row["pid"]}


@handler("conn_leave_open")
def leave_open(task: Task) -> dict[str, Any]:
    conn = task.connection()
    conn.execute("SET statement_timeout = '1234ms'")
    conn.execute("SELECT pg_advisory_lock(4242)")
    conn.execute("BEGIN")
    conn.execute(INSERT_EVENT, (task.id, task.role))
    return {"pid": conn.info.backend_pid}


@handler("conn_raise_inside")
def raise_inside(task: Task) -> None:
    conn = task.connection()
    conn.execute("BEGIN")
    conn.execute(INSERT_EVENT, (task.id, task.role))
    raise ValueError(f"raised inside the transaction of backend {conn.info.backend_pid}")


@handler("conn_stuck")
def stuck(task: Task) -> None:
    conn = task.connection()
    conn.execute("BEGIN")
    conn.execute(INSERT_EVENT, (task.id, task.role))
    conn.execute("SELECT pg_sleep(60)")


@handler("conn_check")
def check(task: Task) -> dict[str, Any]:
    conn = task.connection()
    status = conn.info.transaction_status.name
    session = conn.execute(
        "SELECT (SELECT count(*) FROM conn_events) AS events, current_setting('statement_timeout') AS statement_timeout,"
        " (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory_locks"
    ).fetchone()
    return {"pid": conn.info.backend_pid, "transaction_status": status, **session}
