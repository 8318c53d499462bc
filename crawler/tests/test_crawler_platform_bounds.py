"""A platform that answers a menu of any size, or drips its bytes, against real crawler workers
running several tasks at once: the oversized menu fails its task for good once reading passes
the bound (far short of the whole body), the dripping one fails its attempt at the request's
deadline (to be retried), and the other stores' crawls complete beside them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg
import pytest
from test_crawler_e2e import HANDLERS, crawler, platform, set_governance, statuses, task_summary  # noqa: F401
from test_crawler_proxies import proxy_rows, tinyproxies  # noqa: F401 - tinyproxies is a fixture
from worker_support import Workers, fetch_one, wait_for

from taskpool_crawler.client import HttpPlatformClient, PlatformError
from taskpool_crawler.db import CrawlerDatabase
from taskpool_crawler.proxies import DatabaseProxies
from taskpool_crawler.tinyproxy import Tinyproxy

MIB = 1024 * 1024
MENU = json.dumps({"products": [{"id": "p1", "name": "Blue Dream 3.5g", "price": 35.0, "stock": 12}]}).encode()


class HostilePlatform:
    """Menus by platform store id: 'huge' streams 256 MiB without a Content-Length, 'drip' sends
    a byte every 0.2 s, any other a small valid menu. Counts the bytes of 'huge' sent."""

    def __init__(self) -> None:
        self.huge_sent = 0
        self.stop = threading.Event()


@pytest.fixture
def hostile() -> Iterator[tuple[str, HostilePlatform]]:
    state = HostilePlatform()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            store = self.path.split("/")[-2]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if store not in ("huge", "drip"):
                self.send_header("Content-Length", str(len(MENU)))
                self.end_headers()
                self.wfile.write(MENU)
                return
            self.end_headers()
            chunk = b" " * (64 * 1024 if store == "huge" else 1)
            try:
                for _ in range(256 * MIB // len(chunk)):
                    if state.stop.is_set():
                        return
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    if store == "huge":
                        state.huge_sent += len(chunk)
                    elif state.stop.wait(0.2):
                        return
            except OSError:
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()


def test_an_oversized_or_dripping_menu_costs_its_own_task_and_the_others_complete(
    crawler: psycopg.Connection,
    hostile: tuple[str, HostilePlatform],
    workers: Workers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, state = hostile
    monkeypatch.setenv("TASKPOOL_PLATFORM_URL", url)
    monkeypatch.setenv("TASKPOOL_PLATFORM_TIMEOUT", "2")
    monkeypatch.setenv("TASKPOOL_PLATFORM_MAX_MENU_BYTES", str(MIB))
    set_governance(crawler, "hostile", requests_per_minute=60000)
    stores = [
        {"platform_store_id": name, "name": f"Hostile {name}", "state": "AZ", "city": "Phoenix",
         "menu_url": f"https://hostile.example/{name}"}
        for name in ("huge", "drip", "good-1", "good-2")
    ]
    crawler.execute("SELECT upsert_discovered_stores('hostile', %s::jsonb)", (json.dumps(stores),))
    ids = dict(crawler.execute("SELECT platform_dispensary_id, id FROM dispensaries WHERE platform = 'hostile'").fetchall())
    tasks = {
        name: crawler.execute("SELECT id FROM enqueue_task('product_resync', dispensary_id := %s)", (store_id,)).fetchone()[0]
        for name, store_id in ids.items()
    }
    workers.start("product_resync", "bounds-1", handlers=HANDLERS, concurrency=4)

    def task(name: str) -> tuple[str, int, str | None]:
        return fetch_one(crawler, "SELECT status, retry_count, error_message FROM worker_tasks WHERE id = %s", (tasks[name],))

    wait_for(
        lambda: task("huge")[0] == "failed" and task("drip")[1] >= 1
        and task("good-1")[0] == task("good-2")[0] == "completed",
        60,
        "the huge menu to fail, the dripping one to be retried and the others to complete",
        also=lambda: f"{task_summary(crawler)}\n{workers.describe()}",
    )
    assert f"over the {MIB} bytes allowed" in task("huge")[2]
    assert "/platforms/hostile/stores/huge/menu" in task("huge")[2]
    # Reading stopped near the bound: what was sent is the bound plus the sockets' buffers.
    assert state.huge_sent < 1 * MIB + 32 * MIB
    (drip_error,) = fetch_one(
        crawler, "SELECT error_message FROM worker_task_attempts WHERE task_id = %s ORDER BY attempt LIMIT 1", (tasks["drip"],)
    )
    assert "no answer within 2 s" in drip_error, drip_error
    assert fetch_one(crawler, "SELECT count(*) FROM raw_crawl_payloads WHERE dispensary_id = ANY(%s)",
                     ([ids["good-1"], ids["good-2"]],))[0] == 2
    assert statuses(crawler, "product_resync").get("completed") == 2


def test_an_oversized_menu_through_a_proxy_is_the_platforms_answer_not_the_proxys_failure(
    crawler: psycopg.Connection, hostile: tuple[str, HostilePlatform], tinyproxies: list[Tinyproxy], db_url: str
) -> None:
    url, state = hostile
    set_governance(crawler, "hostile")
    (proxy_id,) = crawler.execute("SELECT id FROM add_proxy('hostile', %s)", (tinyproxies[0].url,)).fetchone()
    db = CrawlerDatabase(db_url)
    try:
        client = HttpPlatformClient(url, "hostile", timeout=10, proxies=DatabaseProxies(lambda: db), max_menu_bytes=MIB)
        with pytest.raises(PlatformError) as refused:
            client.fetch_menu("huge")
    finally:
        db.close()
    assert not refused.value.retryable
    assert f"over the {MIB} bytes allowed" in refused.value.message
    assert state.huge_sent < 1 * MIB + 64 * MIB
    row = proxy_rows(crawler)[proxy_id]
    assert (row["state"], row["requests_total"], row["failures_total"]) == ("ready", 1, 0), row
