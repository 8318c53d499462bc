"""The crawler's handlers never share a connection or a transaction: in one worker process at
--concurrency 2, two store_discovery tasks each upsert in a transaction of their own, and
another role's record_crawl_payload commits on its own while a discovery's transaction is open.

A discovery's transaction is held open by this test: it changes a known store's name (committed),
then locks the store's row; the discovery's upsert, which writes back the platform's name, waits
for the lock inside its transaction until the test lets go.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import psycopg
import pytest
from test_crawler_e2e import (  # noqa: F401 - crawler and platform are fixtures
    add_stores,
    crawler,
    platform,
)
from worker_support import WorkerProcess, Workers, fetch_one, wait_for, wait_for_status

from taskpool_crawler.simulator import Simulator, SimulatorServer

HANDLERS = "taskpool_crawler.handlers"
STATES = ("AZ", "CA")


def start(workers: Workers, roles: str, worker_id: str, concurrency: int) -> WorkerProcess:
    worker = workers.start(roles, worker_id, ready=False, handlers=HANDLERS, concurrency=concurrency)
    worker.wait_for_log(f"Starting worker {worker_id} for role", 20)
    return worker


@pytest.fixture
def locker(db_url: str) -> Iterator[psycopg.Connection]:
    """A session of the test's own, whose transaction holds the row locks the test takes."""
    with psycopg.connect(db_url) as conn:
        yield conn


def lock_a_store_discovery_rewrites(
    conn: psycopg.Connection, locker: psycopg.Connection, simulator: Simulator
) -> int:
    """A known dutchie store in AZ whose name differs from the platform's (so a discovery writes
    it back), its row locked by `locker`'s open transaction; the store's id."""
    store = simulator.stores("dutchie", "AZ")[0]
    conn.execute(
        "SELECT upsert_discovered_stores('dutchie', %s::jsonb)",
        (json.dumps([{**store.to_json(), "name": "renamed by the test"}]),),
    )
    (store_id,) = fetch_one(
        conn,
        "SELECT id FROM dispensaries WHERE platform = 'dutchie' AND platform_dispensary_id = %s",
        (store.platform_store_id,),
    )
    locker.execute("SELECT id FROM dispensaries WHERE id = %s FOR UPDATE", (store_id,))
    return store_id


def handlers_waiting_on_locks(conn: psycopg.Connection, worker: WorkerProcess) -> int:
    """How many of the worker's handler connections wait for a lock."""
    return fetch_one(
        conn,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s"
        " AND wait_event_type = 'Lock'",
        (f"pyworker {worker.worker_id} handler",),
    )[0]


def enqueue(conn: psycopg.Connection, role: str, payload: dict, dispensary_id: int | None = None) -> int:
    return fetch_one(
        conn,
        "SELECT id FROM enqueue_tasks(%s::jsonb)",
        (json.dumps([{"role": role, "payload": payload, "dispensary_id": dispensary_id}]),),
    )[0]


def listed_stores(simulator: Simulator) -> dict[tuple[str, str], str]:
    """Every store the discoveries list: its name by (platform, platform store id)."""
    return {
        (store.platform, store.platform_store_id): store.name
        for name in ("dutchie", "jane")
        for state in STATES
        for store in simulator.stores(name, state)
    }


def stored_stores(conn: psycopg.Connection) -> dict[tuple[str, str], str]:
    rows = conn.execute("SELECT platform, platform_dispensary_id, name FROM dispensaries").fetchall()
    return {(platform, store_id): name for platform, store_id, name in rows}


def test_two_discoveries_at_once_in_one_process_each_commit_every_store(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers, locker: psycopg.Connection
) -> None:
    conn = crawler
    simulator = platform.simulator
    locked = lock_a_store_discovery_rewrites(conn, locker, simulator)
    worker = start(workers, "store_discovery", "discovery-2", concurrency=2)
    first = enqueue(conn, "store_discovery", {"states": list(STATES)})
    second = enqueue(conn, "store_discovery", {"states": list(reversed(STATES))})
    # Both discoveries are inside their upserts' transactions at once, each on its own connection.
    wait_for(
        lambda: handlers_waiting_on_locks(conn, worker) == 2,
        20,
        "both discoveries to wait inside their transactions",
        also=worker.log,
    )
    locker.rollback()

    results = [wait_for_status(conn, task, "completed", 20, also=worker.log)["result"] for task in (first, second)]
    expected = listed_stores(simulator)
    assert all(result["stores"] == len(expected) for result in results)
    assert stored_stores(conn) == expected
    store_ids = {row[0] for row in conn.execute("SELECT id FROM dispensaries")}
    assert locked in store_ids
    # Every store awaits its first crawl: each is named by a discovery and has its first crawl queued.
    assert set(results[0]["newStoreIds"]) | set(results[1]["newStoreIds"]) == store_ids
    queued = {row[0] for row in conn.execute("SELECT dispensary_id FROM worker_tasks WHERE role = 'product_discovery'")}
    assert queued == store_ids
    assert "wrong nesting level" not in worker.log()


def test_another_role_s_payload_commits_while_a_discovery_s_transaction_is_open(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers, locker: psycopg.Connection
) -> None:
    conn = crawler
    simulator = platform.simulator
    ids = add_stores(conn, simulator, "jane")
    locked = lock_a_store_discovery_rewrites(conn, locker, simulator)
    worker = start(workers, "store_discovery,product_resync", "mixed-2", concurrency=2)
    discovery = enqueue(conn, "store_discovery", {"states": list(STATES)})
    wait_for(
        lambda: handlers_waiting_on_locks(conn, worker) == 1,
        20,
        "the discovery to wait inside its transaction",
        also=worker.log,
    )

    store = next(iter(ids.values()))
    resync = enqueue(conn, "product_resync", {}, dispensary_id=store)
    payload_id = wait_for_status(conn, resync, "completed", 20, also=worker.log)["result"]["payload_id"]
    # Committed on its own: another session sees it while the discovery's transaction is open.
    assert fetch_one(conn, "SELECT dispensary_id FROM raw_crawl_payloads WHERE id = %s", (payload_id,)) == (store,)
    assert fetch_one(conn, "SELECT status FROM worker_tasks WHERE id = %s", (discovery,)) == ("running",)
    assert handlers_waiting_on_locks(conn, worker) == 1

    # The discovery's transaction is rolled back (its connection terminated): the payload stays.
    # The broken connection goes (the pool discards it); the retry borrows a fresh one.
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = %s"
        " AND wait_event_type = 'Lock'",
        (f"pyworker {worker.worker_id} handler",),
    )
    wait_for(
        lambda: fetch_one(conn, "SELECT retry_count FROM worker_tasks WHERE id = %s", (discovery,))[0] == 1,
        20,
        "the discovery's attempt to fail",
        also=worker.log,
    )
    assert fetch_one(conn, "SELECT dispensary_id FROM raw_crawl_payloads WHERE id = %s", (payload_id,)) == (store,)
    locker.rollback()
    wait_for_status(conn, discovery, "completed", 20, also=worker.log)
    assert stored_stores(conn) == listed_stores(simulator)
    assert locked in {row[0] for row in conn.execute("SELECT id FROM dispensaries")}
