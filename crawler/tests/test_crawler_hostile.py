"""The reference crawler against what a red-team pass tried (issue 11).

A store discovery whose worker dies after the upsert still gets its stores their first crawl
(real worker processes and a simulated platform). Payload files are read only from inside the
storage directory, only as regular files, and only up to MAX_PAYLOAD_FILE_BYTES on disk and
MAX_PAYLOAD_BODY_BYTES decompressed: a path escaping the directory, a symlink out of it, a FIFO,
an oversized file and a gzip bomb are refused, and a product_refresh of a gzip bomb fails for
good saying why.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest
from worker_support import Workers, fetch_one, task_row, wait_for, wait_for_status

from taskpool_crawler import storage
from taskpool_crawler.simulator import Simulator, SimulatorServer, serve


# This folder (crawler/tests), where the workers import crawler_dying_discovery from.
CRAWLER_TESTS = Path(__file__).resolve().parent
FETCHED_AT = datetime(2026, 3, 1, 8, 5, 9, 123456, tzinfo=timezone.utc)
BODY = b'{"products": [{"id": "p1", "name": "Blue Dream 3.5g", "price": 35.0, "stock": 12}]}'
MiB = 1024 * 1024


def gzip_of_zeros(size: int) -> bytes:
    """A gzip file holding `size` zero bytes, compressed in chunks (a few hundred KiB at most)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(MiB)
    parts = []
    left = size
    while left > 0:
        parts.append(compressor.compress(chunk[: min(left, MiB)]))
        left -= min(left, MiB)
    parts.append(compressor.flush())
    return b"".join(parts)


def write_payload(root: Path, dispensary_id: int, data: bytes) -> tuple[str, str]:
    """`data` as the store's payload file under `root`: its storage path and sha256."""
    storage_path = storage.payload_storage_path(dispensary_id, FETCHED_AT)
    path = root / storage_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return storage_path, hashlib.sha256(data).hexdigest()


# Reading payload files: only inside the storage directory, only regular files, bounded


@pytest.mark.parametrize(
    "storage_path", ["/dev/zero", "../../etc/shadow", "payloads/../../outside"]
)
def test_a_path_outside_the_storage_directory_is_refused_unread(
    tmp_path: Path, storage_path: str
) -> None:
    root = tmp_path / "storage"
    root.mkdir()
    (tmp_path / "outside").write_bytes(b"secret")
    with pytest.raises(storage.PayloadPathRefused) as raised:
        storage.load_payload(storage_path, store=storage.LocalStorage(root))
    assert storage_path in str(raised.value)
    assert "outside the storage directory" in str(raised.value)


def test_a_symlink_out_of_the_storage_directory_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    secret = tmp_path / "secret.gz"
    secret.write_bytes(gzip_of_zeros(10))
    storage_path = storage.payload_storage_path(7, FETCHED_AT)
    (root / storage_path).parent.mkdir(parents=True)
    (root / storage_path).symlink_to(secret)
    with pytest.raises(storage.PayloadPathRefused, match="outside the storage directory"):
        storage.load_payload(storage_path, store=storage.LocalStorage(root))

    # A directory of the layout that is a symlink out of it, too.
    other = tmp_path / "other-root"
    (other / "payloads" / "2026" / "03" / "01").mkdir(parents=True)
    write_payload(other, 8, gzip_of_zeros(10))
    (root / "payloads" / "2026" / "03" / "01").rename(tmp_path / "moved-away")
    day = Path("payloads", "2026", "03", "01")
    (root / day).symlink_to(other / day)
    with pytest.raises(storage.PayloadPathRefused, match="outside the storage directory"):
        storage.load_payload(storage.payload_storage_path(8, FETCHED_AT), store=storage.LocalStorage(root))


def test_a_symlink_within_the_storage_directory_is_read(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    saved = storage.save_payload(BODY, 9, FETCHED_AT, store=storage.LocalStorage(root))
    link = root / "payloads" / "linked.json.gz"
    link.symlink_to(Path(saved.location))
    assert storage.load_payload("payloads/linked.json.gz", saved.sha256, store=storage.LocalStorage(root)) == BODY


def test_a_storage_directory_reached_through_a_symlink_is_read(tmp_path: Path) -> None:
    real_root = tmp_path / "mounted"
    saved = storage.save_payload(BODY, 9, FETCHED_AT, store=storage.LocalStorage(real_root))
    (tmp_path / "storage").symlink_to(real_root)
    linked_root = tmp_path / "storage"
    assert storage.load_payload(saved.storage_path, saved.sha256, store=storage.LocalStorage(linked_root)) == BODY


def test_a_fifo_at_a_payload_path_is_refused_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    storage_path = storage.payload_storage_path(10, FETCHED_AT)
    (root / storage_path).parent.mkdir(parents=True)
    os.mkfifo(root / storage_path)
    with pytest.raises(storage.PayloadPathRefused, match="not a regular file"):
        storage.load_payload(storage_path, store=storage.LocalStorage(root))


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    storage_path = storage.payload_storage_path(11, FETCHED_AT)
    path = root / storage_path
    path.parent.mkdir(parents=True)
    with open(path, "wb") as sparse:
        sparse.truncate(storage.MAX_PAYLOAD_FILE_BYTES + 1)
    with pytest.raises(storage.PayloadFileTooLarge) as raised:
        storage.load_payload(storage_path, store=storage.LocalStorage(root))
    assert f"{storage.MAX_PAYLOAD_FILE_BYTES} bytes" in str(raised.value)
    assert isinstance(raised.value, storage.PayloadFileCorrupt)


def test_a_gzip_bomb_is_refused_at_the_decompressed_limit(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    bomb = gzip_of_zeros(storage.MAX_PAYLOAD_BODY_BYTES + 1)
    assert len(bomb) < storage.MAX_PAYLOAD_FILE_BYTES
    storage_path, sha256 = write_payload(root, 12, bomb)
    with pytest.raises(storage.PayloadFileTooLarge) as raised:
        storage.load_payload(storage_path, sha256, store=storage.LocalStorage(root))
    assert f"more than {storage.MAX_PAYLOAD_BODY_BYTES} bytes" in str(raised.value)

    # Exactly at the limit is read.
    at_limit = gzip_of_zeros(storage.MAX_PAYLOAD_BODY_BYTES)
    storage_path, sha256 = write_payload(root, 13, at_limit)
    body = storage.load_payload(storage_path, sha256, store=storage.LocalStorage(root))
    assert len(body) == storage.MAX_PAYLOAD_BODY_BYTES


def test_product_refresh_of_a_gzip_bomb_fails_for_good_saying_why(
    conn: psycopg.Connection, workers: Workers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "storage"
    monkeypatch.setenv("TASKPOOL_STORAGE_DIR", str(root))
    (store_id,) = fetch_one(
        conn, "INSERT INTO dispensaries (name, platform) VALUES ('bomb', 'dutchie') RETURNING id"
    )
    bomb = gzip_of_zeros(storage.MAX_PAYLOAD_BODY_BYTES + 1)
    storage_path, sha256 = write_payload(root, store_id, bomb)
    size = (root / storage_path).stat().st_size
    (payload_id,) = fetch_one(
        conn,
        "SELECT record_crawl_payload(%s, %s, %s, %s, %s)",
        (store_id, FETCHED_AT, storage_path, size, sha256),
    )
    (task_id,) = fetch_one(
        conn,
        "SELECT id FROM enqueue_task('product_refresh', %s::jsonb, dispensary_id => %s)",
        (json.dumps({"payload_id": payload_id}), store_id),
    )
    worker = workers.start("product_refresh", "refresh-1", handlers="taskpool_crawler.handlers")
    row = wait_for_status(conn, task_id, "failed", 30, also=worker.describe)
    assert row["attempt"] == 1, "a gzip bomb is not retried"
    assert f"payload {payload_id}:" in row["error_message"]
    limit = storage.MAX_PAYLOAD_BODY_BYTES
    assert f"decompresses to more than {limit} bytes" in row["error_message"]
    status, error = fetch_one(
        conn, "SELECT status, error_message FROM raw_crawl_payloads WHERE id = %s", (payload_id,)
    )
    assert status == "corrupt"
    assert "decompresses to more than" in error
    assert worker.process.poll() is None, "the worker goes on"


def test_product_refresh_of_a_path_outside_the_storage_directory_fails_for_good_unread(
    conn: psycopg.Connection, workers: Workers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row recorded before record_crawl_payload checked paths (written here as a table owner)."""
    root = tmp_path / "storage"
    root.mkdir()
    monkeypatch.setenv("TASKPOOL_STORAGE_DIR", str(root))
    (store_id,) = fetch_one(
        conn, "INSERT INTO dispensaries (name, platform) VALUES ('old', 'dutchie') RETURNING id"
    )
    (payload_id,) = fetch_one(
        conn,
        "INSERT INTO raw_crawl_payloads"
        " (dispensary_id, fetched_at, storage_path, size_bytes, sha256)"
        " VALUES (%s, %s, '/dev/zero', 1, repeat('ab', 32)) RETURNING id",
        (store_id, FETCHED_AT),
    )
    (task_id,) = fetch_one(
        conn,
        "SELECT id FROM enqueue_task('product_refresh', %s::jsonb, dispensary_id => %s)",
        (json.dumps({"payload_id": payload_id}), store_id),
    )
    worker = workers.start("product_refresh", "refresh-1", handlers="taskpool_crawler.handlers")
    row = wait_for_status(conn, task_id, "failed", 30, also=worker.describe)
    assert row["attempt"] == 1, "a refused path is not retried"
    assert (
        f"payload {payload_id}: payload path '/dev/zero' is outside the storage directory"
        in row["error_message"]
    )
    (status,) = fetch_one(
        conn, "SELECT status FROM raw_crawl_payloads WHERE id = %s", (payload_id,)
    )
    assert status == "saved", "the file was not read, so it is not called corrupt"


# A discovery attempt that dies after its upsert


@pytest.fixture
def platform() -> Iterator[SimulatorServer]:
    server = serve(Simulator(seed=7, stores=6, states=("AZ",), platforms=("dutchie",)))
    try:
        yield server
    finally:
        server.stop()


def test_a_discovery_that_dies_after_its_upsert_still_chains_every_store_s_first_crawl(
    conn: psycopg.Connection,
    workers: Workers,
    platform: SimulatorServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TASKPOOL_PLATFORM_URL", platform.url)
    monkeypatch.setenv("TASKPOOL_PLATFORMS", "dutchie")
    monkeypatch.setenv("TASKPOOL_STATES", "AZ")
    # crawler_dying_discovery.py is beside this file: on the workers' import path too.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(CRAWLER_TESTS), os.environ.get("PYTHONPATH")])))
    (task_id,) = fetch_one(conn, "SELECT id FROM enqueue_task('store_discovery')")

    dying = workers.start("store_discovery", "discovery-1", handlers="crawler_dying_discovery")
    assert dying.wait(30) == 17, dying.describe()
    stores = [
        row[0]
        for row in conn.execute(
            "SELECT id FROM dispensaries WHERE platform = 'dutchie' ORDER BY id"
        )
    ]
    assert len(stores) == len(platform.simulator.stores("dutchie")) > 0
    assert task_row(conn, task_id)["status"] == "running"

    # The stranded attempt goes back to the queue as stale recovery would, an hour on.
    conn.execute(
        "UPDATE worker_tasks SET last_heartbeat_at = last_heartbeat_at - interval '1 hour'"
        " WHERE id = %s",
        (task_id,),
    )
    conn.execute("SELECT recover_stale_tasks()")
    assert task_row(conn, task_id)["status"] == "pending"

    retry = workers.start("store_discovery", "discovery-2", handlers="crawler_dying_discovery")
    row = wait_for_status(conn, task_id, "completed", 30, also=retry.describe)
    assert row["attempt"] == 2
    assert sorted(row["result"]["newStoreIds"]) == stores
    wait_for(
        lambda: sorted(
            r[0]
            for r in conn.execute(
                "SELECT dispensary_id FROM worker_tasks WHERE role = 'product_discovery'"
            )
        )
        == stores,
        5,
        "a product_discovery for every store the dead attempt upserted",
    )
