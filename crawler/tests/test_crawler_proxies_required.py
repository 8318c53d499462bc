"""A platform that requires proxies: with none enabled (none added, or all disabled), its
requests fail, to be retried, and never go direct; a real worker crawling the simulator, the
client on its own, and `pyworker proxies require / allow-direct / platforms`."""

from __future__ import annotations

import json

import psycopg
import pytest
from test_crawler_e2e import (  # noqa: F401 - crawler and platform are fixtures
    add_stores,
    crawler,
    enqueue,
    platform,
    start,
    statuses,
    task_summary,
    wait_until_idle,
)
from test_crawler_proxies import pyworker, tinyproxies  # noqa: F401 - tinyproxies is a fixture
from worker_support import Workers, fetch_one, wait_for

from taskpool_crawler.client import HttpPlatformClient, ProxyUnavailable
from taskpool_crawler.db import CrawlerDatabase
from taskpool_crawler.proxies import DatabaseProxies
from taskpool_crawler.simulator import SimulatorServer
from taskpool_crawler.tinyproxy import Tinyproxy


def served(platform: SimulatorServer, name: str) -> int:
    """The requests the simulator has had for platform `name`."""
    return platform.state()["requests"][name]["total"]


def test_a_crawl_of_a_platform_requiring_proxies_with_none_fails_to_be_retried_then_goes_through_one(
    crawler: psycopg.Connection,
    platform: SimulatorServer,
    tinyproxies: list[Tinyproxy],
    workers: Workers,
    db_url: str,
) -> None:
    stores = add_stores(crawler, platform.simulator, "jane")
    required = pyworker(db_url, "proxies", "require", "jane", "--json")
    assert required.exit_code == 0, required.output
    assert json.loads(required.stdout)["requests"] == "refused"
    before = served(platform, "jane")
    store_id = next(iter(stores.values()))
    (task_id,) = enqueue(crawler, [{"role": "product_resync", "dispensary_id": store_id}])
    start(workers, {"product_resync": 1})

    wait_for(
        lambda: fetch_one(crawler, "SELECT retry_count FROM worker_tasks WHERE id = %s", (task_id,))[0] >= 1,
        30,
        "the first attempt to fail",
    )
    (error,) = fetch_one(
        crawler, "SELECT error_message FROM worker_task_attempts WHERE task_id = %s ORDER BY attempt LIMIT 1", (task_id,)
    )
    assert "jane requires proxies and has none enabled" in error, error
    assert fetch_one(crawler, "SELECT status FROM worker_tasks WHERE id = %s", (task_id,))[0] in {"pending", "claimed", "running"}
    assert served(platform, "jane") == before, "a request went direct"

    # A proxy added: the retry goes through it and completes.
    added = pyworker(db_url, "proxies", "add", "jane", tinyproxies[0].url, "--json")
    assert added.exit_code == 0, added.output
    crawler.execute("UPDATE worker_tasks SET scheduled_for = now() WHERE id = %s AND status = 'pending'", (task_id,))
    wait_until_idle(crawler, workers, timeout=30, roles=("product_resync",))
    assert statuses(crawler, "product_resync") == {"completed": 1}, task_summary(crawler)
    assert tinyproxies[0].requests() >= 1


def test_with_its_proxies_all_disabled_a_platform_requiring_them_is_not_asked_directly(
    crawler: psycopg.Connection, platform: SimulatorServer, tinyproxies: list[Tinyproxy], db_url: str
) -> None:
    (proxy_id,) = crawler.execute("SELECT id FROM add_proxy('dutchie', %s)", (tinyproxies[0].url,)).fetchone()
    crawler.execute("SELECT disable_proxy(%s)", (proxy_id,))
    crawler.execute("SELECT set_proxies_required('dutchie', true)")
    before = served(platform, "dutchie")
    db = CrawlerDatabase(db_url)
    try:
        client = HttpPlatformClient(platform.url, "dutchie", timeout=5, proxies=DatabaseProxies(lambda: db))
        with pytest.raises(ProxyUnavailable) as refused:
            client.list_stores("AZ")
        assert refused.value.retryable
        assert "dutchie requires proxies and has none enabled" in refused.value.message
        assert served(platform, "dutchie") == before
        # Allowed direct again, the same client asks the platform itself.
        crawler.execute("SELECT set_proxies_required('dutchie', false)")
        assert client.list_stores("AZ")
    finally:
        db.close()
    assert served(platform, "dutchie") == before + 1
    assert tinyproxies[0].requests() == 0


def test_the_proxies_command_requires_allows_direct_and_lists_platforms(
    conn: psycopg.Connection, db_url: str
) -> None:
    conn.execute("INSERT INTO platform_governance (platform) VALUES ('dutchie'), ('jane')")
    assert pyworker(db_url, "proxies", "add", "jane", "http://10.0.0.5:3128").exit_code == 0
    required = pyworker(db_url, "proxies", "require", "dutchie")
    assert required.exit_code == 0, required.output
    assert "refused" in required.stdout

    listed = pyworker(db_url, "proxies", "platforms", "--json")
    assert listed.exit_code == 0, listed.output
    rows = {row["platform"]: row for row in json.loads(listed.stdout)}
    assert (rows["dutchie"]["proxies_required"], rows["dutchie"]["requests"], rows["dutchie"]["proxies"]) == (True, "refused", 0)
    assert (rows["jane"]["proxies_required"], rows["jane"]["requests"], rows["jane"]["enabled_proxies"]) == (False, "proxied", 1)

    allowed = pyworker(db_url, "proxies", "allow-direct", "dutchie", "--json")
    assert allowed.exit_code == 0, allowed.output
    assert (json.loads(allowed.stdout)["proxies_required"], json.loads(allowed.stdout)["requests"]) == (False, "direct")

    unknown = pyworker(db_url, "proxies", "require", "nowhere")
    assert unknown.exit_code == 2, unknown.output
    assert "unknown platform 'nowhere'" in unknown.stderr
