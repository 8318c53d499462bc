"""A read-only server is "unavailable", never fatal (issue 30, item 1; item 4's multi-host URL).

The short form of a failover, on loopback: a streaming replica made with `pg_basebackup -R`
(testkit/replica.py), promoted with `pg_ctl promote`; and a server made read-only (ALTER SYSTEM
SET default_transaction_read_only = on, reloaded), which sessions already open meet as SQLSTATE
25006 on their next write.

The module's tests run on one pytest-xdist worker and share a server of their own (own_server:
the test server copied once and started as a primary, so that the tests running beside them
never meet its read-only setting) and one hot standby of it; each test has a database of its own
there (db_url, in place of the core fixture's). A test that promotes its standby gets one of its
own (own_replica), copied from that small server in seconds.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from core_fixtures import COPY_PREFIX, database_url
from psycopg import sql
from psycopg.conninfo import make_conninfo
from pyworker import AsyncClient, Client, DatabaseReadOnly, DatabaseUnavailable
from testkit import databases
from testkit.databases import insert_role
from testkit.replica import Replica, free_port, server_of_its_own
from worker_support import Workers, enqueue, task_row, wait_for, wait_for_status

READ_ONLY_WARNING = "The database is read-only"

pytestmark = pytest.mark.xdist_group("read_only")


@pytest.fixture(scope="module")
def own_server(template_database: str) -> Iterator[Replica]:
    """The test server copied and started as a primary of its own, keeping of the taskpool
    databases only the worker's template (db_url copies it): a standby of it copies and replays
    little."""
    with server_of_its_own(database_url()) as server:
        with psycopg.connect(server.url_for(database_url()), autocommit=True) as admin:
            others = admin.execute(
                r"SELECT datname FROM pg_database WHERE datname LIKE 'taskpool\_%%' AND datname <> %s",
                (template_database,),
            ).fetchall()
            for (name,) in others:
                admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        yield server


@pytest.fixture
def db_url(own_server: Replica, template_database: str) -> Iterator[str]:
    """A fresh copy of the deployed template on the module's own server, dropped after the test."""
    name = COPY_PREFIX + secrets.token_hex(4)
    with databases.copy(own_server.url_for(database_url()), template_database, name) as url:
        yield url


@pytest.fixture
def gate_pool(conn: psycopg.Connection) -> psycopg.Connection:
    """The test database with the test_gate role (tests/failover_handlers.py)."""
    insert_role(conn, "test_gate", max_retries=3)
    return conn


@pytest.fixture(scope="module")
def standby(own_server: Replica) -> Iterator[Replica]:
    """A hot standby of the module's own server, for the tests that do not promote it."""
    with Replica(own_server.url_for(database_url())) as made:
        yield made


@pytest.fixture
def replica(gate_pool: psycopg.Connection, standby: Replica) -> Replica:
    """The module's hot standby, once it has replayed the test database and its role."""
    standby.catch_up()
    return standby


@pytest.fixture
def own_replica(gate_pool: psycopg.Connection, db_url: str) -> Iterator[Replica]:
    """A hot standby of the module's own server for a test that promotes it, copied once the
    test database has its role."""
    with Replica(db_url) as made:
        yield made


@dataclass
class ReadOnlyServer:
    """The test database on the module's own server, which set_read_only(True) makes read-only
    for every session, open or new (their next transaction): a server-wide setting, kept off the
    server the other tests share."""

    url: str
    conn: psycopg.Connection

    def set_read_only(self, on: bool) -> None:
        # This session's own setting wins over the server's: it can always undo it.
        self.conn.execute("SET default_transaction_read_only = off")
        if on:
            self.conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        else:
            self.conn.execute("ALTER SYSTEM RESET default_transaction_read_only")
        self.conn.execute("SELECT pg_reload_conf()")
        # The reload is asynchronous: wait until a new session sees it.
        wanted = "on" if on else "off"

        def seen() -> bool:
            with psycopg.connect(self.url) as session:
                return session.execute("SHOW default_transaction_read_only").fetchone()[0] == wanted

        wait_for(seen, 10, f"default_transaction_read_only to be {wanted}")


@pytest.fixture
def read_only_server(gate_pool: psycopg.Connection, db_url: str) -> Iterator[ReadOnlyServer]:
    """The test database, its test_gate role in, on the module's own server, which the test may
    make read-only: writable again after the test, whatever its outcome."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        server = ReadOnlyServer(db_url, conn)
        try:
            yield server
        finally:
            server.set_read_only(False)


def start_gate_worker(workers: Workers, worker_id: str, url: str, **settings: object):
    return workers.start(
        "test_gate", worker_id, ready=False, handlers="failover_handlers", database_url=url,
        log_level="debug", **settings,
    )


def gate_payload(tmp_path: Path, n: int = 0) -> dict[str, object]:
    return {"gate": str(tmp_path / "gate"), "n": n}


def test_a_worker_on_a_standby_waits_without_working_and_works_once_it_is_promoted(
    gate_pool: psycopg.Connection, own_replica: Replica, db_url: str, workers: Workers, tmp_path: Path
) -> None:
    # Enqueued on the primary and streamed to the standby before the worker starts.
    (tmp_path / "gate").touch()
    task_id = enqueue(gate_pool, "test_gate", gate_payload(tmp_path))
    standby_url = own_replica.url_for(db_url)
    standby = psycopg.connect(standby_url, autocommit=True)
    wait_for(lambda: standby.execute("SELECT 1 FROM worker_tasks WHERE id = %s", (task_id,)).fetchone(), 10,
             "the task to reach the standby")
    probes = free_port()
    worker = start_gate_worker(workers, "on-standby", standby_url, extra_env={"TASKPOOL_METRICS_PORT": str(probes)})
    worker.wait_for_log(READ_ONLY_WARNING)
    assert probe(probes, "/readyz")[0] == 503 and "is read-only" in probe(probes, "/readyz")[1]
    assert probe(probes, "/healthz")[0] == 200
    # It keeps trying, quietly (debug), and neither exits nor claims.
    wait_for(lambda: worker.log().count("connect: the server at") >= 3 or None, 30, "three retries", also=worker.describe)
    assert worker.alive, worker.describe()
    assert task_row(standby, task_id)["status"] == "pending"
    log = worker.log()
    assert log.count(READ_ONLY_WARNING) == 1, worker.describe()
    assert "it is a standby (in recovery)" in log and "target_session_attrs=read-write" in log, worker.describe()
    assert "refused" not in log.lower() and "Starting worker" not in log, worker.describe()

    own_replica.promote()
    wait_for_status(standby, task_id, "completed", 30, also=worker.describe)
    assert task_row(standby, task_id)["result"] == {"ok": True, "n": 0}
    worker.wait_for_log("The database takes writes again")
    assert worker.alive, worker.describe()
    assert worker.log().count(READ_ONLY_WARNING) == 1, worker.describe()
    assert probe(probes, "/readyz")[0] == 200
    standby.close()


def probe(port: int, path: str) -> tuple[int, str]:
    """The status and body of the worker's probe `path`."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def test_the_recorder_keeps_its_completions_while_the_server_is_read_only_and_records_them_after(
    workers: Workers, tmp_path: Path, read_only_server: ReadOnlyServer
) -> None:
    gate_pool = read_only_server.conn
    # A first completion, so that the recorder's connection is open when the server turns read-only.
    (tmp_path / "open").touch()
    first = enqueue(gate_pool, "test_gate", {"gate": str(tmp_path / "open")})
    worker = start_gate_worker(workers, "read-only-recorder", read_only_server.url, concurrency=2)
    wait_for_status(gate_pool, first, "completed", 10, also=worker.describe)
    tasks = [enqueue(gate_pool, "test_gate", gate_payload(tmp_path, n)) for n in range(2)]
    for task_id in tasks:
        wait_for_status(gate_pool, task_id, "running", 10, also=worker.describe)
    read_only_server.set_read_only(True)
    # The handlers return now; their completions meet 25006 in the recorder.
    (tmp_path / "gate").touch()
    worker.wait_for_log("complete tasks: the server is read-only", timeout=20)
    worker.wait_for_log(READ_ONLY_WARNING)
    assert worker.alive, worker.describe()
    assert [task_row(gate_pool, task_id)["status"] for task_id in tasks] == ["running", "running"]

    read_only_server.set_read_only(False)
    for n, task_id in enumerate(tasks):
        row = wait_for_status(gate_pool, task_id, ("completed", "failed", "pending"), 30, also=worker.describe)
        assert (row["status"], row["result"], row["retry_count"]) == ("completed", {"ok": True, "n": n}, 0)
    log = worker.log()
    assert "could not be stored" not in log and "refused" not in log.lower(), worker.describe()
    assert log.count(READ_ONLY_WARNING) == 1, worker.describe()
    worker.wait_for_log("The database takes writes again")
    assert worker.alive, worker.describe()


@pytest.mark.parametrize("first_host", ["standby", "dead port"])
def test_a_multi_host_url_without_target_session_attrs_is_warned_about_and_reaches_the_primary(
    first_host: str, gate_pool: psycopg.Connection, replica: Replica, db_url: str, workers: Workers, tmp_path: Path
) -> None:
    (tmp_path / "gate").touch()
    task_id = enqueue(gate_pool, "test_gate", gate_payload(tmp_path))
    primary = gate_pool.info
    first_port = replica.port if first_host == "standby" else free_port()
    url = make_conninfo(db_url, host="127.0.0.1,127.0.0.1", port=f"{first_port},{primary.port}")
    worker = start_gate_worker(workers, f"multi-{first_port}", url)
    wait_for_status(gate_pool, task_id, "completed", 20, also=worker.describe)
    log = worker.log()
    assert "names several hosts (127.0.0.1,127.0.0.1) and no target_session_attrs" in log, worker.describe()
    assert log.count("add target_session_attrs=read-write to the URL") == 1, worker.describe()
    assert READ_ONLY_WARNING not in log, worker.describe()


def test_an_explicit_target_session_attrs_wins_and_gets_no_warning(
    gate_pool: psycopg.Connection, replica: Replica, db_url: str, workers: Workers
) -> None:
    url = make_conninfo(
        db_url, host="127.0.0.1,127.0.0.1", port=f"{replica.port},{gate_pool.info.port}", target_session_attrs="any"
    )
    worker = start_gate_worker(workers, "explicit-any", url)
    # "any" takes the standby, which the worker waits out rather than work on or die of.
    worker.wait_for_log(READ_ONLY_WARNING)
    assert worker.alive, worker.describe()
    assert "names several hosts" not in worker.log(), worker.describe()


def test_the_client_says_unavailable_on_a_read_only_server(
    replica: Replica, db_url: str, read_only_server: ReadOnlyServer
) -> None:
    standby_url = replica.url_for(db_url)
    with pytest.raises(DatabaseReadOnly, match="is read-only: it is a standby"):
        Client.connect(standby_url)
    with pytest.raises(DatabaseReadOnly, match="is read-only: it is a standby"):
        asyncio.run(AsyncClient.connect(standby_url))
    with Client.connect(read_only_server.url) as client:
        read_only_server.set_read_only(True)
        with pytest.raises(DatabaseUnavailable, match="the server is read-only"):
            client.enqueue("test_gate", {"n": 1})
        read_only_server.set_read_only(False)
        assert client.enqueue("test_gate", {"n": 2}).status == "pending"


def test_the_scheduler_waits_out_a_standby_and_its_tick_once_says_unavailable(
    gate_pool: psycopg.Connection, own_replica: Replica, db_url: str, workers: Workers
) -> None:
    standby_url = own_replica.url_for(db_url)
    once = workers.start(
        "unused", "tick-once", ready=False, args=("scheduler", "--once"), handlers=None, database_url=standby_url
    )
    assert once.wait(20) == 1, once.describe()
    assert f"the server at 127.0.0.1:{own_replica.port} is read-only: it is a standby" in once.log(), once.describe()

    looping = workers.start(
        "unused", "tick-loop", ready=False, args=("scheduler", "--interval-seconds", "1"), handlers=None,
        database_url=standby_url,
    )
    looping.wait_for_log(READ_ONLY_WARNING)
    assert looping.alive, looping.describe()
    own_replica.promote()
    looping.wait_for_log("Starting scheduler tick-loop", timeout=30)
    assert looping.log().count(READ_ONLY_WARNING) == 1, looping.describe()
    assert looping.alive, looping.describe()


def test_the_dashboard_answers_503_on_a_standby(
    gate_pool: psycopg.Connection, replica: Replica, db_url: str
) -> None:
    from starlette.testclient import TestClient

    from pyworker.contrib.dashboard.app import create_app

    with TestClient(create_app(replica.url_for(db_url))) as browser:
        answer = browser.get("/api/tasks/counts")
    assert answer.status_code == 503, answer.text
    assert "is read-only: it is a standby" in json.dumps(answer.json())
