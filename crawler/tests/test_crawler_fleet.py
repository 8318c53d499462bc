"""The crawler as deployed: worker processes that run many tasks at once and serve several roles
each, discoveries overlapping in one process. Every store, payload and product row is checked
against the simulator, through a discovery and a resync round (real worker processes on a real
database, as in test_crawler_e2e.py, whose fixtures it uses)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import psycopg
from test_crawler_e2e import (  # noqa: F401 - crawler and platform are fixtures
    PLATFORMS,
    STATES,
    crawler,
    enqueue,
    platform,
    statuses,
    task_summary,
    wait_until_idle,
)
from worker_support import WorkerProcess, Workers, fetch_one

from taskpool_crawler.simulator import Simulator, SimulatorServer

HANDLERS = "taskpool_crawler.handlers"
# Two processes, each serving several roles, each role at a share of the process's concurrency:
# discoveries two at a time beside the first crawls and refreshes; resyncs beside refreshes.
FLEET = {
    "discover-crawl-refresh": ("store_discovery=2", "product_discovery=4", "product_refresh=4"),
    "resync-refresh": ("product_resync=4", "product_refresh=4"),
}
# Discoveries that list the same stores, two at a time: they overlap in one process.
DISCOVERIES = [
    {"states": list(STATES)},
    {"states": list(reversed(STATES))},
    {"platform": PLATFORMS[0], "states": list(STATES)},
    {"platforms": list(PLATFORMS), "states": [STATES[0]]},
]
ROUND_ROLES = ("store_discovery", "product_discovery", "product_resync", "product_refresh")
# Each platform request waits this long: the two discoveries of a claim are still listing
# while the other's requests go out.
LATENCY_MS = 100


def start_fleet(workers: Workers) -> list[WorkerProcess]:
    started = []
    for name, shares in FLEET.items():
        concurrency = sum(int(share.split("=")[1]) for share in shares)
        worker = workers.start(",".join(shares), name, ready=False, handlers=HANDLERS, concurrency=concurrency)
        started.append(worker)
    for worker in started:
        worker.wait_for_log(f"Starting worker {worker.worker_id} for roles: ", 20)
    return started


def menu_rows(simulator: Simulator, store: Any, clock: float) -> list[tuple[Any, ...]]:
    return sorted(
        (p["id"], p["name"], p["brand"], p["category"], p["price"], p["stock"])
        for p in simulator.menu_at(store, clock)["products"]
    )


def overlapping_discoveries(conn: psycopg.Connection) -> int:
    """Pairs of store_discovery tasks that ran at the same time in the same worker."""
    return fetch_one(
        conn,
        "SELECT count(*) FROM worker_tasks a, worker_tasks b"
        " WHERE a.role = 'store_discovery' AND b.role = 'store_discovery' AND a.id < b.id"
        " AND a.worker_id = b.worker_id AND a.started_at < b.completed_at AND b.started_at < a.completed_at",
    )[0]


def test_overlapping_discoveries_and_mixed_roles_keep_every_store_payload_and_product(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers, tmp_path: Path
) -> None:
    conn = crawler
    simulator = platform.simulator
    for name in PLATFORMS:
        platform.set_faults(name, latency_ms=LATENCY_MS)
    start_fleet(workers)

    open_stores = [store for name in PLATFORMS for store in simulator.stores(name)]
    discoveries = enqueue(conn, [{"role": "store_discovery", "payload": payload} for payload in DISCOVERIES])
    wait_until_idle(conn, workers, timeout=60, roles=ROUND_ROLES)
    assert overlapping_discoveries(conn) >= 1
    for task_id in discoveries:
        assert fetch_one(conn, "SELECT status FROM worker_tasks WHERE id = %s", (task_id,)) == ("completed",)

    # Every store the platforms list, once, as they list it.
    stores = conn.execute(
        "SELECT platform, platform_dispensary_id, name, state_code, city, menu_url, id FROM dispensaries"
    ).fetchall()
    assert sorted(row[:6] for row in stores) == sorted(
        (s.platform, s.platform_store_id, s.name, s.state, s.city, s.menu_url) for s in open_stores
    )
    ids = {(row[0], row[1]): row[6] for row in stores}

    platform.advance(4)
    enqueue(conn, [{"role": "product_resync", "dispensary_id": store_id} for store_id in ids.values()])
    wait_until_idle(conn, workers, timeout=60, roles=ROUND_ROLES)
    # Discoveries at once may both name a store awaiting its first crawl: it is crawled twice.
    first_crawls = conn.execute("SELECT DISTINCT dispensary_id FROM worker_tasks WHERE role = 'product_discovery'")
    assert {row[0] for row in first_crawls} == set(ids.values())
    payload_count = fetch_one(conn, "SELECT count(*) FROM raw_crawl_payloads")[0]
    for role, count in (
        ("product_discovery", payload_count - len(ids)),
        ("product_resync", len(ids)),
        ("product_refresh", payload_count),
    ):
        assert statuses(conn, role) == {"completed": count}, task_summary(conn)

    for store in open_stores:
        store_id = ids[(store.platform, store.platform_store_id)]
        where = f"{store.platform} store {store.platform_store_id}"
        # The first crawls' payloads and the resync's, applied, their files the menus served.
        payloads = conn.execute(
            "SELECT status, storage_path FROM raw_crawl_payloads WHERE dispensary_id = %s ORDER BY id",
            (store_id,),
        ).fetchall()
        assert len(payloads) >= 2 and {status for status, _ in payloads} == {"applied"}, where
        clocks = [0] * (len(payloads) - 1) + [4]
        for (_, storage_path), clock in zip(payloads, clocks, strict=True):
            body = json.loads(gzip.decompress((tmp_path / "storage" / storage_path).read_bytes()))
            served = sorted(p["id"] for p in body["products"])
            assert served == [row[0] for row in menu_rows(simulator, store, clock)], where
        # The products as the resync found them; those gone since the first crawl marked missing.
        current = conn.execute(
            "SELECT platform_product_id, name, brand, category, price::float8, stock FROM store_products"
            " WHERE dispensary_id = %s AND missing_since IS NULL ORDER BY 1",
            (store_id,),
        ).fetchall()
        assert current == menu_rows(simulator, store, 4), where
        missing = [
            row[0]
            for row in conn.execute(
                "SELECT platform_product_id FROM store_products"
                " WHERE dispensary_id = %s AND missing_since IS NOT NULL ORDER BY 1",
                (store_id,),
            )
        ]
        now = {row[0] for row in menu_rows(simulator, store, 4)}
        assert missing == sorted(row[0] for row in menu_rows(simulator, store, 0) if row[0] not in now), where
