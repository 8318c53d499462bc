"""Proxy rotation through real proxies: tinyproxy instances on loopback (each with its own config,
port, log and pid file under the test's tmp dir), real crawler workers crawling the simulator
through them, one instance stopped mid-test by its PID; the client on its own, for what counts
as the proxy's failure and what as the platform's; and `pyworker proxies`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result
from test_crawler_e2e import (  # noqa: F401 - crawler and platform are fixtures
    PLATFORMS,
    add_stores,
    crawler,
    enqueue,
    platform,
    start,
    statuses,
    task_summary,
    wait_until_idle,
)
from worker_support import Workers, fetch_one, wait_for

from pyworker.admin import cli
from taskpool_crawler.client import HttpPlatformClient, PlatformError, ProxyUnavailable
from taskpool_crawler.db import CrawlerDatabase
from taskpool_crawler.proxies import DatabaseProxies
from taskpool_crawler.simulator import SimulatorServer
from taskpool_crawler.tinyproxy import Tinyproxy, start_tinyproxy


@pytest.fixture
def tinyproxies(tmp_path: Path) -> Iterator[list[Tinyproxy]]:
    """Three tinyproxy instances on loopback; the second asks for Basic credentials."""
    started: list[Tinyproxy] = []
    try:
        for name, credentials in (("a", {}), ("b", {"user": "crawler", "password": "s3cret-b"}), ("c", {})):
            started.append(start_tinyproxy(tmp_path / f"tinyproxy-{name}", name, **credentials))
        yield started
    finally:
        for proxy in started:
            proxy.stop()


def add_proxies(conn: psycopg.Connection, proxies: list[Tinyproxy], **rest: str) -> dict[str, list[int]]:
    """Register each proxy for every platform; the proxy ids by proxy name."""
    ids: dict[str, list[int]] = {}
    for proxy in proxies:
        for name in PLATFORMS:
            (proxy_id,) = conn.execute(
                "SELECT id FROM add_proxy(%s, %s, rest_base := %s, rest_cap := %s)",
                (name, proxy.url, rest.get("rest_base", "10 minutes"), rest.get("rest_cap", "1 hour")),
            ).fetchone()
            ids.setdefault(proxy.name, []).append(proxy_id)
    return ids


def proxy_rows(conn: psycopg.Connection) -> dict[int, dict]:
    cursor = conn.execute("SELECT * FROM v_crawler_proxies ORDER BY id")
    names = [column.name for column in cursor.description]
    return {row[0]: dict(zip(names, row, strict=True)) for row in cursor.fetchall()}


def totals(rows: dict[int, dict], ids: list[int], column: str) -> int:
    return sum(rows[i][column] for i in ids)


def platform_requests(conn: psycopg.Connection) -> int:
    """The turns the platforms' rate limits gave out (platform_governance.requests_total)."""
    return fetch_one(conn, "SELECT sum(requests_total)::bigint FROM platform_governance")[0]


def test_crawls_spread_over_the_proxies_and_lose_no_task_when_one_is_stopped_mid_crawl(
    crawler: psycopg.Connection,
    platform: SimulatorServer,
    tinyproxies: list[Tinyproxy],
    workers: Workers,
    worker_login_url: str,
) -> None:
    ids = add_proxies(crawler, tinyproxies)
    b = tinyproxies[1]
    # Workers logged in with taskpool_worker's grants only: take_proxy and report_proxy_result
    # are all they need of the proxies.
    start(
        workers,
        {"store_discovery": 1, "product_discovery": 3, "product_resync": 3},
        database_url=worker_login_url,
    )

    # Discovery and the first crawls, every proxy up.
    enqueue(crawler, [{"role": "store_discovery"}])
    wait_until_idle(crawler, workers, timeout=60, roles=("store_discovery", "product_discovery"))
    assert set(statuses(crawler, "product_discovery")) == {"completed"}, task_summary(crawler)
    rows = proxy_rows(crawler)
    before = {name: totals(rows, ids[name], "requests_total") for name in ids}
    crawls = sum(statuses(crawler, "product_discovery").values())
    # Round robin: each proxy carried about a third of the requests, and its own log says so.
    assert sum(before.values()) == platform_requests(crawler)
    for proxy in tinyproxies:
        assert before[proxy.name] >= crawls // 6, before
        assert proxy.requests() == before[proxy.name], proxy.name
    assert totals(rows, ids["b"], "failures_total") == 0, "b's credentials should be accepted"

    # b goes away mid-test: the resync round still crawls every store, each at its first attempt.
    b.stop()
    stores = [row[0] for row in crawler.execute("SELECT id FROM dispensaries WHERE active ORDER BY id")]
    resyncs = enqueue(crawler, [{"role": "product_resync", "dispensary_id": i} for i in stores])
    wait_until_idle(crawler, workers, timeout=60, roles=("product_resync",))
    assert statuses(crawler, "product_resync") == {"completed": len(resyncs)}, task_summary(crawler)
    assert fetch_one(
        crawler, "SELECT max(retry_count) FROM worker_tasks WHERE id = ANY(%s)", (resyncs,)
    )[0] == 0, "a dead proxy should cost no attempt: the request goes through another"

    rows = proxy_rows(crawler)
    for proxy_id in ids["b"]:
        row = rows[proxy_id]
        assert row["state"] == "rested", row
        assert row["failures_total"] >= 1 and row["consecutive_failures"] >= 1, row
        assert "Connection refused" in row["last_error"], row
        assert "s3cret" not in row["url"] and row["url"].startswith("http://***@"), row
    # Both platforms took b's turn at least once and failed over; the others carried the round.
    for name in ("a", "c"):
        after = totals(rows, ids[name], "requests_total")
        assert after - before[name] >= len(resyncs) // 4, (name, before, after)
        assert totals(rows, ids[name], "failures_total") == 0
        assert next(p for p in tinyproxies if p.name == name).requests() == after
    # One turn of the rate limit per request, however many proxies it tried; and the circuit
    # breaker never counted the proxy's failures as the platform's.
    tried = sum(row["requests_total"] for row in rows.values())
    failed = sum(row["failures_total"] for row in rows.values())
    assert tried - failed == platform_requests(crawler)
    assert fetch_one(crawler, "SELECT count(*) FROM platform_events")[0] == 0
    assert fetch_one(crawler, "SELECT max(consecutive_failures) FROM platform_governance")[0] == 0


def test_with_every_proxy_rested_the_attempt_fails_to_be_retried_and_disabling_them_goes_direct(
    crawler: psycopg.Connection,
    platform: SimulatorServer,
    tinyproxies: list[Tinyproxy],
    workers: Workers,
    db_url: str,
) -> None:
    stores = add_stores(crawler, platform.simulator, "jane")
    dead = tinyproxies[0]
    dead.stop()
    (proxy_id,) = crawler.execute(
        "SELECT id FROM add_proxy('jane', %s, rest_base := '1 hour', rest_cap := '1 hour')", (dead.url,)
    ).fetchone()
    store_id = next(iter(stores.values()))
    (task_id,) = enqueue(crawler, [{"role": "product_resync", "dispensary_id": store_id}])
    start(workers, {"product_resync": 1})

    wait_for(
        lambda: fetch_one(crawler, "SELECT count(*) FROM worker_task_attempts WHERE task_id = %s", (task_id,))[0] >= 1
        and fetch_one(crawler, "SELECT retry_count FROM worker_tasks WHERE id = %s", (task_id,))[0] >= 1,
        30,
        "the first attempt to fail",
    )
    (error,) = fetch_one(
        crawler, "SELECT error_message FROM worker_task_attempts WHERE task_id = %s ORDER BY attempt LIMIT 1", (task_id,)
    )
    assert f"proxy {proxy_id}" in error and "Connection refused" in error, error
    assert "every proxy of jane is rested" in error, error
    assert fetch_one(crawler, "SELECT consecutive_failures FROM platform_governance WHERE platform = 'jane'")[0] == 0

    # The operator takes the dead proxy out: the retry goes direct and completes.
    assert pyworker(db_url, "proxies", "disable", str(proxy_id)).exit_code == 0
    wait_until_idle(crawler, workers, timeout=30, roles=("product_resync",))
    assert statuses(crawler, "product_resync") == {"completed": 1}, task_summary(crawler)
    assert proxy_rows(crawler)[proxy_id]["requests_total"] == 1


def test_what_the_platform_answers_through_a_proxy_is_the_platforms_not_the_proxys(
    crawler: psycopg.Connection, platform: SimulatorServer, tinyproxies: list[Tinyproxy], db_url: str
) -> None:
    (proxy_id,) = crawler.execute(
        "SELECT id FROM add_proxy('dutchie', %s)", (tinyproxies[1].url,)
    ).fetchone()
    db = CrawlerDatabase(db_url)
    try:
        client = HttpPlatformClient(platform.url, "dutchie", timeout=5, proxies=DatabaseProxies(lambda: db))
        with pytest.raises(PlatformError) as unknown:
            client.fetch_menu("no-such-store")
        platform.set_faults("dutchie", down=True)
        with pytest.raises(PlatformError) as down:
            client.list_stores("AZ")
        platform.set_faults("dutchie", down=False)
        stores = client.list_stores("AZ")
    finally:
        db.close()
    assert (unknown.value.status, unknown.value.retryable) == (404, False)
    assert (down.value.status, down.value.retryable) == (500, True)
    assert stores and all(s["state"] == "AZ" for s in stores)
    row = proxy_rows(crawler)[proxy_id]
    assert (row["requests_total"], row["failures_total"], row["state"]) == (3, 0, "ready"), row
    assert row["last_success_at"] is not None
    assert tinyproxies[1].requests() == 3


def test_a_timeout_through_a_proxy_is_the_proxys_failure_and_rests_it(
    crawler: psycopg.Connection, platform: SimulatorServer, tinyproxies: list[Tinyproxy], db_url: str
) -> None:
    (proxy_id,) = crawler.execute(
        "SELECT id FROM add_proxy('jane', %s)", (tinyproxies[0].url,)
    ).fetchone()
    platform.set_faults("jane", error_rate=1.0, error_kinds=["timeout"])
    db = CrawlerDatabase(db_url)
    try:
        client = HttpPlatformClient(platform.url, "jane", timeout=0.5, proxies=DatabaseProxies(lambda: db))
        with pytest.raises(ProxyUnavailable) as unavailable:
            client.list_stores("CA")
    finally:
        db.close()
    # The only proxy failed and is rested: the request is not sent direct, it fails, retryably.
    assert unavailable.value.retryable
    assert "every proxy of jane is rested" in unavailable.value.message
    assert f"proxy {proxy_id} (" in unavailable.value.message
    assert "no answer within 0.5 s" in unavailable.value.message
    row = proxy_rows(crawler)[proxy_id]
    assert (row["state"], row["requests_total"], row["failures_total"]) == ("rested", 1, 1), row
    assert row["last_error"] == "no answer within 0.5 s"


def pyworker(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(cli.main, ["--database-url", db_url, *args])


def test_the_proxies_command_adds_lists_disables_enables_and_removes_with_passwords_masked(
    conn: psycopg.Connection, db_url: str
) -> None:
    conn.execute("INSERT INTO platform_governance (platform) VALUES ('dutchie')")
    added = pyworker(db_url, "proxies", "add", "dutchie", "http://crawler:hunter2@10.0.0.5:3128", "--rest-base", "5 seconds", "--json")
    assert added.exit_code == 0, added.output
    row = json.loads(added.stdout)
    assert row["url"] == "http://***@10.0.0.5:3128" and row["state"] == "ready"
    assert (row["rest_base"], row["rest_cap"]) == (5.0, 1800.0)  # seconds, the default cap
    proxy_id = row["id"]

    listed = pyworker(db_url, "proxies", "list")
    assert listed.exit_code == 0, listed.output
    assert "http://***@10.0.0.5:3128" in listed.stdout and "hunter2" not in listed.stdout
    assert "ready" in listed.stdout

    disabled = pyworker(db_url, "proxies", "disable", str(proxy_id), "--json")
    assert json.loads(disabled.stdout)["state"] == "disabled"
    enabled = pyworker(db_url, "proxies", "enable", str(proxy_id), "--json")
    assert json.loads(enabled.stdout)["state"] == "ready"

    duplicate = pyworker(db_url, "proxies", "add", "dutchie", "http://crawler:hunter2@10.0.0.5:3128")
    assert duplicate.exit_code == 1, duplicate.output
    assert f"is proxy {proxy_id} of dutchie already" in duplicate.stderr and "hunter2" not in duplicate.stderr
    bad = pyworker(db_url, "proxies", "add", "dutchie", "socks5://10.0.0.5:1080")
    assert bad.exit_code == 2, bad.output
    assert "url must start with http:// or https://" in bad.stderr
    unknown = pyworker(db_url, "proxies", "add", "nowhere", "http://10.0.0.5:3128")
    assert unknown.exit_code == 2 and "unknown platform 'nowhere'" in unknown.stderr

    removed = pyworker(db_url, "proxies", "remove", str(proxy_id))
    assert removed.exit_code == 0, removed.output
    assert pyworker(db_url, "proxies", "remove", str(proxy_id)).exit_code == 2
    assert json.loads(pyworker(db_url, "proxies", "list", "--json").stdout) == []
