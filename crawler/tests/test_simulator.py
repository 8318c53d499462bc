"""The simulated menu platform: its model, its HTTP API, its faults and `pyworker simulator`.

No database: the model is pure Python, the server runs on loopback in a background thread, and
the CLI test runs `python -m pyworker simulator` as a subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from pyworker.admin.cli import main
from taskpool_crawler.simulator import Simulator, serve
from taskpool_crawler.simulator.model import encode

REPO_ROOT = Path(__file__).resolve().parent.parent


def fetch(
    url: str, body: dict[str, Any] | None = None, timeout: float = 5
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of a GET, or of a POST of `body` as JSON."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read()


def get_json(url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    status, _, raw = fetch(url, body)
    return status, json.loads(raw)


@pytest.fixture
def server() -> Iterator[Any]:
    with serve(Simulator(seed=42)) as running:
        yield running


def all_menus(simulator: Simulator, clock_hours: float) -> dict[str, dict[str, Any]]:
    """Every store's products at a clock, by store id and product id."""
    return {
        store.platform_store_id: {
            product["id"]: product for product in simulator.menu_at(store, clock_hours)["products"]
        }
        for store in simulator.all_stores()
    }


# The model


def test_same_seed_same_platform_other_seed_another() -> None:
    first, second, other = Simulator(seed=7), Simulator(seed=7), Simulator(seed=8)
    assert first.all_stores() == second.all_stores()
    store = first.all_stores()[5]
    for simulator in (first, second):
        simulator.advance(8)
    assert encode(first.menu("jane", store.platform_store_id)) == encode(
        second.menu("jane", store.platform_store_id)
    )
    # The same menu from a simulator that jumped straight to the clock, and from the cache.
    assert first.menu_at(store, 8) == Simulator(seed=7).menu_at(store, 8)
    assert first.menu_at(store, 0) == second.menu_at(store, 0)

    assert {s.platform_store_id for s in other.all_stores()}.isdisjoint(
        s.platform_store_id for s in first.all_stores()
    )
    other_store = other.all_stores()[5]
    assert [p["id"] for p in other.menu_at(other_store, 0)["products"]] != [
        p["id"] for p in first.menu_at(store, 0)["products"]
    ]


def test_stores_spread_over_platforms_and_states() -> None:
    simulator = Simulator(seed=42)
    stores = simulator.all_stores()
    assert len(stores) == 300
    for platform in ("dutchie", "jane"):
        mine = [s for s in stores if s.platform == platform]
        assert len(mine) == 150
        assert {s.state for s in mine} == {"AZ", "CA", "CO", "MI"}
        assert len({s.platform_store_id for s in mine}) == 150
        assert len({s.menu_url for s in mine}) == 150
        assert all(s.menu_url == f"https://menus.example/{platform}/{s.slug}" for s in mine)
    assert all(len(s.platform_store_id) == 24 for s in stores if s.platform == "dutchie")
    assert all(s.platform_store_id.isdigit() for s in stores if s.platform == "jane")
    late = [s for s in stores if s.opens_at_hours > 0]
    assert len(late) == 15  # 5%
    assert all(4 <= s.opens_at_hours <= 48 for s in late)

    custom = Simulator(seed=1, stores=12, states="nv, or", platforms=["Leafly"])
    assert custom.platforms == ("leafly",) and custom.states == ("NV", "OR")
    assert {s.state for s in custom.all_stores()} == {"NV", "OR"}
    for bad in ({"states": "Arizona"}, {"platforms": ""}, {"stores": -1}):
        with pytest.raises(ValueError):
            Simulator(**bad)


def test_menus_have_20_to_60_products_of_the_contract_shape() -> None:
    simulator = Simulator(seed=42, stores=40)
    for store in simulator.all_stores():
        for clock in (0, 40):
            products = simulator.menu_at(store, clock)["products"]
            assert 20 <= len(products) <= 60
            assert len({p["id"] for p in products}) == len(products)
            for product in products:
                assert set(product) == {
                    "id", "name", "brand", "category", "size", "price", "stock", "image_url"
                }
                assert product["size"] is None or product["size"] in product["name"]
                assert isinstance(product["price"], float) and product["price"] >= 1
                assert round(product["price"], 2) == product["price"]
                assert isinstance(product["stock"], int) and product["stock"] >= 0


def test_menus_drift_at_each_4_hour_step() -> None:
    simulator = Simulator(seed=42)
    before = all_menus(simulator, 0)
    # Within a step nothing moves.
    assert all_menus(simulator, 3.9) == before
    after = all_menus(simulator, 4)
    kept = removed = added = price_changes = stock_changes = 0
    for store_id, products in before.items():
        later = after[store_id]
        removed += len(products.keys() - later.keys())
        added += len(later.keys() - products.keys())
        for product_id in products.keys() & later.keys():
            kept += 1
            old, new = products[product_id], later[product_id]
            assert {k: old[k] for k in ("name", "brand", "category")} == {
                k: new[k] for k in ("name", "brand", "category")
            }
            price_changes += old["price"] != new["price"]
            stock_changes += old["stock"] != new["stock"]
            if old["price"] != new["price"]:
                assert 0.015 < abs(new["price"] / old["price"] - 1) < 0.085
    total = kept + removed
    assert 0.03 < removed / total < 0.07  # ~5% disappear
    assert 0.15 < price_changes / kept < 0.25  # ~20% change price
    assert 0.25 < stock_changes / kept < 0.35  # ~30% change stock
    assert added > 0
    # Gone is gone: a product removed at step 1 is on no later menu.
    much_later = all_menus(simulator, 40)
    for store_id, products in before.items():
        gone = products.keys() - after[store_id].keys()
        assert not gone & much_later[store_id].keys()


def test_new_stores_open_as_the_clock_advances() -> None:
    simulator = Simulator(seed=42)
    late = min((s for s in simulator.all_stores() if s.opens_at_hours), key=lambda s: s.index)
    open_now = {s.platform_store_id for s in simulator.stores(late.platform)}
    assert late.platform_store_id not in open_now
    simulator.advance(late.opens_at_hours)
    assert late.platform_store_id in {s.platform_store_id for s in simulator.stores(late.platform)}
    simulator.advance(48)
    assert len(simulator.stores("dutchie")) + len(simulator.stores("jane")) == 300


# The HTTP API


def test_health_and_stores(server: Any) -> None:
    assert get_json(f"{server.url}/health") == (200, {"ok": True, "clock_hours": 0.0})
    status, body = get_json(f"{server.url}/platforms/dutchie/stores?state=az")
    assert status == 200
    assert body["platform"] == "dutchie" and body["state"] == "AZ"
    assert body["stores"] and all(s["state"] == "AZ" for s in body["stores"])
    assert set(body["stores"][0]) == {"platform_store_id", "name", "state", "city", "menu_url"}
    status, everything = get_json(f"{server.url}/platforms/dutchie/stores")
    assert status == 200 and everything["state"] is None
    assert {s["state"] for s in everything["stores"]} == {"AZ", "CA", "CO", "MI"}
    assert len(everything["stores"]) == len(server.simulator.stores("dutchie"))
    assert get_json(f"{server.url}/platforms/dutchie/stores?state=ZZ")[1]["stores"] == []
    status, error = get_json(f"{server.url}/platforms/weedmaps/stores")
    assert status == 404 and "weedmaps" in error["error"]


def test_menu_and_resolve(server: Any) -> None:
    store = server.simulator.stores("jane")[0]
    base = f"{server.url}/platforms/jane"
    status, _, raw = fetch(f"{base}/stores/{store.platform_store_id}/menu")
    assert status == 200
    menu = json.loads(raw)
    assert menu["platform"] == "jane" and menu["platform_store_id"] == store.platform_store_id
    assert menu["clock_hours"] == 0.0 and 20 <= len(menu["products"]) <= 60
    expected = Simulator(seed=42).menu("jane", store.platform_store_id)
    for product in expected["products"]:
        if product["image_url"] is not None:
            product["image_url"] = server.url + product["image_url"]
    assert raw == encode(expected)

    assert get_json(f"{base}/resolve?menu_url={quote(store.menu_url, safe='')}") == (
        200, {"platform_store_id": store.platform_store_id}
    )
    assert get_json(f"{base}/resolve?menu_url={quote(store.menu_url + '/', safe='')}")[0] == 200
    for missing in (
        f"{base}/resolve?menu_url={quote('https://menus.example/jane/nowhere', safe='')}",
        # Another platform's URL is not this platform's store.
        f"{server.url}/platforms/dutchie/resolve?menu_url={quote(store.menu_url, safe='')}",
        f"{base}/stores/no-such-store/menu",
        f"{base}/stores/{store.platform_store_id}/nothing",
        f"{server.url}/platforms/nope/stores/{store.platform_store_id}/menu",
        f"{server.url}/nothing",
    ):
        status, body = get_json(missing)
        assert status == 404 and body["status"] == 404, missing
    assert get_json(f"{base}/resolve")[0] == 400

    late = next(s for s in server.simulator.all_stores() if s.opens_at_hours)
    late_menu = f"{server.url}/platforms/{late.platform}/stores/{late.platform_store_id}/menu"
    late_resolve = (
        f"{server.url}/platforms/{late.platform}/resolve?menu_url={quote(late.menu_url, safe='')}"
    )
    assert get_json(late_menu)[0] == 404 and get_json(late_resolve)[0] == 404
    assert get_json(f"{server.url}/admin/clock", {"advance_hours": 48}) == (
        200, {"clock_hours": 48.0}
    )
    assert get_json(late_menu)[0] == 200 and get_json(late_resolve)[0] == 200


def test_menu_bytes_depend_on_seed_and_clock_only() -> None:
    """And on the server's own URL, which the image URLs start with."""
    with serve(Simulator(seed=3)) as one, serve(Simulator(seed=3)) as two:
        store = one.simulator.stores("dutchie")[2]
        path = f"/platforms/dutchie/stores/{store.platform_store_id}/menu"

        def menu(server: Any) -> bytes:
            return fetch(server.url + path)[2].replace(server.url.encode(), b"SERVER")

        first = menu(one)
        assert b'"image_url": "SERVER/platforms/dutchie/images/' in first
        assert menu(two) == first
        one.advance(4)
        two.advance(2)
        two.advance(2)
        moved = menu(one)
        assert moved != first and menu(two) == moved


def test_admin_clock_faults_and_state(server: Any) -> None:
    assert get_json(f"{server.url}/admin/clock", {"advance_hours": 4}) == (
        200, {"clock_hours": 4.0}
    )
    assert server.advance(0.5) == 4.5
    assert get_json(f"{server.url}/health")[1]["clock_hours"] == 4.5
    for bad in ({"advance_hours": -1}, {"advance_hours": "4"}, {"advance_hours": 1e12}, {},
                {"hours": 4}):
        assert get_json(f"{server.url}/admin/clock", bad)[0] == 400
    assert get_json(f"{server.url}/admin/clock")[0] == 405

    status, faults = get_json(f"{server.url}/admin/faults", {"platform": "jane", "latency_ms": 5})
    assert status == 200
    assert faults == {
        "platform": "jane", "latency_ms": 5, "error_rate": 0.0,
        "error_kinds": ["500", "429", "timeout"], "corrupt_rate": 0.0, "down": False,
    }
    for bad in (
        {"platform": "jane", "error_rate": 2},
        {"platform": "jane", "error_kinds": ["418"]},
        {"platform": "jane", "error_kinds": []},
        {"platform": "jane", "down": "yes"},
        {"platform": "jane", "latency_ms": -1},
        {"platform": "jane", "colour": "red"},
        {"latency_ms": 5},
    ):
        assert get_json(f"{server.url}/admin/faults", bad)[0] == 400, bad
    assert get_json(f"{server.url}/admin/faults", {"platform": "nope", "down": True})[0] == 404
    assert server.faults("jane")["latency_ms"] == 5  # the refused changes changed nothing

    store = server.simulator.stores("dutchie")[0]
    fetch(f"{server.url}/platforms/dutchie/stores")
    fetch(f"{server.url}/platforms/dutchie/stores/{store.platform_store_id}/menu")
    fetch(f"{server.url}/platforms/dutchie/stores/missing/menu")
    status, state = get_json(f"{server.url}/admin/state")
    assert status == 200
    assert state["clock_hours"] == 4.5 and state["clock_step"] == 1
    assert state["platforms"] == ["dutchie", "jane"]
    assert state["states"] == ["AZ", "CA", "CO", "MI"]
    assert state["stores"]["dutchie"]["total"] == 150
    assert state["stores"]["jane"]["by_state"]["AZ"]["total"] == 38
    assert state["faults"]["jane"]["latency_ms"] == 5
    assert state["requests"]["dutchie"] == {
        "total": 3, "ok": 2, "not_found": 1, "bad_request": 0, "error_500": 0,
        "error_429": 0, "timeout": 0, "corrupt": 0, "down": 0,
    }
    assert state["requests"]["jane"]["total"] == 0


# Faults


def test_errors_500_and_429(server: Any) -> None:
    stores_url = f"{server.url}/platforms/dutchie/stores"
    server.set_faults("dutchie", error_rate=1.0, error_kinds=["500"])
    assert [fetch(stores_url)[0] for _ in range(5)] == [500] * 5
    # Faults are per platform, and never touch /health or /admin.
    assert fetch(f"{server.url}/platforms/jane/stores")[0] == 200
    assert fetch(f"{server.url}/health")[0] == 200
    assert fetch(f"{server.url}/admin/state")[0] == 200

    server.set_faults("dutchie", error_kinds=["429"])
    status, headers, body = fetch(stores_url)
    assert status == 429 and headers["Retry-After"] == "1"
    assert json.loads(body)["status"] == 429

    server.set_faults("dutchie", error_rate=0.0)
    assert fetch(stores_url)[0] == 200
    requests = server.state()["requests"]["dutchie"]
    assert (requests["error_500"], requests["error_429"], requests["ok"]) == (5, 1, 1)


def test_which_requests_fail_is_reproducible() -> None:
    def statuses(seed: int) -> list[int]:
        with serve(Simulator(seed=seed, stores=20)) as running:
            running.set_faults("jane", error_rate=0.5, error_kinds=["500", "429"])
            return [fetch(f"{running.url}/platforms/jane/stores")[0] for _ in range(30)]

    first = statuses(5)
    assert first == statuses(5)
    assert {200, 500, 429} == set(first)


def test_corrupt_bodies_are_not_json(server: Any) -> None:
    server.set_faults("jane", corrupt_rate=1.0)
    store = server.simulator.stores("jane")[0]
    for url in (
        f"{server.url}/platforms/jane/stores",
        f"{server.url}/platforms/jane/stores/{store.platform_store_id}/menu",
    ):
        for _ in range(4):
            status, _, body = fetch(url)
            assert status == 200
            with pytest.raises(ValueError):
                json.loads(body)
    assert server.state()["requests"]["jane"]["corrupt"] == 8


def test_latency(server: Any) -> None:
    server.set_faults("dutchie", latency_ms=200)
    started = time.monotonic()
    assert fetch(f"{server.url}/platforms/dutchie/stores?state=CO")[0] == 200
    assert time.monotonic() - started >= 0.2
    started = time.monotonic()
    assert fetch(f"{server.url}/health")[0] == 200
    assert time.monotonic() - started < 0.2


def test_down(server: Any) -> None:
    server.set_faults("jane", down=True)
    store = server.simulator.stores("jane")[0]
    for path in ("stores", f"stores/{store.platform_store_id}/menu", "stores/nope/menu"):
        status, body = get_json(f"{server.url}/platforms/jane/{path}")
        assert status == 500 and "down" in body["error"]
    assert fetch(f"{server.url}/platforms/dutchie/stores")[0] == 200
    server.set_faults("jane", down=False)
    assert fetch(f"{server.url}/platforms/jane/stores")[0] == 200
    assert server.state()["requests"]["jane"]["down"] == 3


def test_timeouts_and_a_prompt_stop() -> None:
    running = serve(Simulator(seed=42, stores=10))
    try:
        running.set_faults("dutchie", error_rate=1.0, error_kinds=["timeout"])
        with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
            fetch(f"{running.url}/platforms/dutchie/stores", timeout=0.3)
        # A second client is still waiting for its answer when the server stops.
        client = subprocess.Popen(
            [sys.executable, "-c",
             "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=20)",
             f"{running.url}/platforms/dutchie/stores"],
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5
        while running.state()["requests"]["dutchie"]["timeout"] < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        started = time.monotonic()
        running.stop()
    assert time.monotonic() - started < 2
    assert client.wait(timeout=5) != 0  # its connection closed without an answer
    running.stop()  # again: nothing to do


def test_stop_closes_the_port() -> None:
    with serve(Simulator(seed=1, stores=4)) as running:
        port = running.port
        assert fetch(f"{running.url}/health")[0] == 200
    with pytest.raises(urllib.error.URLError):
        fetch(f"http://127.0.0.1:{port}/health", timeout=1)


# The command


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_cli_serves_until_a_stop_signal(tmp_path: Path, stop_signal: signal.Signals) -> None:
    port_file = tmp_path / "port"
    process = subprocess.Popen(
        [sys.executable, "-m", "pyworker", "simulator", "--port", "0", "--port-file",
         str(port_file), "--stores", "40", "--seed", "9", "--latency-ms", "1"],
        cwd=REPO_ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"},
    )
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "no port file"
            time.sleep(0.05)
        port = int(port_file.read_text())
        assert get_json(f"http://127.0.0.1:{port}/health") == (
            200, {"ok": True, "clock_hours": 0.0}
        )
        status, state = get_json(f"http://127.0.0.1:{port}/admin/state")
        assert state["seed"] == 9 and state["faults"]["jane"]["latency_ms"] == 1
        process.send_signal(stop_signal)
        # A bound against a hang, not a speed figure: under load a clean exit can take seconds.
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None
    assert f"Simulator listening on http://127.0.0.1:{port}" in process.stderr.read()
    assert not port_file.exists()


def test_cli_refuses_bad_options() -> None:
    for args in (["--states", "Arizona"], ["--platforms", ","], ["--error-rate", "2"]):
        result = CliRunner().invoke(main, ["simulator", "--port", "0", *args])
        assert result.exit_code == 2, (args, result.output)


def test_products_share_images_that_are_valid_pngs(server: Any) -> None:
    simulator = server.simulator
    urls = [
        p["image_url"]
        for store in simulator.stores("dutchie")[:10]
        for p in simulator.menu_at(store, 0)["products"]
    ]
    with_image = [url for url in urls if url is not None]
    assert len(with_image) < len(urls), "some products have no image"
    assert len(set(with_image)) < len(with_image), "several products share an image"

    name = with_image[0].rsplit("/", 1)[1]
    status, headers, data = fetch(f"{server.url}{with_image[0]}")
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")
    # The same name, the same bytes: on another platform, from another simulator of the seed.
    assert fetch(f"{server.url}/platforms/jane/images/{name}")[2] == data
    assert Simulator(seed=42).image("jane", name) == data
    assert Simulator(seed=7).image("jane", name) != data
    for unknown in ("flower-99.png", "lamps-1.png", "../menu", "flower-1.jpg"):
        assert fetch(f"{server.url}/platforms/dutchie/images/{quote(unknown, safe='')}")[0] == 404


def test_broken_images_stay_broken_in_each_of_three_ways() -> None:
    simulator = Simulator(seed=42, broken_image_share=0.5)
    names = [f"{category}-{n}.png" for category in ("flower", "edibles", "topicals") for n in range(6)]
    kinds = {name: simulator.broken_image(name) for name in names}
    assert set(kinds.values()) == {None, "not_found", "not_an_image", "truncated"}
    # A larger share keeps the smaller one's broken images.
    more = Simulator(seed=42, broken_image_share=0.9)
    assert all(more.broken_image(n) == k for n, k in kinds.items() if k is not None)
    assert not any(Simulator(seed=42).broken_image(name) for name in names)
    with pytest.raises(ValueError):
        Simulator(broken_image_share=1.5)

    with serve(simulator) as running:
        for name, kind in kinds.items():
            url = f"{running.url}/platforms/dutchie/images/{name}"
            for _ in range(2):
                status, _, data = fetch(url)
                whole = simulator.image("dutchie", name)
                if kind is None:
                    assert (status, data) == (200, whole)
                elif kind == "not_found":
                    assert status == 404
                elif kind == "not_an_image":
                    assert status == 200 and not data.startswith(b"\x89PNG")
                else:
                    assert status == 200 and data == whole[: len(whole) // 2]


def test_id_less_products_are_the_same_in_every_crawl() -> None:
    """id_less_share of the products come with id null, by (seed, store, product): a product has
    its id in every menu it is on, or in none; without the share, every product has its id."""
    simulator = Simulator(seed=42, stores=20, id_less_share=0.1)
    with_ids = Simulator(seed=42, stores=20)
    id_less = 0
    for store in simulator.all_stores():
        for clock in (0, 4, 40):
            listed = simulator.menu_at(store, clock)["products"]
            full = with_ids.menu_at(store, clock)["products"]
            assert [p["name"] for p in listed] == [p["name"] for p in full]
            assert all(p["id"] is not None for p in full)
            for product, whole in zip(listed, full):
                assert product["id"] in (None, whole["id"])
                assert {**product, "id": whole["id"]} == whole
            first = {p["id"] for p in full} - {p["id"] for p in listed}
            if clock == 0:
                id_less += len(first)
                kept = first
            else:
                assert not (kept & {p["id"] for p in full}) - first
    assert id_less > 0
    with pytest.raises(ValueError):
        Simulator(id_less_share=-0.1)
