"""The crawler's pages in `pyworker dashboard` (its `pyworker.dashboard` entry point), in a real
browser: stores, a store's payloads, a payload, the diff between two; each also as JSON.

A store with two applied payloads (a price change, a product added, one gone, a stock change)
and a corrupt one, recorded and applied through the SQL functions; the server and the browser are
the core's test plumbing (tests/dashboard_support.py), one of each for the module.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import psycopg
import pytest
from dashboard_support import Dashboard, chromium, dashboard_server, http
from selenium.webdriver.common.by import By
from testkit import databases

from core_fixtures import COPY_PREFIX, database_url
from taskpool_crawler import storage

# One pytest-xdist worker runs the whole module (make test-py: --dist loadgroup), so that its
# module fixtures (the crawled database, the dashboard server) are made once.
pytestmark = pytest.mark.xdist_group("crawler_dashboard")

MENUS = [
    [{"id": "p1", "name": "Blue Dream 3.5g", "price": 35.0, "stock": 12},
     {"id": "p2", "name": "Runtz 1g", "price": 9.99, "stock": 0}],
    [{"id": "p1", "name": "Blue Dream 3.5g", "price": 33.5, "stock": 12},
     {"id": "p3", "name": "Mango Gummies 100mg", "price": 18.0, "stock": 20}],
]


def record(conn: psycopg.Connection, store_id: int, hour: int) -> int:
    """A payload of the store fetched at that hour, recorded as the crawl records it (no file:
    the pages read none)."""
    fetched_at = datetime(2026, 3, 1, hour, tzinfo=timezone.utc)
    return conn.execute(
        "SELECT record_crawl_payload(%s, %s, %s, 100, %s)",
        (store_id, fetched_at, storage.payload_storage_path(store_id, fetched_at),
         hashlib.sha256(str(hour).encode()).hexdigest()),
    ).fetchone()[0]


@pytest.fixture(scope="module")
def crawled(template_database: str) -> Iterator[tuple[str, dict[str, Any]]]:
    name = COPY_PREFIX + "crawler_dashboard_" + secrets.token_hex(4)
    with databases.copy(database_url(), template_database, name) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            (store_id,) = conn.execute(
                "SELECT (upsert_discovered_stores('dutchie', %s::jsonb))[1]",
                (json.dumps([{"platform_store_id": "s1", "name": "Green Leaf", "state": "AZ", "city": "Tempe"}]),),
            ).fetchone()
            payloads = []
            for hour, menu in zip((8, 12), MENUS, strict=True):
                payloads.append(record(conn, store_id, hour))
                conn.execute("SELECT apply_menu_payload(%s, %s::jsonb)", (payloads[-1], json.dumps(menu)))
            corrupt = record(conn, store_id, 16)
            conn.execute("SELECT mark_payload_corrupt(%s, 'not gzip')", (corrupt,))
            (proxy,) = conn.execute(
                "SELECT id FROM add_proxy('dutchie', 'http://crawler:s3cret@10.0.0.5:3128', rest_base => '20 minutes')"
            ).fetchone()
            conn.execute("SELECT report_proxy_result(%s, false, 'connection refused')", (proxy,))
        yield url, {"store": store_id, "payloads": payloads, "corrupt": corrupt, "proxy": proxy}


@pytest.fixture(scope="module")
def dashboard(crawled: tuple[str, dict[str, Any]]) -> Iterator[Dashboard]:
    with dashboard_server(crawled[0], token=None) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def test_the_crawler_adds_its_pages_to_the_menu_and_lists_stores(
    browser: Any, dashboard: Dashboard, crawled: tuple[str, dict[str, Any]]
) -> None:
    ids = crawled[1]
    browser.get(dashboard.url + "/")
    menu = [link.text for link in browser.find_elements(By.CSS_SELECTOR, "header nav a")]
    assert menu[-3:] == ["Stores", "Payloads", "Proxies"]
    assert not browser.find_elements(By.CSS_SELECTOR, ".message.warning")
    browser.find_element(By.LINK_TEXT, "Stores").click()
    cells = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, f"#stores tr[data-id='{ids['store']}'] td")]
    # id, name, platform, platform id, place, active, payloads, applied, corrupt, last fetched, products, missing
    assert cells[1:9] == ["Green Leaf", "dutchie", "s1", "Tempe, AZ", "yes", "3", "2", "1"]
    assert cells[10:] == ["2", "1"]


def test_a_store_links_its_payloads_and_their_diff(
    browser: Any, dashboard: Dashboard, crawled: tuple[str, dict[str, Any]]
) -> None:
    ids = crawled[1]
    older, newer = ids["payloads"]
    browser.get(dashboard.url + f"/stores/{ids['store']}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#payloads tbody tr")
    assert [int(row.get_attribute("data-id")) for row in rows] == [ids["corrupt"], newer, older]
    browser.find_element(By.CSS_SELECTOR, f"#payloads tr[data-id='{newer}'] a.diff").click()
    assert browser.find_element(By.ID, "summary").text.endswith(
        "1 added, 1 removed, 1 price changes, 0 stock changes"
    )
    assert "Mango Gummies 100mg" in browser.find_element(By.ID, "added").text
    assert "Runtz 1g" in browser.find_element(By.ID, "removed").text
    assert "35.00" in browser.find_element(By.ID, "price_changes").text
    browser.get(dashboard.url + f"/stores/{ids['store']}/diff")
    assert browser.find_element(By.TAG_NAME, "h1").text == f"What changed: payload {older} → {newer}"
    browser.get(dashboard.url + f"/payloads/{ids['corrupt']}")
    assert "not gzip" in browser.find_element(By.ID, "fields").text


def test_the_proxies_page_shows_each_proxys_health_with_its_password_masked(
    browser: Any, dashboard: Dashboard, crawled: tuple[str, dict[str, Any]]
) -> None:
    browser.get(dashboard.url + "/")
    browser.find_element(By.LINK_TEXT, "Proxies").click()
    cells = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, f"#proxies tr[data-id='{crawled[1]['proxy']}'] td")]
    # id, platform, url, state, requests, failures, in a row, rested until, last success, last failure, last error
    assert cells[1:7] == ["dutchie", "http://***@10.0.0.5:3128", "rested", "0", "1", "1"]
    assert cells[10] == "connection refused"
    assert "s3cret" not in browser.page_source


def test_the_crawler_pages_are_json_too(dashboard: Dashboard, crawled: tuple[str, dict[str, Any]]) -> None:
    ids = crawled[1]
    older, newer = ids["payloads"]
    stores = http(dashboard.url + "/api/stores").json()
    assert [row["name"] for row in stores["stores"]] == ["Green Leaf"] and stores["total"] == 1
    listed = http(dashboard.url + f"/api/payloads?store={ids['store']}&status=applied").json()
    assert [row["id"] for row in listed["payloads"]] == [newer, older]
    diff = http(dashboard.url + f"/api/payloads/store/{ids['store']}/diff").json()
    assert (diff["from"]["id"], diff["to"]["id"]) == (older, newer)
    assert diff["diff"] == {"added": 1, "removed": 1, "price_changes": 1, "stock_changes": 0}
    refused = http(dashboard.url + f"/api/payloads/diff?from={older}&to={ids['corrupt']}")
    assert refused.status == 409 and "applied" in refused.json()["error"]
    assert http(dashboard.url + "/api/stores/999999").status == 404
    assert http(dashboard.url + "/api/payloads?status=lost").status == 400
    (proxy,) = http(dashboard.url + "/api/proxies?platform=dutchie").json()["proxies"]
    assert (proxy["url"], proxy["state"]) == ("http://***@10.0.0.5:3128", "rested")
    assert http(dashboard.url + "/api/proxies?platform=jane").json() == {"proxies": []}


def test_no_crawler_page_scrolls_sideways_at_1280_px(
    browser: Any, dashboard: Dashboard, crawled: tuple[str, dict[str, Any]]
) -> None:
    ids = crawled[1]
    older, newer = ids["payloads"]
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False,
    })
    try:
        for path in ("/stores", f"/stores/{ids['store']}", f"/stores/{ids['store']}/diff", "/payloads",
                     f"/payloads/{ids['corrupt']}", f"/payloads/diff?from={older}&to={newer}", "/proxies"):
            browser.get(dashboard.url + path)
            assert browser.find_elements(By.CSS_SELECTOR, "main h1"), path
            widths = browser.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            )
            assert widths[0] <= widths[1], (path, widths)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
