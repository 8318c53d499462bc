"""The reference crawler end to end: real worker processes (`python -m pyworker --handlers
taskpool_crawler.handlers`) crawling a small simulated platform served from this process.

Each test gets its own database (a copy of the deployed template), its own simulator (20 stores
on two platforms in two states) and its own storage directory. The crawler roles get a short
backoff here (1 s, doubling, capped at 4 s, no jitter), the platforms a rate limit high enough not to slow
the tests, so retries and cooldowns fit in a test.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql
from worker_support import (
    WorkerProcess,
    Workers,
    fetch_one,
    task_row,
    wait_for,
    wait_for_status,
)

from pyworker.admin import cli
from taskpool_crawler.simulator import Simulator, SimulatorServer, serve

HANDLERS = "taskpool_crawler.handlers"
PLATFORMS = ("dutchie", "jane")
STATES = ("AZ", "CA")
CRAWLER_ROLES = (
    "store_discovery",
    "entry_point_discovery",
    "product_discovery",
    "product_resync",
    "product_refresh",
    "analytics_refresh",
)
ACTIVE = ("pending", "claimed", "running")


@pytest.fixture
def platform() -> Iterator[SimulatorServer]:
    """A simulator of 20 stores (dutchie and jane; AZ and CA) on a free loopback port."""
    server = serve(Simulator(seed=7, stores=20, states=STATES, platforms=PLATFORMS))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def crawler(
    conn: psycopg.Connection,
    platform: SimulatorServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> psycopg.Connection:
    """`conn`, its database set up for crawling `platform`; the workers' environment set."""
    storage_dir = tmp_path / "storage"
    monkeypatch.setenv("TASKPOOL_PLATFORM_URL", platform.url)
    monkeypatch.setenv("TASKPOOL_STORAGE_DIR", str(storage_dir))
    monkeypatch.setenv("TASKPOOL_PLATFORM_TIMEOUT", "2")
    monkeypatch.setenv("TASKPOOL_PLATFORMS", ",".join(PLATFORMS))
    monkeypatch.setenv("TASKPOOL_STATES", ",".join(STATES))
    conn.execute(
        "UPDATE task_roles SET backoff_base = interval '1 second', backoff_cap = interval '4 seconds',"
        " backoff_jitter = 'none'"
        " WHERE role = ANY(%s)",
        (list(CRAWLER_ROLES),),
    )
    for name in PLATFORMS:
        set_governance(conn, name, requests_per_minute=60000, cooldown="5 seconds")
    return conn


def set_governance(conn: psycopg.Connection, platform: str, **settings: Any) -> None:
    """Tune a platform's row of platform_governance (created with the defaults if missing)."""
    conn.execute(
        "INSERT INTO platform_governance (platform) VALUES (%s) ON CONFLICT DO NOTHING", (platform,)
    )
    for column, value in settings.items():
        conn.execute(
            sql.SQL("UPDATE platform_governance SET {} = %s WHERE platform = %s").format(
                sql.Identifier(column)
            ),
            (value, platform),
        )


def start(workers: Workers, roles: dict[str, int], **settings: Any) -> list[WorkerProcess]:
    """Start crawler workers, `roles[role]` of each role, and wait until all have started."""
    started = [
        workers.start(role, f"{role}-{n}", ready=False, handlers=HANDLERS, **settings)
        for role, count in roles.items()
        for n in range(1, count + 1)
    ]
    for worker in started:
        worker.wait_for_log(f"Starting worker {worker.worker_id} for role: {worker.role}", 20)
    return started


def enqueue(conn: psycopg.Connection, specs: list[dict[str, Any]]) -> list[int]:
    return [
        row[0]
        for row in conn.execute("SELECT id FROM enqueue_tasks(%s::jsonb)", (json.dumps(specs),))
    ]


def wait_until_idle(
    conn: psycopg.Connection,
    workers: Workers,
    timeout: float = 30,
    roles: tuple[str, ...] = CRAWLER_ROLES,
) -> None:
    """Until no task of `roles` is pending, claimed or running."""
    wait_for(
        lambda: fetch_one(
            conn,
            "SELECT count(*) = 0 FROM worker_tasks WHERE status = ANY(%s) AND role = ANY(%s)",
            (list(ACTIVE), list(roles)),
        )[0],
        timeout,
        f"every task of {', '.join(roles)} to finish",
        interval=0.1,
        also=lambda: f"{task_summary(conn)}\n{workers.describe()}",
    )


def task_summary(conn: psycopg.Connection) -> str:
    rows = conn.execute(
        "SELECT role, status, count(*), max(error_message) FROM worker_tasks GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    return "tasks: " + "; ".join(f"{r} {s} {n} {e or ''}" for r, s, n, e in rows)


def statuses(conn: psycopg.Connection, role: str) -> dict[str, int]:
    return dict(
        conn.execute(
            "SELECT status, count(*) FROM worker_tasks WHERE role = %s GROUP BY status", (role,)
        ).fetchall()
    )


def add_stores(conn: psycopg.Connection, simulator: Simulator, platform: str) -> dict[str, int]:
    """The platform's open stores put in dispensaries (as store discovery would): id by store id."""
    stores = [store.to_json() for store in simulator.stores(platform)]
    conn.execute("SELECT upsert_discovered_stores(%s, %s::jsonb)", (platform, json.dumps(stores)))
    return dict(
        conn.execute(
            "SELECT platform_dispensary_id, id FROM dispensaries WHERE platform = %s", (platform,)
        ).fetchall()
    )


def attempts(conn: psycopg.Connection, task_id: int) -> list[dict[str, Any]]:
    cursor = conn.execute(
        "SELECT attempt, claimed_at, ended_at, outcome, error_message FROM worker_task_attempts"
        " WHERE task_id = %s ORDER BY attempt",
        (task_id,),
    )
    names = [column.name for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def expected_diff(
    simulator: Simulator, platform: str, store_id: str, before: float, after: float
) -> dict[str, Any]:
    """What changed on the store's menu between two clocks, from the simulator itself."""
    store = next(
        s
        for s in simulator.all_stores()
        if (s.platform, s.platform_store_id) == (platform, store_id)
    )
    old = {p["id"]: p for p in simulator.menu_at(store, before)["products"]}
    new = {p["id"]: p for p in simulator.menu_at(store, after)["products"]}
    both = sorted(old.keys() & new.keys())
    return {
        "added": sorted(new.keys() - old.keys()),
        "removed": sorted(old.keys() - new.keys()),
        "priceChanges": [
            (i, old[i]["price"], new[i]["price"])
            for i in both
            if old[i]["price"] != new[i]["price"]
        ],
        "stockChanges": [
            (i, old[i]["stock"], new[i]["stock"])
            for i in both
            if old[i]["stock"] != new[i]["stock"]
        ],
    }


def test_discovery_chain_gives_every_store_its_products_refreshed_from_files_with_the_platform_stopped(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers, tmp_path: Path
) -> None:
    simulator = platform.simulator
    start(workers, {"store_discovery": 1, "product_discovery": 2})
    (discovery,) = enqueue(crawler, [{"role": "store_discovery"}])
    wait_until_idle(crawler, workers, roles=("store_discovery", "product_discovery"))

    open_stores = [s for p in PLATFORMS for s in simulator.stores(p)]
    result = task_row(crawler, discovery)["result"]
    assert result["stores"] == len(open_stores)
    assert len(result["newStoreIds"]) == len(open_stores)
    assert statuses(crawler, "product_discovery") == {"completed": len(open_stores)}
    # The chain queued a refresh per crawl; nobody runs them yet.
    assert statuses(crawler, "product_refresh") == {"pending": len(open_stores)}

    # product_refresh reads the saved files only: the platform can be gone.
    platform.stop()
    start(workers, {"product_refresh": 2})
    wait_until_idle(crawler, workers)
    assert statuses(crawler, "product_refresh") == {"completed": len(open_stores)}

    for store in open_stores:
        expected = sorted(
            (p["id"], p["name"], p["brand"], p["category"], p["price"], p["stock"])
            for p in simulator.menu_at(store, 0)["products"]
        )
        found = crawler.execute(
            "SELECT sp.platform_product_id, sp.name, sp.brand, sp.category, sp.price::float8, sp.stock"
            " FROM store_products sp JOIN dispensaries d ON d.id = sp.dispensary_id"
            " WHERE d.platform = %s AND d.platform_dispensary_id = %s ORDER BY 1",
            (store.platform, store.platform_store_id),
        ).fetchall()
        assert found == expected, f"{store.platform} store {store.platform_store_id}"
    payloads = crawler.execute("SELECT status, storage_path FROM raw_crawl_payloads").fetchall()
    assert len(payloads) == len(open_stores)
    assert {status for status, _ in payloads} == {"applied"}
    for _, storage_path in payloads:
        assert (tmp_path / "storage" / storage_path).is_file()


def test_every_crawler_role_runs_under_a_login_granted_only_taskpool_worker(
    crawler: psycopg.Connection, workers: Workers, worker_login_url: str
) -> None:
    # Discovery, the first crawls, their refreshes from the saved files and the analytics: every
    # function the crawler's handlers call is one taskpool_worker may execute.
    roles = ("store_discovery", "product_discovery", "product_refresh", "analytics_refresh")
    started = start(workers, dict.fromkeys(roles, 1), database_url=worker_login_url)
    enqueue(crawler, [{"role": "store_discovery"}])
    wait_until_idle(crawler, workers, timeout=60, roles=roles[:3])
    enqueue(crawler, [{"role": "analytics_refresh"}])
    wait_until_idle(crawler, workers, timeout=30)

    for role in roles:
        assert set(statuses(crawler, role)) == {"completed"}, task_summary(crawler)
    assert fetch_one(crawler, "SELECT count(*) FROM raw_crawl_payloads WHERE status = 'applied'")[0] > 0
    for worker in started:
        assert "permission denied" not in worker.log(), worker.describe()


def test_a_resync_round_after_the_clock_moves_yields_the_expected_diffs(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers, db_url: str
) -> None:
    simulator = platform.simulator
    start(
        workers,
        {
            "store_discovery": 1,
            "product_discovery": 2,
            "product_resync": 2,
            "product_refresh": 2,
            "analytics_refresh": 1,
        },
    )
    enqueue(crawler, [{"role": "store_discovery"}])
    wait_until_idle(crawler, workers)

    platform.advance(4)
    stores = crawler.execute(
        "SELECT id, platform, platform_dispensary_id FROM dispensaries ORDER BY id"
    ).fetchall()
    enqueue(
        crawler,
        [{"role": "product_resync", "dispensary_id": store_id} for store_id, _, _ in stores],
    )
    wait_until_idle(crawler, workers)
    assert statuses(crawler, "product_resync") == {"completed": len(stores)}

    price_changes = stock_changes = 0
    for store_id, platform_name, platform_store_id in stores:
        diff = fetch_one(crawler, "SELECT diff_latest_payloads(%s)", (store_id,))[0]
        expected = expected_diff(simulator, platform_name, platform_store_id, 0, 4)
        details = diff["details"]
        assert sorted(p["id"] for p in details["added"]) == expected["added"]
        assert sorted(p["id"] for p in details["removed"]) == expected["removed"]
        assert [
            (c["id"], float(c["from"]), float(c["to"])) for c in details["priceChanges"]
        ] == expected["priceChanges"]
        assert [(c["id"], c["from"], c["to"]) for c in details["stockChanges"]] == expected[
            "stockChanges"
        ]
        assert diff["diff"] == {key: len(expected[key]) for key in expected}
        price_changes += diff["diff"]["priceChanges"]
        stock_changes += diff["diff"]["stockChanges"]
    assert price_changes > 0 and stock_changes > 0

    # Products gone from the menu are marked missing, the others are not.
    for store_id, platform_name, platform_store_id in stores:
        removed = expected_diff(simulator, platform_name, platform_store_id, 0, 4)["removed"]
        missing = [
            row[0]
            for row in crawler.execute(
                "SELECT platform_product_id FROM store_products"
                " WHERE dispensary_id = %s AND missing_since IS NOT NULL ORDER BY 1",
                (store_id,),
            )
        ]
        assert missing == removed, f"store {store_id}"

    # Refreshing a payload again writes no snapshot twice and changes no product.
    def snapshot_and_product_state() -> tuple[Any, ...]:
        return fetch_one(
            crawler,
            "SELECT (SELECT count(*) FROM store_product_snapshots),"
            " (SELECT md5(string_agg(sp::text, ',' ORDER BY dispensary_id, platform_product_id))"
            "  FROM store_products sp)",
        )

    before = snapshot_and_product_state()
    latest_payload = fetch_one(crawler, "SELECT max(id) FROM raw_crawl_payloads")[0]
    (again,) = enqueue(
        crawler,
        [
            {
                "role": "product_refresh",
                "dispensary_id": fetch_one(
                    crawler,
                    "SELECT dispensary_id FROM raw_crawl_payloads WHERE id = %s",
                    (latest_payload,),
                )[0],
                "payload": {"payload_id": latest_payload},
            }
        ],
    )
    wait_for_status(crawler, again, "completed", 20, also=workers.describe)
    assert snapshot_and_product_state() == before

    # The analytics views hold the menus' figures, computed here from the simulator.
    (analytics,) = enqueue(crawler, [{"role": "analytics_refresh"}])
    wait_for_status(crawler, analytics, "completed", 20, also=workers.describe)
    expected_rows = []
    for store_id, platform_name, platform_store_id in stores:
        store = next(
            st
            for st in simulator.all_stores()
            if (st.platform, st.platform_store_id) == (platform_name, platform_store_id)
        )
        by_category: dict[str, list[dict[str, Any]]] = {}
        for product in simulator.menu_at(store, 4)["products"]:
            by_category.setdefault(product["category"], []).append(product)
        for category, products in by_category.items():
            prices = [p["price"] for p in products]
            expected_rows.append(
                (
                    store_id,
                    category,
                    len(products),
                    sum(1 for p in products if p["stock"] > 0),
                    min(prices),
                    max(prices),
                )
            )
    found_rows = crawler.execute(
        "SELECT dispensary_id, category, products::int, in_stock::int, min_price::float8,"
        " max_price::float8 FROM mv_store_category_prices"
    ).fetchall()
    assert sorted(found_rows) == sorted(expected_rows)

    store_id = stores[0][0]
    shown = CliRunner().invoke(
        cli.main, ["--database-url", db_url, "payloads", "diff", "--store", str(store_id)]
    )
    assert shown.exit_code == 0, shown.output
    counts = fetch_one(crawler, "SELECT diff_latest_payloads(%s) -> 'diff'", (store_id,))[0]
    assert (
        f"{counts['priceChanges']} price changes, {counts['stockChanges']} stock changes"
        in shown.output
    )


def test_injected_500s_are_retried_with_backoff_until_the_crawl_succeeds(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers
) -> None:
    ids = add_stores(crawler, platform.simulator, "dutchie")
    store_id = next(iter(ids.values()))
    platform.set_faults("dutchie", error_rate=1.0, error_kinds=["500"])
    start(workers, {"product_discovery": 1})
    (task_id,) = enqueue(crawler, [{"role": "product_discovery", "dispensary_id": store_id}])

    wait_for(
        lambda: len(attempts(crawler, task_id)) >= 2,
        15,
        "two failed attempts",
        also=workers.describe,
    )
    platform.set_faults("dutchie", error_rate=0.0)
    row = wait_for_status(crawler, task_id, "completed", 15, also=workers.describe)

    failed = attempts(crawler, task_id)
    assert row["retry_count"] == len(failed) >= 2
    for attempt in failed:
        assert attempt["outcome"] == "retried"
        assert "PlatformError: GET " in attempt["error_message"]
        assert "HTTP 500: internal server error" in attempt["error_message"]
    # Each retry waited its backoff: 1 s, then 2 s.
    claims = [a["claimed_at"] for a in failed[1:]] + [row["claimed_at"]]
    for n, (attempt, next_claim) in enumerate(zip(failed, claims, strict=True)):
        assert (next_claim - attempt["ended_at"]).total_seconds() >= 2**n - 0.05
    assert row["result"]["payload_id"] > 0
    state = fetch_one(
        crawler,
        "SELECT consecutive_failures, open_until FROM platform_governance"
        " WHERE platform = 'dutchie'",
    )
    assert state == (0, None)


def test_a_platform_failing_hard_opens_its_circuit_and_none_of_its_tasks_is_claimed_until_the_cooldown(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers
) -> None:
    dutchie = add_stores(crawler, platform.simulator, "dutchie")
    jane = add_stores(crawler, platform.simulator, "jane")
    platform.set_faults("dutchie", down=True)
    start(workers, {"product_discovery": 2})
    dutchie_tasks = enqueue(
        crawler,
        [
            {"role": "product_discovery", "dispensary_id": i, "max_retries": 20}
            for i in list(dutchie.values())[:6]
        ],
    )
    opened = wait_for(
        lambda: fetch_one(
            crawler,
            "SELECT at FROM platform_events WHERE platform = 'dutchie' AND event = 'opened'",
        ),
        20,
        "the dutchie circuit to open",
        also=workers.describe,
    )[0]
    open_until = fetch_one(
        crawler, "SELECT open_until FROM platform_governance WHERE platform = 'dutchie'"
    )[0]
    platform.set_faults("dutchie", down=False)
    # Another platform's tasks run on meanwhile.
    jane_tasks = enqueue(
        crawler,
        [{"role": "product_discovery", "dispensary_id": i} for i in list(jane.values())[:2]],
    )
    wait_until_idle(crawler, workers, timeout=30, roles=("product_discovery",))

    assert {task_row(crawler, t)["status"] for t in dutchie_tasks + jane_tasks} == {"completed"}
    claims = crawler.execute(
        "SELECT claimed_at FROM worker_task_attempts WHERE task_id = ANY(%(ids)s)"
        " UNION ALL SELECT claimed_at FROM worker_tasks WHERE id = ANY(%(ids)s)",
        {"ids": dutchie_tasks},
    ).fetchall()
    # A claim whose transaction began as the circuit opened may still see it closed: a margin.
    during = [
        c for (c,) in claims if opened.timestamp() + 0.5 < c.timestamp() < open_until.timestamp()
    ]
    assert during == [], (
        f"dutchie tasks claimed while its circuit was open ({opened} to {open_until})"
    )
    assert any(c >= open_until for (c,) in claims)
    jane_claims = [task_row(crawler, t)["claimed_at"] for t in jane_tasks]
    assert all(c < open_until for c in jane_claims), (
        "jane's tasks should not wait for dutchie's cooldown"
    )
    events = crawler.execute(
        "SELECT event, consecutive_failures FROM platform_events WHERE platform = 'dutchie' ORDER BY at, id"
    ).fetchall()
    assert [e for e, _ in events] == ["opened", "closed"]
    assert events[0][1] == 5


def test_a_corrupt_menu_keeps_its_raw_payload_and_fails_the_attempt_clearly(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers, tmp_path: Path
) -> None:
    ids = add_stores(crawler, platform.simulator, "jane")
    platform_store_id, store_id = next(iter(ids.items()))
    platform.set_faults("jane", corrupt_rate=1.0)
    start(workers, {"product_discovery": 1})
    (task_id,) = enqueue(crawler, [{"role": "product_discovery", "dispensary_id": store_id}])
    (failed,) = wait_for(
        lambda: attempts(crawler, task_id), 15, "a failed attempt", also=workers.describe
    )
    platform.set_faults("jane", corrupt_rate=0.0)

    payload_id, storage_path, status, error = fetch_one(
        crawler,
        "SELECT id, storage_path, status, error_message FROM raw_crawl_payloads WHERE dispensary_id = %s"
        " ORDER BY id LIMIT 1",
        (store_id,),
    )
    path = tmp_path / "storage" / storage_path
    assert status == "corrupt"
    assert error.startswith("the menu is ")
    assert failed["outcome"] == "retried"
    assert failed["error_message"] == (
        f"CorruptMenu: the menu of jane store {platform_store_id} is corrupt: {error};"
        f" its raw payload {payload_id} is kept at {path}"
    )
    body = gzip.decompress(path.read_bytes())
    assert body.startswith(b"<html>") or body.startswith(b'{"platform"')
    # The attempt is retried, and the next crawl succeeds.
    row = wait_for_status(crawler, task_id, "completed", 15, also=workers.describe)
    assert row["retry_count"] == 1
    assert row["result"]["payload_id"] != payload_id
    assert (
        fetch_one(crawler, "SELECT status FROM raw_crawl_payloads WHERE id = %s", (payload_id,))[0]
        == "corrupt"
    )


def test_a_missing_payload_file_fails_product_refresh_for_good_naming_the_path(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers, tmp_path: Path
) -> None:
    ids = add_stores(crawler, platform.simulator, "dutchie")
    store_id = next(iter(ids.values()))
    start(workers, {"product_discovery": 1})
    (crawl,) = enqueue(crawler, [{"role": "product_discovery", "dispensary_id": store_id}])
    payload_id = wait_for_status(crawler, crawl, "completed", 15, also=workers.describe)["result"][
        "payload_id"
    ]
    storage_path = fetch_one(
        crawler, "SELECT storage_path FROM raw_crawl_payloads WHERE id = %s", (payload_id,)
    )[0]
    path = tmp_path / "storage" / storage_path
    path.unlink()

    start(workers, {"product_refresh": 1})
    (refresh,) = crawler.execute(
        "SELECT id FROM worker_tasks WHERE role = 'product_refresh'"
    ).fetchone()
    row = wait_for_status(crawler, refresh, "failed", 15, also=workers.describe)
    assert row["retry_count"] == 0
    assert row["error_message"] == (
        f"PermanentError: payload file {path} does not exist (is TASKPOOL_STORAGE the storage"
        " the crawl saved it to?)"
    )
    assert (
        fetch_one(crawler, "SELECT status FROM raw_crawl_payloads WHERE id = %s", (payload_id,))[0]
        == "saved"
    )
    assert (
        fetch_one(
            crawler, "SELECT count(*) FROM store_products WHERE dispensary_id = %s", (store_id,)
        )[0]
        == 0
    )


def test_entry_point_discovery_resolves_a_store_known_by_its_menu_url_and_queues_its_first_crawl(
    crawler: psycopg.Connection, platform: SimulatorServer, workers: Workers
) -> None:
    store = platform.simulator.stores("jane")[0]
    (store_id,) = crawler.execute(
        "INSERT INTO dispensaries (name, platform, menu_url) VALUES ('Added by hand', 'jane', %s) RETURNING id",
        (store.menu_url,),
    ).fetchone()
    start(workers, {"entry_point_discovery": 1})
    (task_id,) = enqueue(crawler, [{"role": "entry_point_discovery", "dispensary_id": store_id}])
    row = wait_for_status(crawler, task_id, "completed", 15, also=workers.describe)

    assert row["result"] == {
        "platform": "jane",
        "platform_dispensary_id": store.platform_store_id,
        "resolved": True,
    }
    assert fetch_one(
        crawler, "SELECT platform_dispensary_id FROM dispensaries WHERE id = %s", (store_id,)
    )[0] == (store.platform_store_id)
    assert crawler.execute(
        "SELECT role, status FROM worker_tasks WHERE dispensary_id = %s AND id <> %s",
        (store_id, task_id),
    ).fetchall() == [("product_discovery", "pending")]
