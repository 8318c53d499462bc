"""Products without an id end to end (issue 18, item 4): real worker processes crawl a simulated
platform that lists a quarter of its products with id null, the same ones in every crawl.
product_refresh hands them to apply_menu_payload without an id; they get product_hash_id of their
name, brand, category and size, keep it in the next crawl, and the diff between the two crawls
shows their price and stock changes like any other product's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from test_crawler_e2e import (
    PLATFORMS,
    STATES,
    add_stores,
    crawler,  # noqa: F401 (a fixture)
    enqueue,
    start,
    statuses,
    task_summary,
    wait_until_idle,
)
from worker_support import Workers

from taskpool_crawler.simulator import Simulator, SimulatorServer, serve

ROLES = ("product_discovery", "product_resync", "product_refresh")


@pytest.fixture
def platform() -> Iterator[SimulatorServer]:
    """10 stores on dutchie and jane listing a quarter of their products without an id."""
    server = serve(Simulator(seed=7, stores=10, states=STATES, platforms=PLATFORMS, id_less_share=0.25))
    try:
        yield server
    finally:
        server.stop()


def menu_by_id(conn: psycopg.Connection, products: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The menu's products by the id the crawler gives them: the platform's, or product_hash_id's
    (asked of the database) for one without; of those hashing the same, the first."""
    by_id: dict[str, dict[str, Any]] = {}
    for product in products:
        product_id = product["id"]
        if product_id is None:
            (product_id,) = conn.execute(
                "SELECT product_hash_id(%s, %s, %s, %s)",
                (product["name"], product["brand"], product["category"], product["size"]),
            ).fetchone()
        by_id.setdefault(product_id, product)
    return by_id


def test_products_without_an_id_keep_their_hashed_id_across_crawls_and_diff_like_any_other(
    crawler: psycopg.Connection,  # noqa: F811 (the fixture imported above)
    platform: SimulatorServer,
    workers: Workers,
    worker_login_url: str,
) -> None:
    simulator = platform.simulator
    stores = {
        (store.platform, store.platform_store_id): store
        for name in PLATFORMS
        for store in simulator.stores(name)
    }
    store_ids = {
        (name, platform_id): store_id
        for name in PLATFORMS
        for platform_id, store_id in add_stores(crawler, simulator, name).items()
    }
    menus = {
        store_id: {clock: simulator.menu_at(stores[key], clock)["products"] for clock in (0, 4)}
        for key, store_id in store_ids.items()
    }
    id_less = sum(p["id"] is None for menu in menus.values() for p in menu[0])
    assert id_less > 0, "the seed lists some products without an id"

    start(workers, {"product_discovery": 2, "product_resync": 2, "product_refresh": 1},
          database_url=worker_login_url)
    enqueue(crawler, [{"role": "product_discovery", "dispensary_id": i} for i in store_ids.values()])
    wait_until_idle(crawler, workers, timeout=120, roles=ROLES)
    assert statuses(crawler, "product_refresh") == {"completed": len(store_ids)}, task_summary(crawler)

    for store_id, menu in menus.items():
        expected = menu_by_id(crawler, menu[0])
        rows = crawler.execute(
            "SELECT platform_product_id, name, size, price::float8, stock FROM store_products"
            " WHERE dispensary_id = %s",
            (store_id,),
        ).fetchall()
        assert {row[0]: row[1:] for row in rows} == {
            product_id: (p["name"], p["size"], p["price"], p["stock"]) for product_id, p in expected.items()
        }, f"store {store_id}"
    assert crawler.execute(
        "SELECT count(*) FROM store_products WHERE platform_product_id LIKE 'hash:%%'"
    ).fetchone()[0] == id_less

    platform.advance(4)
    enqueue(crawler, [{"role": "product_resync", "dispensary_id": i} for i in store_ids.values()])
    wait_until_idle(crawler, workers, timeout=120, roles=ROLES)
    assert statuses(crawler, "product_refresh") == {"completed": 2 * len(store_ids)}, task_summary(crawler)

    hashed_price_changes = 0
    for store_id, menu in menus.items():
        old, new = menu_by_id(crawler, menu[0]), menu_by_id(crawler, menu[4])
        both = sorted(old.keys() & new.keys())
        (diff,) = crawler.execute("SELECT diff_latest_payloads(%s)", (store_id,)).fetchone()
        details = diff["details"]
        assert sorted(p["id"] for p in details["added"]) == sorted(new.keys() - old.keys())
        assert sorted(p["id"] for p in details["removed"]) == sorted(old.keys() - new.keys())
        assert [(c["id"], float(c["from"]), float(c["to"])) for c in details["priceChanges"]] == [
            (i, old[i]["price"], new[i]["price"]) for i in both if old[i]["price"] != new[i]["price"]
        ]
        assert [(c["id"], c["from"], c["to"]) for c in details["stockChanges"]] == [
            (i, old[i]["stock"], new[i]["stock"]) for i in both if old[i]["stock"] != new[i]["stock"]
        ]
        hashed_price_changes += sum(c["id"].startswith("hash:") for c in details["priceChanges"])
    assert hashed_price_changes > 0, "the seed changes the price of some products without an id"
