"""Handlers never share a connection or a transaction: each attempt that asks gets a connection of
its own from its worker's pool (task.connection(), task.database()), given back when the attempt
ends, rolled back if the handler left a transaction open. Real worker processes
(tests/connection_handlers.py) on a real database."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from worker_support import Workers, WorkerProcess, enqueue, fetch_one, task_row, wait_for, wait_for_status

from pyworker.testing.database import insert_role

HANDLERS = "connection_handlers"
ROLES = ("conn_hold", "conn_write", "conn_leave_open", "conn_raise_inside", "conn_check")
# Abandoned after its run timeout and the 3 s wind-down.
STUCK_ROLE = ("conn_stuck", {"run_timeout": "1 second", "max_retries": 0})


@pytest.fixture
def events(conn: psycopg.Connection) -> psycopg.Connection:
    """`conn`, its database given conn_events, conn_release and the handlers' roles."""
    conn.execute(
        "CREATE TABLE conn_events (task_id bigint NOT NULL, role text NOT NULL, pid integer NOT NULL);"
        " CREATE TABLE conn_release (released_at timestamptz NOT NULL DEFAULT now())"
    )
    for role in ROLES:
        insert_role(conn, role, max_retries=0)
    insert_role(conn, STUCK_ROLE[0], **STUCK_ROLE[1])
    return conn


def start(workers: Workers, roles: str, worker_id: str, concurrency: int) -> WorkerProcess:
    worker = workers.start(roles, worker_id, ready=False, handlers=HANDLERS, concurrency=concurrency)
    worker.wait_for_log(f"Starting worker {worker_id} for role", 20)
    return worker


def event_pids(conn: psycopg.Connection, task_id: int) -> list[int]:
    return [row[0] for row in conn.execute("SELECT pid FROM conn_events WHERE task_id = %s", (task_id,))]


def result(conn: psycopg.Connection, task_id: int, worker: WorkerProcess) -> dict[str, Any]:
    return wait_for_status(conn, task_id, ("completed", "failed"), 20, also=worker.log)["result"]


def test_two_handlers_in_one_process_get_their_own_connections_and_transactions(
    events: psycopg.Connection, workers: Workers
) -> None:
    conn = events
    worker = start(workers, "conn_hold,conn_write", "w-conns", concurrency=2)
    hold = enqueue(conn, "conn_hold")
    # The hold's transaction is open (it waits for conn_release) on a handler connection.
    application = f"pyworker {worker.worker_id} handler"
    holder = wait_for(
        lambda: fetch_one(
            conn,
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s"
            " AND xact_start IS NOT NULL",
            (application,),
        ),
        20,
        "the conn_hold handler's transaction to open",
        also=worker.log,
    )[0]

    write = enqueue(conn, "conn_write")
    written = wait_for_status(conn, write, "completed", 20, also=worker.log)
    # The write ran on another connection, committed on its own: another session sees it while
    # the hold's transaction is still open, and holds nothing of it.
    assert written["result"]["pid"] != holder
    assert event_pids(conn, write) == [written["result"]["pid"]]
    assert task_row(conn, hold)["status"] == "running"
    assert event_pids(conn, hold) == []

    conn.execute("INSERT INTO conn_release DEFAULT VALUES")
    held = wait_for_status(conn, hold, "completed", 20, also=worker.log)
    assert held["result"]["pid"] == holder
    assert event_pids(conn, hold) == [holder]


@pytest.mark.parametrize("role", ["conn_leave_open", "conn_raise_inside"])
def test_a_transaction_left_open_does_not_reach_the_next_attempt(
    events: psycopg.Connection, workers: Workers, role: str
) -> None:
    conn = events
    # One slot: the next attempt gets the very connection the first one left its transaction on.
    worker = start(workers, f"{role},conn_check", f"w-{role}", concurrency=1)
    first = enqueue(conn, role)
    first_row = wait_for_status(conn, first, ("completed", "failed"), 20, also=worker.log)
    check = enqueue(conn, "conn_check")
    checked = result(conn, check, worker)

    if role == "conn_raise_inside":
        assert first_row["status"] == "failed"
        assert "raised inside the transaction of backend" in first_row["error_message"]
        pid = int(first_row["error_message"].rsplit(" ", 1)[1])
    else:
        assert first_row["status"] == "completed"
        pid = first_row["result"]["pid"]
    # The same connection, back to a clean session: no transaction, the server's settings, no
    # advisory lock; what the first handler wrote in the transaction it left open was rolled back.
    assert checked == {
        "pid": pid, "transaction_status": "IDLE", "events": 0, "statement_timeout": "0", "advisory_locks": 0,
    }
    assert event_pids(conn, first) == []
    assert "its handler left a transaction open: rolled back" in worker.log()


def test_an_abandoned_attempt_s_statement_is_cancelled_and_its_transaction_reaches_no_other(
    events: psycopg.Connection, workers: Workers
) -> None:
    conn = events
    worker = start(workers, "conn_stuck,conn_check", "w-stuck", concurrency=1)
    stuck = enqueue(conn, "conn_stuck")
    stuck_row = wait_for_status(conn, stuck, "failed", 20, also=worker.log)
    assert stuck_row["error_message"].startswith("timed out after 1 s")
    assert "did not stop within 3 s of the abort (timeout): leaving it behind" in worker.log()
    # Its statement was cancelled: no handler connection of the worker sleeps on.
    application = f"pyworker {worker.worker_id} handler"
    wait_for(
        lambda: not fetch_one(
            conn,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s"
            " AND query LIKE %s AND state = 'active'",
            (application, "%pg_sleep%"),
        )[0],
        10,
        "the abandoned attempt's statement to be cancelled",
        also=worker.log,
    )

    checked = result(conn, enqueue(conn, "conn_check"), worker)
    assert (checked["transaction_status"], checked["events"]) == ("IDLE", 0)
    assert event_pids(conn, stuck) == []
