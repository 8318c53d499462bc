"""Product images end to end: real worker processes crawl a simulated platform whose products
share images, a fifth of them broken (404, not an image, cut short). product_refresh links the
products and queues one image_download per URL; the image workers, logged in with nothing but
taskpool_worker's grants, store each content once. A broken image fails its own task only."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

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

from taskpool_crawler.handlers import image_extension
from taskpool_crawler.simulator import Simulator, SimulatorServer, serve
from taskpool_crawler.simulator.model import png

ROLES = ("product_discovery", "product_refresh", "image_download")


@pytest.fixture
def platform() -> Iterator[SimulatorServer]:
    """20 stores on dutchie and jane whose images are a fifth broken."""
    server = serve(
        Simulator(seed=7, stores=20, states=STATES, platforms=PLATFORMS, broken_image_share=0.2)
    )
    try:
        yield server
    finally:
        server.stop()


def test_images_are_stored_once_per_content_and_a_broken_one_fails_its_own_task_only(
    crawler: psycopg.Connection,  # noqa: F811 (the fixture imported above)
    platform: SimulatorServer,
    workers: Workers,
    worker_login_url: str,
    tmp_path: Path,
) -> None:
    simulator = platform.simulator
    crawler.execute(
        "UPDATE task_roles SET backoff_base = interval '1 second', backoff_cap = interval '2 seconds',"
        " backoff_jitter = 'none' WHERE role = 'image_download'"
    )
    store_ids = {
        (name, platform_id): store_id
        for name in PLATFORMS
        for platform_id, store_id in add_stores(crawler, simulator, name).items()
    }
    # What the menus show: each product's image URL, each URL's image name.
    product_images: dict[tuple[int, str], str] = {}
    for store in (s for name in PLATFORMS for s in simulator.stores(name)):
        for product in simulator.menu_at(store, 0)["products"]:
            if product["image_url"] is not None:
                store_id = store_ids[(store.platform, store.platform_store_id)]
                product_images[(store_id, product["id"])] = platform.url + product["image_url"]
    urls = set(product_images.values())
    broken = {url for url in urls if simulator.broken_image(url.rsplit("/", 1)[1])}
    healthy = urls - broken
    healthy_names = {url.rsplit("/", 1)[1] for url in healthy}
    assert broken and healthy, "the seed gives both broken and healthy images"
    assert len(healthy_names) < len(healthy), "the platforms share images by content"
    assert len(urls) < len(product_images), "products share image URLs"

    start(workers, {"product_discovery": 2, "product_refresh": 1, "image_download": 2},
          database_url=worker_login_url)
    enqueue(crawler, [{"role": "product_discovery", "dispensary_id": i} for i in store_ids.values()])
    wait_until_idle(crawler, workers, timeout=120, roles=ROLES)

    # The stores' crawls and refreshes all succeeded, broken images or not.
    assert statuses(crawler, "product_discovery") == {"completed": len(store_ids)}, task_summary(crawler)
    assert statuses(crawler, "product_refresh") == {"completed": len(store_ids)}, task_summary(crawler)
    assert crawler.execute("SELECT count(*) FROM store_products").fetchone()[0] == sum(
        len(simulator.menu_at(s, 0)["products"]) for name in PLATFORMS for s in simulator.stores(name)
    )
    # Every product with an image is linked to its URL.
    linked = dict(
        ((store_id, product_id), url)
        for store_id, product_id, url in crawler.execute(
            "SELECT dispensary_id, platform_product_id, image_url FROM store_product_images"
        )
    )
    assert linked == product_images

    # One download per URL: the healthy ones completed, each broken one failed, saying why.
    downloads = dict(
        crawler.execute(
            "SELECT payload ->> 'image_url', status FROM worker_tasks WHERE role = 'image_download'"
        ).fetchall()
    )
    assert len(downloads) == crawler.execute(
        "SELECT count(*) FROM worker_tasks WHERE role = 'image_download'"
    ).fetchone()[0]
    assert downloads == {url: "completed" if url in healthy else "failed" for url in urls}
    for url, error, last_error in crawler.execute(
        "SELECT t.payload ->> 'image_url', t.error_message, u.last_error FROM worker_tasks t"
        " JOIN product_image_urls u ON u.image_url = t.payload ->> 'image_url'"
        " WHERE t.role = 'image_download' AND t.status = 'failed'"
    ):
        assert url in error and last_error, error

    # Each content once: one row and one file per image name, whichever platform served it.
    stored = crawler.execute(
        "SELECT u.image_url, i.sha256, i.storage_key, i.size_bytes, i.content_type"
        " FROM product_image_urls u JOIN product_images i ON i.sha256 = u.image_sha256"
    ).fetchall()
    assert {url for url, *_ in stored} == healthy
    assert crawler.execute("SELECT count(*) FROM product_images").fetchone()[0] == len(healthy_names)
    for url, sha256, storage_key, size_bytes, content_type in stored:
        data = (tmp_path / "storage" / storage_key).read_bytes()
        assert data == simulator.image("dutchie", url.rsplit("/", 1)[1])
        assert hashlib.sha256(data).hexdigest() == sha256 and len(data) == size_bytes
        assert storage_key == f"images/{sha256[:2]}/{sha256}.png" and content_type == "image/png"
    image_files = [p for p in (tmp_path / "storage" / "images").rglob("*") if p.is_file()]
    assert len(image_files) == len(healthy_names)


def test_an_image_must_be_whole_and_of_the_type_it_says() -> None:
    image = png(2, 2, lambda x, y: b"\x00\x80\xff")
    assert image_extension(image, "image/png") == "png"
    assert image_extension(image, "Image/PNG; charset=binary") == "png"
    for data, content_type, problem in (
        (image, "text/html", "not one of"),
        (image, "image/jpeg", "do not start as one"),
        (b"<html>502</html>", "image/png", "do not start as one"),
        (image[: len(image) // 2], "image/png", "cut short"),
    ):
        with pytest.raises(Exception, match=problem):
            image_extension(data, content_type)
