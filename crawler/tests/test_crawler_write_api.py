"""The crawler's part of the seeds' API on the real `pyworker dashboard`, over HTTP: a crawl of
every active store of a state (POST /api/tasks/enqueue-state, seed 001's
/api/job-queue/enqueue-state, behind the bearer token), a payload's stored body
(GET /api/payloads/ID/data) and a store's latest payload (GET /api/payloads/store/ID/latest).

Payloads are saved as the crawl saves them (storage.save_payload into the server's
TASKPOOL_STORAGE, then record_crawl_payload); the server is the core's test plumbing
(tests/dashboard_support.py), one for the module.
"""

from __future__ import annotations

import gzip
import json
import secrets
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dashboard_support import Answer, Dashboard, dashboard_server, http
from testkit import databases

from core_fixtures import COPY_PREFIX, database_url
from taskpool_crawler import storage

pytestmark = pytest.mark.xdist_group("crawler_write_api")

TOKEN = "crawler-write-api-" + secrets.token_hex(8)
STATE = "QZ"
MENU_08 = {"products": [{"id": "p1", "name": "Blue Dream 3.5g", "price": 35.00, "stock": 12}]}
# The newest, as the platform sent it: its spacing and the digits of its prices kept.
MENU_12 = (b'{"products": [{"id": "p1", "name": "Blue Dream 3.5g", "price": 33.50, "stock": 12},\n'
           b'  {"id": "p3", "name": "Mango Gummies", "price": 18.0, "stock": 20,'
           b' "image": "https://cdn:s3cret@img.example/p3.png"}]}')


def saved(conn: psycopg.Connection, root: Path, store_id: int, hour: int, body: bytes) -> int:
    """A payload of the store fetched at that hour, saved and recorded as the crawl does it."""
    fetched_at = datetime(2026, 3, 1, hour, tzinfo=timezone.utc)
    stored = storage.save_payload(body, store_id, fetched_at, store=storage.LocalStorage(root))
    return conn.execute(
        "SELECT record_crawl_payload(%s, %s, %s, %s, %s)",
        (store_id, fetched_at, stored.storage_path, stored.size_bytes, stored.sha256),
    ).fetchone()[0]


@pytest.fixture(scope="module")
def crawled(template_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("payload-storage")
    name = COPY_PREFIX + "crawler_write_api_" + secrets.token_hex(4)
    with databases.copy(database_url(), template_database, name) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            stores = [
                conn.execute(
                    "SELECT id FROM add_store(%s, platform => 'simulated', state_code => %s)", (store_name, state)
                ).fetchone()[0]
                for store_name, state in [("Green Leaf", STATE), ("Desert Bloom", STATE), ("Elsewhere", "QY"), ("Quiet", STATE)]
            ]
            crawled_store = stores[0]
            older = saved(conn, root, crawled_store, 8, json.dumps(MENU_08).encode())
            newer = saved(conn, root, crawled_store, 12, MENU_12)
            gone = saved(conn, root, stores[2], 9, b'{"products": []}')
            conn.execute("UPDATE dispensaries SET active = false WHERE id = %s", (stores[3],))
            path = conn.execute("SELECT storage_path FROM raw_crawl_payloads WHERE id = %s", (gone,)).fetchone()[0]
        (root / path).unlink()
        yield {"url": url, "root": root, "stores": stores, "older": older, "newer": newer, "gone": gone}


@pytest.fixture(scope="module")
def dashboard(crawled: dict[str, Any]) -> Iterator[Dashboard]:
    with dashboard_server(crawled["url"], TOKEN, env={"TASKPOOL_STORAGE": str(crawled["root"])}) as server:
        yield server


@pytest.fixture
def conn(crawled: dict[str, Any]) -> Iterator[psycopg.Connection]:
    with psycopg.connect(crawled["url"], autocommit=True) as connection:
        yield connection


def post(dashboard: Dashboard, path: str, body: Any, token: str | None = TOKEN) -> Answer:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return http(dashboard.url + path, method="POST", body=json.dumps(body), headers=headers)


def crawls_of(conn: psycopg.Connection, role: str) -> list[int]:
    rows = conn.execute(
        "SELECT dispensary_id FROM worker_tasks WHERE role = %s AND status = 'pending' ORDER BY dispensary_id", (role,)
    )
    return [store for (store,) in rows]


# Enqueue by state


def test_a_state_crawl_queues_one_task_per_active_store_of_the_state(
    dashboard: Dashboard, conn: psycopg.Connection, crawled: dict[str, Any]
) -> None:
    green_leaf, desert_bloom, _, _ = crawled["stores"]
    dry = post(dashboard, "/api/tasks/enqueue-state", {"role": "product_resync", "state": STATE, "dry_run": True})
    assert dry.status == 200 and dry.json() == {
        "role": "product_resync", "state": STATE, "dry_run": True, "made": 2, "already_active": 0,
    }
    assert crawls_of(conn, "product_resync") == []
    done = post(dashboard, "/api/tasks/enqueue-state", {"role": "product_resync", "state": STATE})
    assert done.status == 201 and (done.json()["made"], done.json()["already_active"]) == (2, 0), done.body
    assert crawls_of(conn, "product_resync") == [green_leaf, desert_bloom]
    # Again: each store has its crawl under way. The seed's path does the same.
    again = post(dashboard, "/api/job-queue/enqueue-state", {"role": "product_resync", "state": STATE})
    assert again.status == 200 and (again.json()["made"], again.json()["already_active"]) == (0, 2)
    assert crawls_of(conn, "product_resync") == [green_leaf, desert_bloom]


BAD_STATE_CRAWLS = [
    ({"role": "product_resync", "state": "qz"}, "state 'qz' is not a state code"),
    ({"role": "product_resync", "state": "Arizona"}, "state 'Arizona' is not a state code"),
    ({"role": "no_such_role", "state": STATE}, "unknown role 'no_such_role'"),
    ({"role": "store_discovery", "state": STATE}, "role store_discovery is not a crawl of a store's menu"),
    ({"role": "product_discovery"}, "state is required and must be a string"),
    ({"state": STATE}, "role is required and must be a string"),
    ({"role": "product_discovery", "state": 12}, "state is required and must be a string, not 12"),
    ({"role": "product_discovery", "state": STATE, "dry_run": "no"}, "dry_run must be true or false"),
    ({"role": "product_discovery", "state": STATE, "priority": 5}, "unknown field 'priority'"),
    (["product_discovery", STATE], "the body must be a JSON object"),
]


@pytest.mark.parametrize("body, said", BAD_STATE_CRAWLS, ids=[said for _, said in BAD_STATE_CRAWLS])
def test_a_bad_state_crawl_is_a_400_naming_the_field_and_queues_nothing(
    dashboard: Dashboard, conn: psycopg.Connection, body: Any, said: str
) -> None:
    before = conn.execute("SELECT count(*) FROM worker_tasks").fetchone()[0]
    answer = post(dashboard, "/api/tasks/enqueue-state", body)
    assert answer.status == 400 and said in answer.json()["error"], answer.body
    assert conn.execute("SELECT count(*) FROM worker_tasks").fetchone()[0] == before


def test_a_state_crawl_needs_the_token(dashboard: Dashboard, conn: psycopg.Connection) -> None:
    for token in (None, "wrong"):
        answer = post(dashboard, "/api/tasks/enqueue-state", {"role": "product_discovery", "state": STATE}, token=token)
        assert answer.status == 401, answer.body
    assert crawls_of(conn, "product_discovery") == []


# Payloads


def test_a_payloads_data_is_its_body_as_stored(dashboard: Dashboard, crawled: dict[str, Any]) -> None:
    older = http(dashboard.url + f"/api/payloads/{crawled['older']}/data")
    assert older.status == 200 and older.headers["content-type"] == "application/json"
    assert json.loads(older.body) == MENU_08
    newer = http(dashboard.url + f"/api/payloads/{crawled['newer']}/data")
    # Byte for byte, but for the credentials of a URL, masked as everywhere on the dashboard.
    assert newer.body.encode() == MENU_12.replace(b"cdn:s3cret@", b"cdn:***@")
    stored = next(crawled["root"].rglob(f"store_{crawled['stores'][0]}_*T12*.json.gz"))
    assert gzip.decompress(stored.read_bytes()) == MENU_12


def test_a_stores_latest_payload_is_its_newest_fetch_with_its_data(dashboard: Dashboard, crawled: dict[str, Any]) -> None:
    answer = http(dashboard.url + f"/api/payloads/store/{crawled['stores'][0]}/latest")
    assert answer.status == 200, answer.body
    document = answer.json()
    assert document["payload"]["id"] == crawled["newer"]
    assert document["payload"]["fetched_at"] == "2026-03-01T12:00:00+00:00"
    assert [product["price"] for product in document["data"]["products"]] == [33.50, 18.0]
    assert "33.50" in answer.body


@pytest.mark.parametrize("path, status, said", [
    ("/api/payloads/{missing}/data", 404, "payload {missing} does not exist"),
    ("/api/payloads/abc/data", 400, "payload_id must be a whole number, not 'abc'"),
    ("/api/payloads/{gone}/data", 404, "payload {gone} is recorded but its file is gone"),
    ("/api/payloads/{older}/data?gzip=1", 400, "unknown parameter 'gzip'"),
    ("/api/payloads/store/{missing}/latest", 404, "dispensary {missing} does not exist"),
    ("/api/payloads/store/{quiet}/latest", 404, "dispensary {quiet} has no payload yet"),
    ("/api/payloads/store/0/latest", 400, "store_id must be from 1 to 2147483647"),
], ids=["unknown payload", "not an id", "file gone", "a parameter", "unknown store", "never crawled", "store 0"])
def test_a_payload_that_cannot_be_shown_says_why(
    dashboard: Dashboard, crawled: dict[str, Any], path: str, status: int, said: str
) -> None:
    ids = {"missing": 2**31 - 1, "gone": crawled["gone"], "older": crawled["older"], "quiet": crawled["stores"][3]}
    answer = http(dashboard.url + path.format(**ids))
    assert answer.status == status and said.format(**ids) in answer.json()["error"], answer.body


def test_a_payload_file_changed_after_it_was_saved_is_refused(
    dashboard: Dashboard, conn: psycopg.Connection, crawled: dict[str, Any]
) -> None:
    store = crawled["stores"][1]
    changed = saved(conn, crawled["root"], store, 10, b'{"products": []}')
    path = conn.execute("SELECT storage_path FROM raw_crawl_payloads WHERE id = %s", (changed,)).fetchone()[0]
    (crawled["root"] / path).write_bytes(gzip.compress(b'{"products": [{"id": "forged"}]}'))
    for url in (f"/api/payloads/{changed}/data", f"/api/payloads/store/{store}/latest"):
        answer = http(dashboard.url + url)
        assert answer.status == 500 and "not the recorded" in answer.json()["error"], answer.body
