"""Deadlines: a frozen server costs a call its deadline, never the whole freeze.

The server is frozen by a relay (testkit/relay.py) between pyworker and the test server that stops
forwarding both ways while its sockets stay open: what a server stopped by SIGSTOP, or a hung
host, looks like from the client (the kernel still acknowledges, nothing answers). The bounds are
generous: a freeze lasts until the test thaws it, long past them.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pyworker.client import AsyncClient, Client, WaitTimeout
from pyworker.connections import HandlerConnections
from pyworker.db import Database
from pyworker.deadlines import connection_options
from pyworker.errors import DatabaseUnavailable
from dashboard_support import dashboard_server, http
from testkit.relay import Relay
from worker_support import Workers, enqueue, wait_for, wait_for_status

SERVING = re.compile(r"Serving /metrics, /healthz and /readyz on port (\d+)")
# How long a frozen call may take before the test calls it a hang: its deadline here is 2-3 s.
GENEROUS = 30.0


@pytest.fixture
def relay(db_url: str) -> Iterator[Relay]:
    params = conninfo_to_dict(db_url)
    with Relay(params.get("host") or "127.0.0.1", int(params.get("port") or 5432)) as relay:
        yield relay


def through(db_url: str, relay: Relay) -> str:
    """db_url's database, reached through the relay."""
    return make_conninfo(db_url, host="127.0.0.1", hostaddr="", port=str(relay.port))


def get(port: int, path: str) -> tuple[int, str]:
    """The status and body of GET http://127.0.0.1:port/path, within 10 s (a probe's timeout)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_connections_get_keepalives_and_timeouts_unless_the_url_sets_them(db_url: str) -> None:
    options = connection_options(db_url)
    assert options["keepalives"] == 1
    assert options["tcp_user_timeout"] > 0
    assert options["connect_timeout"] >= 2
    own = make_conninfo(db_url, keepalives_idle="42", tcp_user_timeout="7000")
    assert "keepalives_idle" not in connection_options(own)
    assert "tcp_user_timeout" not in connection_options(own)
    db = Database(own)
    try:
        used = conninfo_to_dict(db.connect().info.dsn)
    finally:
        db.close()
    assert (used["keepalives"], used["keepalives_idle"], used["tcp_user_timeout"]) == ("1", "42", "7000")


def test_a_call_on_a_frozen_server_fails_at_its_deadline_and_the_next_connects_again(
    db_url: str, relay: Relay
) -> None:
    db = Database(through(db_url, relay), call_timeout=2)
    try:
        assert db.schema_version()
        relay.freeze()
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="did not answer within 2 s"):
            db.schema_version()
        assert time.monotonic() - began < GENEROUS
        relay.thaw()
        assert db.schema_version()
    finally:
        relay.thaw()
        db.close()


def test_a_cut_call_makes_the_other_connections_to_that_server_connect_again_before_their_next_call(
    db_url: str, relay: Relay
) -> None:
    reconnects: list[str] = []
    cut = Database(through(db_url, relay), call_timeout=2)
    idle = Database(through(db_url, relay), call_timeout=2, on_reconnect=lambda: reconnects.append("idle"))
    elsewhere = Database(db_url, call_timeout=2, on_reconnect=lambda: reconnects.append("elsewhere"))
    try:
        backend = idle.query("SELECT pg_backend_pid() AS pid")[0]["pid"]
        elsewhere.query("SELECT 1")
        cut.schema_version()
        relay.freeze()
        with pytest.raises(DatabaseUnavailable, match="did not answer within 2 s"):
            cut.schema_version()
        relay.thaw()
        # Its connection still works, but it was idle through the freeze: a new one is opened.
        assert idle.query("SELECT pg_backend_pid() AS pid")[0]["pid"] != backend
        # A connection to another server (the relay's peer, reached directly) is left alone.
        elsewhere.query("SELECT 1")
        assert reconnects == ["idle"]
        # Once its server answered on it, the connection is trusted again.
        idle.query("SELECT 1")
        assert reconnects == ["idle"]
    finally:
        relay.thaw()
        for db in (cut, idle, elsewhere):
            db.close()


def test_a_slow_call_is_cut_at_its_deadline_and_its_statement_cancelled(db_url: str, conn: psycopg.Connection) -> None:
    db = Database(db_url, call_timeout=1, application_name="slow-call")
    try:
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="did not answer within 1 s"):
            db.query("SELECT pg_sleep(120)")
        assert time.monotonic() - began < GENEROUS
        wait_for(
            lambda: conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = 'slow-call' AND state = 'active'"
            ).fetchone()[0]
            == 0,
            GENEROUS,
            "the cut statement to end",
        )
    finally:
        db.close()


def test_the_clients_call_fails_with_database_unavailable_at_its_deadline(db_url: str, relay: Relay, pool: psycopg.Connection) -> None:
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    client = Client.connect(through(db_url, relay), call_timeout=2)
    try:
        assert client.get(task_id) is not None
        relay.freeze()
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="did not answer within 2 s"):
            client.get(task_id)
        assert time.monotonic() - began < GENEROUS
    finally:
        relay.thaw()
        client.close()


def test_a_clients_wait_fails_with_database_unavailable_at_its_deadline(
    db_url: str, relay: Relay, pool: psycopg.Connection
) -> None:
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    client = Client.connect(through(db_url, relay), call_timeout=2)
    try:
        with pytest.raises(WaitTimeout):
            client.wait(task_id, timeout=0.5, poll_interval=0.1)
        relay.freeze()
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="did not answer within 2 s"):
            client.wait(task_id, timeout=120, poll_interval=0.5)
        assert time.monotonic() - began < GENEROUS
    finally:
        relay.thaw()
        client.close()


def test_the_async_clients_call_fails_with_database_unavailable_at_its_deadline(
    db_url: str, relay: Relay, pool: psycopg.Connection
) -> None:
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})

    async def frozen_get() -> None:
        client = await AsyncClient.connect(through(db_url, relay), call_timeout=2)
        try:
            assert await client.get(task_id) is not None
            relay.freeze()
            with pytest.raises(DatabaseUnavailable, match="did not answer within 2 s"):
                await asyncio.wait_for(client.get(task_id), GENEROUS)
        finally:
            relay.thaw()
            await client.close()

    asyncio.run(frozen_get())


def test_a_worker_outlives_a_frozen_server_and_works_again_once_it_thaws(
    db_url: str, relay: Relay, pool: psycopg.Connection, workers: Workers
) -> None:
    # A claim sent while the server is frozen is cut at its deadline, and run by the server when
    # it thaws, its answer lost: the task is recovered after the role's stale threshold.
    pool.execute("UPDATE task_roles SET stale_threshold = '2 seconds' WHERE role = 'test_outcome'")
    worker = workers.start(
        "test_outcome",
        "frozen-1",
        database_url=through(db_url, relay),
        args=("--metrics-port", "0"),
        extra_env={"TASKPOOL_CALL_TIMEOUT_SECONDS": "3"},
    )
    port = int(SERVING.search(worker.wait_for_log("Serving /metrics")).group(1))
    first = enqueue(pool, "test_outcome", {"raise": "nothing"})
    wait_for_status(pool, first, "completed", GENEROUS, also=worker.describe)
    assert get(port, "/readyz") == (200, "ok\n")

    relay.freeze()
    try:
        second = enqueue(pool, "test_outcome", {"raise": "nothing"})
        worker.wait_for_log("did not answer within 3 s", timeout=GENEROUS)
        began = time.monotonic()
        status, reason = get(port, "/readyz")
        assert status == 503, reason
        assert time.monotonic() - began < 10
        assert get(port, "/healthz") == (200, "ok\n")
        assert worker.alive
        assert wait_for_status(pool, second, ("pending", "running"), 1)["status"] == "pending"
    finally:
        relay.thaw()
    wait_for_status(pool, second, "completed", GENEROUS, also=worker.describe)
    wait_for(lambda: get(port, "/readyz") == (200, "ok\n"), GENEROUS, "/readyz to answer ok again")
    assert worker.alive


def test_the_listener_reconnects_after_a_frozen_peer(
    db_url: str, relay: Relay, pool: psycopg.Connection, workers: Workers
) -> None:
    # Only the listener goes through the relay; the worker polls once a minute, so a task done
    # within the bound below was a notification's.
    worker = workers.start(
        "test_outcome",
        "frozen-listener-1",
        poll_ms=120_000,
        extra_env={"TASKPOOL_CALL_TIMEOUT_SECONDS": "2", "TASKPOOL_LISTEN_DATABASE_URL": through(db_url, relay)},
    )
    first = enqueue(pool, "test_outcome", {"raise": "nothing"})
    wait_for_status(pool, first, "completed", GENEROUS, also=worker.describe)
    relay.freeze()
    try:
        worker.wait_for_log("Listener: the database did not answer within 2 s", timeout=GENEROUS)
    finally:
        relay.thaw()
    thawed_at = pool.execute("SELECT clock_timestamp()").fetchone()[0]
    wait_for(
        lambda: pool.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = 'pyworker frozen-listener-1 listener'"
            " AND backend_start > %s AND starts_with(query, 'LISTEN')",
            (thawed_at,),
        ).fetchone()[0]
        == 1,
        GENEROUS,
        "the listener to listen again",
        also=worker.describe,
    )
    second = enqueue(pool, "test_outcome", {"raise": "nothing"})
    wait_for_status(pool, second, "completed", GENEROUS, also=worker.describe)
    assert worker.alive


def test_the_dashboards_readyz_answers_503_within_its_timeout_while_the_server_is_frozen(
    db_url: str, relay: Relay
) -> None:
    with dashboard_server(through(db_url, relay), None) as dashboard:
        assert http(f"{dashboard.url}/readyz").status == 200
        relay.freeze()
        try:
            began = time.monotonic()
            answer = http(f"{dashboard.url}/readyz")
            assert time.monotonic() - began < 10
            assert answer.status == 503, answer.body
        finally:
            relay.thaw()
        wait_for(lambda: http(f"{dashboard.url}/readyz").status == 200, GENEROUS, "/readyz to answer ok again")


def test_the_scheduler_outlives_a_frozen_server(db_url: str, relay: Relay, workers: Workers) -> None:
    scheduler = workers.start(
        "unused",
        "frozen-scheduler",
        ready=False,
        args=("scheduler", "--interval-seconds", "1"),
        handlers=None,
        database_url=through(db_url, relay),
        extra_env={"TASKPOOL_CALL_TIMEOUT_SECONDS": "2"},
    )
    scheduler.wait_for_log("Starting scheduler frozen-scheduler", timeout=GENEROUS)
    relay.freeze()
    try:
        scheduler.wait_for_log("tick: the database did not answer within 2 s", timeout=GENEROUS)
    finally:
        relay.thaw()
    scheduler.wait_for_log("tick: the database answers again", timeout=GENEROUS)
    assert scheduler.alive


def test_an_abandoned_attempt_on_a_frozen_server_has_its_connection_cut(db_url: str, relay: Relay) -> None:
    connections = HandlerConnections(through(db_url, relay), size=1, application_name="frozen-handler")
    lease = connections.lease()
    failed = threading.Event()

    def handler() -> None:
        try:
            lease.get().execute("SELECT pg_sleep(120)")
        except psycopg.Error:
            failed.set()
        finally:
            lease.end(1)

    try:
        lease.get()
        thread = threading.Thread(target=handler, daemon=True)
        thread.start()
        relay.freeze()
        time.sleep(0.5)
        # The server takes no cancel: the attempt's connection is cut, and its call fails.
        lease.abandon()
        assert failed.wait(GENEROUS)
    finally:
        relay.thaw()
        connections.close()
