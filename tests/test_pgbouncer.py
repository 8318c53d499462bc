"""Workers behind a real PgBouncer in transaction pooling mode (testkit/pgbouncer.py).

Claims, heartbeats, completions, fencing and a killed server connection behave as they do on a
direct connection; wake-ups come through a direct LISTEN connection (--listen-database-url), or
the worker polls; the client (Client, AsyncClient) waits on a direct connection of its own, or
polls; nothing is prepared on a pooled connection (this PgBouncer, 1.18, keeps no
prepared statement across server connections: see docs/pgbouncer.md).
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from collections.abc import Iterator

import psycopg
import pytest
from core_fixtures import database_url
from pyworker.client import AsyncClient, Client
from pyworker.admin.queries import AdminDatabase
from pyworker.errors import TaskpoolError
from testkit.pgbouncer import PgBouncer
from worker_support import (
    Workers,
    completions,
    enqueue,
    fetch_one,
    recover_stale,
    task_row,
    wait_for,
    wait_for_execution,
    wait_for_status,
)


@pytest.fixture(scope="module")
def pgbouncer() -> Iterator[PgBouncer]:
    with PgBouncer(database_url()) as bouncer:
        yield bouncer


@pytest.fixture
def pooled_url(pgbouncer: PgBouncer, db_url: str) -> str:
    """The test's database through PgBouncer."""
    return pgbouncer.url_for(db_url)


def pooled_settings(db_url: str, pooled_url: str, *, listen: bool = True, **settings: object) -> dict[str, object]:
    """Workers.start's settings for a worker on pooled_url (--pooled), LISTENing on db_url."""
    extra_env = {"TASKPOOL_POOLED": "1"}
    if listen:
        extra_env["TASKPOOL_LISTEN_DATABASE_URL"] = db_url
    return {"database_url": pooled_url, "extra_env": extra_env, **settings}


def pgbouncer_clients(pgbouncer: PgBouncer, dbname: str) -> list[str]:
    """The application names of PgBouncer's clients of `dbname` (SHOW CLIENTS), sorted."""
    with psycopg.connect(pgbouncer.admin_url(), autocommit=True, cursor_factory=psycopg.ClientCursor) as admin:
        cursor = admin.execute("SHOW CLIENTS")
        columns = [column.name for column in cursor.description]
        rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    return sorted(row["application_name"] for row in rows if row["database"] == dbname)


def test_a_statement_prepared_through_pgbouncer_breaks_another_client_unless_pooled(pooled_url: str) -> None:
    # Two clients, one after the other, get the same server connection (PgBouncer hands out the
    # last one freed). psycopg prepares a statement on its sixth run, named _pg3_0 by each
    # connection: the second client's _pg3_0 collides with the first's on that server connection.
    def run_each(pooled: bool) -> None:
        first, second = (AdminDatabase(pooled_url, pooled=pooled) for _ in range(2))
        try:
            for _ in range(8):
                first.counts()
            for _ in range(8):
                second.roles()
            for _ in range(8):
                first.counts()
        finally:
            first.close()
            second.close()

    with pytest.raises(TaskpoolError, match="prepared statement"):
        run_each(pooled=False)
    run_each(pooled=True)


def test_pooled_workers_claim_heartbeat_and_complete_woken_through_their_direct_listener(
    pool: psycopg.Connection, workers: Workers, db_url: str, pooled_url: str, pgbouncer: PgBouncer
) -> None:
    names = ["bouncer-a", "bouncer-b"]
    # A one-minute poll: the tasks are found through the wake-ups on the direct LISTEN alone.
    started = [
        workers.start("test_work", name, **pooled_settings(db_url, pooled_url, poll_ms=60_000, heartbeat_ms=100))
        for name in names
    ]
    for name in names:
        wait_for(
            lambda name=name: fetch_one(
                pool,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = %s AND query ILIKE 'LISTEN%%'",
                (f"pyworker {name} listener",),
            )[0],
            10,
            f"{name} to LISTEN on its direct connection",
            also=workers.describe,
        )
    # A long one, to be heartbeaten, then many short ones.
    long_id = enqueue(pool, "test_work", {"seconds": 1})
    specs = [{"role": "test_work", "payload": {"n": n}} for n in range(300)]
    ids = [row[0] for row in pool.execute("SELECT id FROM enqueue_tasks(%s::jsonb)", (json.dumps(specs),))]

    wait_for(
        lambda: fetch_one(pool, "SELECT count(*) = 301 FROM worker_tasks WHERE status = 'completed'")[0],
        30,
        "all 301 tasks to be completed",
        interval=0.2,
        also=workers.describe,
    )
    assert pool.execute(
        "SELECT count(*), max(attempt), count(*) FILTER (WHERE result->>'worker_id' = worker_id)"
        " FROM worker_tasks"
    ).fetchone() == (301, 1, 301)
    # The handler's own record, written through PgBouncer too: each task completed once.
    assert pool.execute("SELECT count(*), count(DISTINCT task_id) FROM test_completions").fetchone() == (301, 301)
    assert sorted(row[0] for row in pool.execute("SELECT task_id FROM test_completions")) == sorted([long_id, *ids])
    long_task = task_row(pool, long_id)
    assert long_task["last_heartbeat_at"] > long_task["started_at"], "the long task was never heartbeaten"
    # Every connection but the listener's went through PgBouncer, the handlers' included.
    dbname = pool.info.dbname
    clients = pgbouncer_clients(pgbouncer, dbname)
    for name in names:
        through = {f"pyworker {name}", f"pyworker {name} heartbeat", f"pyworker {name} recorder", f"test handlers {name}"}
        assert through <= set(clients), clients
    assert not [client for client in clients if client.endswith("listener")], clients
    for worker in started:
        log = worker.log()
        assert " WARNING " not in log and " ERROR " not in log, worker.describe()


def test_a_pooled_worker_without_a_listen_url_says_so_and_polls(
    pool: psycopg.Connection, workers: Workers, db_url: str, pooled_url: str
) -> None:
    worker = workers.start("test_work", "bouncer-poll", **pooled_settings(db_url, pooled_url, listen=False, poll_ms=300))
    worker.wait_for_log("No LISTEN: the database URL is pooled (--pooled) and no --listen-database-url is given;"
                        " polling for tasks every 0.3 s")
    task_id = enqueue(pool, "test_work", {})
    wait_for_status(pool, task_id, "completed", 10, also=worker.describe)
    # Never marked waiting: the wake-ups go to workers that listen.
    assert fetch_one(pool, "SELECT count(*) FROM task_worker_waits WHERE worker_id = 'bouncer-poll'") == (0,)
    assert fetch_one(
        pool,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%%'",
    ) == (0,)


def test_a_pooled_worker_that_lost_its_task_cannot_complete_it(
    pool: psycopg.Connection, workers: Workers, db_url: str, pooled_url: str
) -> None:
    frozen = workers.start("test_work", "bouncer-frozen", **pooled_settings(db_url, pooled_url, heartbeat_ms=200))
    task_id = enqueue(pool, "test_work", {"seconds": 10, "retry_seconds": 0.2})
    wait_for_execution(pool, task_id, 1, 10, also=frozen.describe)

    frozen.send(signal.SIGSTOP)
    try:
        assert recover_stale(pool) == 1
        workers.start("test_work", "bouncer-rescuer", **pooled_settings(db_url, pooled_url))
        row = wait_for_status(pool, task_id, "completed", 10, also=workers.describe)
        assert (row["worker_id"], row["attempt"]) == ("bouncer-rescuer", 2)
    finally:
        frozen.send(signal.SIGCONT)

    frozen.wait_for_log(f"Task {task_id} was lost (taken_by_another_worker): its result is dropped")
    assert completions(pool, task_id) == [(2, "bouncer-rescuer")]
    row = task_row(pool, task_id)
    assert (row["status"], row["worker_id"], row["attempt"]) == ("completed", "bouncer-rescuer", 2)


def test_a_pooled_worker_goes_on_when_its_server_connection_is_killed_mid_call(
    pool: psycopg.Connection, workers: Workers, db_url: str, pooled_url: str, pgbouncer: PgBouncer
) -> None:
    worker = workers.start("test_work", "bouncer-killed", **pooled_settings(db_url, pooled_url, poll_ms=200))
    task_id = enqueue(pool, "test_work", {"seconds": 0.5})
    wait_for_execution(pool, task_id, 1, 10, also=worker.describe)
    dbname = pool.info.dbname
    # The task's row locked: the worker's completion waits inside a transaction, on a server
    # connection of PgBouncer's; that backend is killed.
    with psycopg.connect(db_url) as blocker:
        blocker.execute("SELECT 1 FROM worker_tasks WHERE id = %s FOR UPDATE", (task_id,))
        (killed,) = wait_for(
            lambda: fetch_one(
                pool,
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND query LIKE '%%complete_task%%'",
            ),
            10,
            "the worker's completion to wait for the row lock",
            also=worker.describe,
        )
        assert killed in pgbouncer.server_pids(dbname)
        assert fetch_one(pool, "SELECT pg_terminate_backend(%s)", (killed,)) == (True,)
        # The worker retries on a new server connection, which waits for the lock in its turn.
        wait_for(
            lambda: fetch_one(
                pool,
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND query LIKE '%%complete_task%%' AND pid <> %s",
                (killed,),
            ),
            10,
            "the worker to try its completion again",
            also=worker.describe,
        )
        blocker.rollback()

    row = wait_for_status(pool, task_id, "completed", 10, also=worker.describe)
    assert (row["worker_id"], row["attempt"], row["retry_count"]) == ("bouncer-killed", 1, 0)
    assert completions(pool, task_id) == [(1, "bouncer-killed")]
    # Every server connection killed while idle: the worker does not notice, and goes on.
    for pid in pgbouncer.server_pids(dbname):
        pool.execute("SELECT pg_terminate_backend(%s)", (pid,))
    next_id = enqueue(pool, "test_work", {})
    row = wait_for_status(pool, next_id, "completed", 10, also=worker.describe)
    assert (row["worker_id"], row["attempt"]) == ("bouncer-killed", 1)
    assert worker.process.poll() is None


def test_a_client_on_pgbouncer_waits_for_a_result_through_its_direct_listen_url(
    pool: psycopg.Connection, db_url: str, pooled_url: str
) -> None:
    with Client.connect(pooled_url, pooled=True, listen_url=db_url) as client:
        task = client.enqueue("test_outcome", {"raise": "nothing"})
        # Completed from another thread while the client waits: the notification ends the wait
        # long before its one-minute poll.
        completer = threading.Timer(0.3, complete, (db_url, task.id))
        completer.start()
        try:
            assert client.wait(task, timeout=20, poll_interval=60) == {"ok": True}
        finally:
            completer.cancel()


def test_a_client_on_pgbouncer_without_a_listen_url_polls_for_the_result(
    pool: psycopg.Connection, db_url: str, pooled_url: str
) -> None:
    seen: list[tuple[int, int]] = []

    def look_then_complete(task_id: int) -> None:
        # While the client waits: no LISTEN and no registration on a server connection that
        # another client gets next.
        seen.append(fetch_one(
            pool,
            "SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND query ILIKE 'LISTEN%%'),"
            " (SELECT count(*) FROM task_result_waits)",
        ))
        complete(db_url, task_id)

    with Client.connect(pooled_url, pooled=True) as client:
        task = client.enqueue("test_outcome", {"raise": "nothing"})
        completer = threading.Timer(0.3, look_then_complete, (task.id,))
        completer.start()
        try:
            assert client.wait(task, timeout=20, poll_interval=0.1) == {"ok": True}
        finally:
            completer.join()
    assert seen == [(0, 0)]


def test_an_async_client_on_pgbouncer_waits_through_its_listen_url_or_polls(
    pool: psycopg.Connection, db_url: str, pooled_url: str
) -> None:
    async def wait_for_one(client: AsyncClient, poll_interval: float) -> object:
        task = await client.enqueue("test_outcome", {"raise": "nothing"})
        completer = threading.Timer(0.3, complete, (db_url, task.id))
        completer.start()
        try:
            return await client.wait(task, timeout=20, poll_interval=poll_interval)
        finally:
            completer.join()

    async def main() -> None:
        # With a listen URL the notification ends the wait (the poll is a minute); without, polls.
        async with await AsyncClient.connect(pooled_url, pooled=True, listen_url=db_url) as client:
            assert await wait_for_one(client, 60) == {"ok": True}
        async with await AsyncClient.connect(pooled_url, pooled=True) as client:
            assert client.wait_conn is None
            assert await wait_for_one(client, 0.1) == {"ok": True}

    asyncio.run(main())


def complete(db_url: str, task_id: int) -> None:
    """Claim and complete the task as a worker does, on a connection of its own."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("SELECT register_worker('bouncer-completer', ARRAY['test_outcome'], 'test-host', 1)")
        attempt, token = conn.execute(
            "SELECT attempt, claim_token FROM claim_and_start_tasks('test_outcome', 'bouncer-completer', 1) WHERE id = %s",
            (task_id,),
        ).fetchone()
        conn.execute(
            "SELECT complete_task(%s, 'bouncer-completer', %s, %s, '{\"ok\": true}'::jsonb)", (task_id, attempt, token)
        )


def test_schema_changes_are_refused_through_a_pooler(run) -> None:
    result = run("--pooled", "schema", "status")
    assert result.exit_code == 2, result.output
    assert "pyworker schema needs a session of its own" in result.output
