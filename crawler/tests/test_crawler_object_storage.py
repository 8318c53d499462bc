"""Payloads in an S3-compatible bucket: moto's standalone server on loopback, reached through
boto3 as a fleet reaches a real bucket (TASKPOOL_STORAGE=s3://..., AWS_ENDPOINT_URL).

The storage interface against it (round trip, an object changed after its save, a missing one,
the size bounds read by range, keys refused before any request); real workers crawling the
simulator into the bucket; a server that cuts an upload part-way (a relay in front of moto):
nothing recorded, the task retried until it succeeds; and the sweep that removes what was
stored but never recorded (a worker killed between its upload and its row), for a bucket and
for a directory alike.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import secrets
import socket
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import psycopg
import pytest
from botocore.config import Config
from s3_support import CREDENTIALS, CuttingRelay, MotoS3
from test_crawler_e2e import (
    PLATFORMS,
    add_stores,
    crawler,  # noqa: F401  (a fixture)
    platform,  # noqa: F401  (a fixture)
    start,
    statuses,
    wait_until_idle,
)
from worker_support import Workers, fetch_one, task_row, wait_for, wait_for_status

from taskpool_crawler import storage
from taskpool_crawler.simulator import SimulatorServer

FETCHED_AT = datetime(2026, 3, 1, 8, 5, 9, 123456, tzinfo=UTC)
BODY = b'{"products": [{"id": "p1", "name": "Blue Dream 3.5g", "price": 35.0, "stock": 12}]}'
CRAWLER_TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoS3]:
    server = MotoS3().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(moto: MotoS3, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """boto3's settings for moto, in this process's environment (and so the workers')."""
    for name, value in {**CREDENTIALS, "AWS_ENDPOINT_URL": moto.url}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TASKPOOL_STORAGE_DIR", raising=False)
    return dict(CREDENTIALS, AWS_ENDPOINT_URL=moto.url)


@pytest.fixture
def bucket(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> storage.S3Storage:
    """A new bucket, the storage under its prefix `fleet/`, named in TASKPOOL_STORAGE."""
    name = f"crawl-{secrets.token_hex(6)}"
    client = boto3.client("s3")
    client.create_bucket(Bucket=name)
    monkeypatch.setenv("TASKPOOL_STORAGE", f"s3://{name}/fleet")
    return storage.S3Storage(name, "fleet", client)


def keys(store: storage.ObjectStore) -> list[str]:
    return sorted(stored.key for stored in store.list(storage.PAYLOADS_PREFIX))


def put_raw(store: storage.S3Storage, key: str, data: bytes) -> None:
    """Write under `key` straight through boto3, as another program would."""
    store.client.put_object(Bucket=store.bucket, Key=f"{store.prefix}/{key}", Body=data)


# The interface, against the bucket


def test_a_payload_round_trips_through_the_bucket(bucket: storage.S3Storage) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, store=bucket)
    assert saved.storage_path == "payloads/2026/03/01/store_42_20260301T080509123456Z.json.gz"
    assert saved.location == f"s3://{bucket.bucket}/fleet/{saved.storage_path}"
    stored = bucket.client.get_object(Bucket=bucket.bucket, Key=f"fleet/{saved.storage_path}")["Body"].read()
    assert gzip.decompress(stored) == BODY
    assert (saved.size_bytes, saved.sha256) == (len(stored), hashlib.sha256(stored).hexdigest())
    assert storage.load_payload(saved.storage_path, saved.sha256, store=bucket) == BODY
    assert keys(bucket) == [saved.storage_path]

    assert storage.remove_payload(saved.storage_path, store=bucket) is True
    assert keys(bucket) == []
    assert storage.remove_payload(saved.storage_path, store=bucket) is False, "gone counts as removed"


def test_the_generic_objects_round_trip_through_the_bucket(bucket: storage.S3Storage) -> None:
    assert storage.object_exists("images/ab/abcd.jpg", store=bucket) is False
    storage.store_object("images/ab/abcd.jpg", b"\xff\xd8jpeg", store=bucket)
    assert storage.object_exists("images/ab/abcd.jpg", store=bucket) is True
    assert storage.load_object("images/ab/abcd.jpg", 6, store=bucket) == b"\xff\xd8jpeg"
    storage.store_object("images/empty", b"", store=bucket)
    assert storage.load_object("images/empty", 6, store=bucket) == b""
    assert storage.remove_object("images/ab/abcd.jpg", store=bucket) is True
    assert storage.remove_object("images/ab/abcd.jpg", store=bucket) is False
    with pytest.raises(storage.StoredObjectMissing, match=f"s3://{bucket.bucket}/fleet/images/ab/abcd.jpg"):
        storage.load_object("images/ab/abcd.jpg", 6, store=bucket)


def test_the_storage_setting_reaches_the_bucket(bucket: storage.S3Storage) -> None:
    """TASKPOOL_STORAGE=s3://bucket/prefix and AWS_ENDPOINT_URL: what the workers are given."""
    saved = storage.save_payload(BODY, 5, FETCHED_AT)
    assert saved.location.startswith(f"s3://{bucket.bucket}/fleet/payloads/")
    assert storage.load_payload(saved.storage_path, saved.sha256, store=bucket) == BODY


def test_an_object_changed_after_its_save_is_corrupt(bucket: storage.S3Storage) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, store=bucket)
    put_raw(bucket, saved.storage_path, gzip.compress(BODY + b" ", mtime=0))
    with pytest.raises(storage.PayloadFileCorrupt, match="not the recorded") as raised:
        storage.load_payload(saved.storage_path, saved.sha256, store=bucket)
    assert saved.location in str(raised.value)
    put_raw(bucket, saved.storage_path, b"not gzip")
    with pytest.raises(storage.PayloadFileCorrupt, match="does not decompress"):
        storage.load_payload(saved.storage_path, store=bucket)


def test_a_missing_object_names_its_url(bucket: storage.S3Storage) -> None:
    key = storage.payload_storage_path(1, FETCHED_AT)
    with pytest.raises(storage.PayloadFileMissing) as raised:
        storage.load_payload(key, store=bucket)
    assert raised.value.location == f"s3://{bucket.bucket}/fleet/{key}"
    assert "TASKPOOL_STORAGE" in str(raised.value)


def test_an_object_over_the_size_bound_is_refused_unread(bucket: storage.S3Storage) -> None:
    key = storage.payload_storage_path(11, FETCHED_AT)
    put_raw(bucket, key, b"\0" * (storage.MAX_PAYLOAD_FILE_BYTES + 1))
    with pytest.raises(storage.PayloadFileTooLarge) as raised:
        storage.load_payload(key, store=bucket)
    assert f"{storage.MAX_PAYLOAD_FILE_BYTES + 1} bytes, over the {storage.MAX_PAYLOAD_FILE_BYTES}" in str(
        raised.value
    )
    storage.store_object("images/big", b"x" * 101, store=bucket)
    with pytest.raises(storage.StoredObjectTooLarge, match="101 bytes, over the 100"):
        storage.load_object("images/big", 100, store=bucket)
    assert storage.load_object("images/big", 101, store=bucket) == b"x" * 101


def test_a_gzip_bomb_in_the_bucket_is_refused_at_the_decompressed_bound(bucket: storage.S3Storage) -> None:
    key = storage.payload_storage_path(12, FETCHED_AT)
    compressor = zlib.compressobj(9, wbits=31)
    bomb = compressor.compress(b"\0" * (storage.MAX_PAYLOAD_BODY_BYTES + 1)) + compressor.flush()
    put_raw(bucket, key, bomb)
    with pytest.raises(storage.PayloadFileTooLarge, match=f"more than {storage.MAX_PAYLOAD_BODY_BYTES} bytes"):
        storage.load_payload(key, store=bucket)


@pytest.mark.parametrize(
    "key", ["/etc/shadow", "../../etc/shadow", "payloads/../../outside", "images/menu.json.gz", "payloads//x"]
)
def test_a_key_outside_the_layout_is_refused_for_the_bucket_too(bucket: storage.S3Storage, key: str) -> None:
    put_raw(bucket, "images/menu.json.gz", gzip.compress(BODY))
    with pytest.raises(storage.PayloadPathRefused) as raised:
        storage.load_payload(key, store=bucket)
    assert repr(key) in str(raised.value)
    with pytest.raises(storage.PayloadPathRefused):
        storage.remove_payload(key, store=bucket)
    assert storage.object_exists("images/menu.json.gz", store=bucket)
    if ".." in key:
        assert f"outside the storage bucket s3://{bucket.bucket}/fleet" in str(raised.value)


def test_a_bucket_that_does_not_answer_is_unavailable_not_missing(s3_env: dict[str, str]) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        nobody = closed.getsockname()[1]
    client = boto3.client(
        "s3", endpoint_url=f"http://127.0.0.1:{nobody}", config=Config(retries={"max_attempts": 1})
    )
    unreachable = storage.S3Storage("crawl-nowhere", "", client)
    key = storage.payload_storage_path(1, FETCHED_AT)
    with pytest.raises(storage.StorageUnavailable, match=f"storing s3://crawl-nowhere/{key}: "):
        storage.save_payload(BODY, 1, FETCHED_AT, store=unreachable)
    with pytest.raises(storage.StorageUnavailable, match=f"reading s3://crawl-nowhere/{key}: "):
        storage.load_payload(key, store=unreachable)
    with pytest.raises(storage.StorageUnavailable, match="looking up s3://crawl-nowhere/"):
        storage.remove_payload(key, store=unreachable)
    with pytest.raises(storage.StorageUnavailable, match="listing s3://crawl-nowhere/payloads/"):
        list(unreachable.list(storage.PAYLOADS_PREFIX))


# Real workers


def test_a_crawl_stores_its_payloads_in_the_bucket_and_refreshes_from_it(
    crawler: psycopg.Connection,  # noqa: F811
    platform: SimulatorServer,  # noqa: F811
    workers: Workers,
    bucket: storage.S3Storage,
    tmp_path: Path,
) -> None:
    """Discovery, the first crawls into the bucket, and their refreshes from it with the
    platform stopped; no directory is written."""
    start(workers, {"store_discovery": 1, "product_discovery": 2})
    (discovery,) = [
        row[0] for row in crawler.execute("SELECT id FROM enqueue_task('store_discovery')")
    ]
    wait_until_idle(crawler, workers, roles=("store_discovery", "product_discovery"))
    open_stores = len(task_row(crawler, discovery)["result"]["newStoreIds"])
    assert open_stores > 0
    platform.stop()
    start(workers, {"product_refresh": 2})
    wait_until_idle(crawler, workers)
    assert statuses(crawler, "product_refresh") == {"completed": open_stores}

    rows = crawler.execute("SELECT storage_path, size_bytes, sha256 FROM raw_crawl_payloads").fetchall()
    assert len(rows) == open_stores
    listed = {stored.key: stored.size_bytes for stored in bucket.list(storage.PAYLOADS_PREFIX)}
    assert listed == {path: size for path, size, _ in rows}
    for path, _, sha256 in rows:
        stored = storage.load_object(path, storage.MAX_PAYLOAD_FILE_BYTES, store=bucket)
        assert hashlib.sha256(stored).hexdigest() == sha256
    assert not (tmp_path / "storage").exists()
    assert not any(p.name == "storage" for p in workers.log_dir.iterdir())


def test_an_upload_cut_mid_body_records_nothing_and_the_retry_succeeds(
    crawler: psycopg.Connection,  # noqa: F811
    platform: SimulatorServer,  # noqa: F811
    workers: Workers,
    bucket: storage.S3Storage,
    moto: MotoS3,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    relay = CuttingRelay(moto.port)
    relay.cutting.set()
    try:
        # The workers reach the bucket through the relay; the test, straight.
        monkeypatch.setenv("AWS_ENDPOINT_URL", relay.url)
        crawler.execute("UPDATE task_roles SET max_retries = 20 WHERE role = 'product_discovery'")
        store_id = next(iter(add_stores(crawler, platform.simulator, PLATFORMS[0]).values()))
        (task_id,) = fetch_one(crawler, "SELECT id FROM enqueue_task('product_discovery', dispensary_id => %s)", (store_id,))
        start(workers, {"product_discovery": 1})

        def failed_attempts() -> list[str]:
            return [
                message
                for (message,) in crawler.execute(
                    "SELECT error_message FROM worker_task_attempts WHERE task_id = %s AND outcome = 'retried'",
                    (task_id,),
                )
            ]

        wait_for(failed_attempts, 60, "an attempt whose upload was cut to fail", interval=0.1)
        assert failed_attempts()[0].startswith(f"StorageUnavailable: storing s3://{bucket.bucket}/fleet/payloads/")
        assert "Connection was closed" in failed_attempts()[0]
        assert relay.cuts > 0
        assert fetch_one(crawler, "SELECT count(*) FROM raw_crawl_payloads")[0] == 0
        assert keys(bucket) == [], "a PUT cut short stores nothing"
        assert task_row(crawler, task_id)["status"] in ("pending", "running", "claimed")

        relay.cutting.clear()
        row = wait_for_status(crawler, task_id, "completed", 60, also=workers.describe)
        assert row["attempt"] >= 2
        (path, sha256) = crawler.execute(
            "SELECT storage_path, sha256 FROM raw_crawl_payloads WHERE dispensary_id = %s", (store_id,)
        ).fetchone()
        assert keys(bucket) == [path]
        assert storage.load_payload(path, sha256, store=bucket)
    finally:
        relay.close()


# Nothing stored stays unrecorded: the sweep, for a bucket and a directory


@pytest.fixture(params=["bucket", "directory"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> storage.ObjectStore:
    """The storage the workers are given (TASKPOOL_STORAGE): a bucket, or a directory."""
    if request.param == "bucket":
        return request.getfixturevalue("bucket")
    root = tmp_path / "storage"
    monkeypatch.setenv("TASKPOOL_STORAGE", str(root))
    return storage.LocalStorage(root)


def move_clock(conn: psycopg.Connection, by: timedelta) -> None:
    conn.execute("SELECT set_taskpool_clock_offset(%s)", (by,))


def test_a_payload_stored_by_a_worker_killed_before_its_row_is_swept(
    crawler: psycopg.Connection,  # noqa: F811
    platform: SimulatorServer,  # noqa: F811
    workers: Workers,
    any_store: storage.ObjectStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # crawler_dying_crawl.py is beside this file: on the workers' import path too.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(CRAWLER_TESTS), os.environ.get("PYTHONPATH")])))
    store_id = next(iter(add_stores(crawler, platform.simulator, PLATFORMS[0]).values()))
    (task_id,) = fetch_one(crawler, "SELECT id FROM enqueue_task('product_discovery', dispensary_id => %s)", (store_id,))
    dying = workers.start("product_discovery", "crawl-1", handlers="crawler_dying_crawl")
    assert dying.wait(30) == 17, dying.describe()
    (orphan,) = keys(any_store)
    assert fetch_one(crawler, "SELECT count(*) FROM raw_crawl_payloads")[0] == 0

    # The stranded attempt goes back to the queue, as stale recovery would, an hour on.
    crawler.execute(
        "UPDATE worker_tasks SET last_heartbeat_at = last_heartbeat_at - interval '1 hour' WHERE id = %s",
        (task_id,),
    )
    crawler.execute("SELECT recover_stale_tasks()")
    retry = workers.start("product_discovery", "crawl-2", handlers="crawler_dying_crawl")
    wait_for_status(crawler, task_id, "completed", 30, also=retry.describe)
    (recorded,) = fetch_one(crawler, "SELECT storage_path FROM raw_crawl_payloads")
    assert keys(any_store) == sorted([orphan, recorded])

    # Within the grace period the sweep leaves the orphan: it may be a crawl about to record it.
    sweeper = workers.start("payload_storage_sweep", "sweep-1", handlers="taskpool_crawler.handlers")
    (early,) = fetch_one(crawler, "SELECT id FROM enqueue_task('payload_storage_sweep', '{\"older_than_seconds\": 21600}')")
    assert wait_for_status(crawler, early, "completed", 30, also=sweeper.describe)["result"] == {
        "examined": 0,
        "removed": 0,
    }
    assert keys(any_store) == sorted([orphan, recorded])

    # The schedule runs it without an operator: the tick, 7 hours on.
    move_clock(crawler, timedelta(hours=7))
    crawler.execute("SELECT tick_schedules()")
    (sweep,) = fetch_one(
        crawler, "SELECT id FROM worker_tasks WHERE role = 'payload_storage_sweep' AND id <> %s", (early,)
    )
    row = wait_for_status(crawler, sweep, "completed", 30, also=sweeper.describe)
    assert row["result"] == {"examined": 2, "removed": 1}
    assert keys(any_store) == [recorded]


def test_the_sweep_leaves_young_and_recorded_payloads_and_takes_stale_temporary_files(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """storage.sweep_unrecorded_payloads against the database's unrecorded_payload_paths, in a
    directory where a writer was killed before its rename."""
    local = storage.LocalStorage(tmp_path)
    (store_id,) = fetch_one(conn, "INSERT INTO dispensaries (name, platform) VALUES ('s', 'dutchie') RETURNING id")
    recorded = storage.save_payload(BODY, store_id, FETCHED_AT, store=local)
    conn.execute(
        "SELECT record_crawl_payload(%s, %s, %s, %s, %s)",
        (store_id, FETCHED_AT, recorded.storage_path, recorded.size_bytes, recorded.sha256),
    )
    orphan = storage.save_payload(BODY, store_id, FETCHED_AT + timedelta(hours=1), store=local)
    temporary = tmp_path / "payloads/2026/03/01/.store_1_20260301T090000000000Z.json.gz.x1y2.tmp"
    temporary.write_bytes(b"half a payl")

    def unrecorded(paths: list[str]) -> list[str]:
        return [row[0] for row in conn.execute("SELECT unrecorded_payload_paths(%s)", (paths,))]

    now = datetime.now(UTC)
    assert storage.sweep_unrecorded_payloads(unrecorded, store=local, now=now) == {"examined": 0, "removed": 0}
    later = now + storage.DEFAULT_SWEEP_GRACE + timedelta(minutes=1)
    assert storage.sweep_unrecorded_payloads(unrecorded, store=local, now=later) == {"examined": 3, "removed": 2}
    assert keys(local) == [recorded.storage_path]
    assert not Path(orphan.location).exists() and not temporary.exists()


def test_the_sweep_refuses_a_grace_under_a_minute_or_over_a_year(conn: psycopg.Connection, workers: Workers, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TASKPOOL_STORAGE", str(tmp_path / "storage"))
    sweeper = workers.start("payload_storage_sweep", "sweep-1", handlers="taskpool_crawler.handlers")
    for grace in (0, 365 * 24 * 3600 + 1, "6 hours"):
        (task_id,) = fetch_one(
            conn, "SELECT id FROM enqueue_task('payload_storage_sweep', %s::jsonb)", (json.dumps({"older_than_seconds": grace}),)
        )
        row = wait_for_status(conn, task_id, "failed", 30, also=sweeper.describe)
        assert "N from 60 to 31536000" in row["error_message"]



def test_the_sweep_removes_nothing_through_a_symlink_out_of_the_directory(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    (outside / "2026").mkdir(parents=True)
    (outside / "2026" / "precious.json.gz").write_bytes(b"keep me")
    root = tmp_path / "storage"
    root.mkdir()
    (root / "payloads").symlink_to(outside)

    def unrecorded(paths: list[str]) -> list[str]:
        return [row[0] for row in conn.execute("SELECT unrecorded_payload_paths(%s)", (paths,))]

    later = datetime.now(UTC) + timedelta(days=1)
    counts = storage.sweep_unrecorded_payloads(unrecorded, store=storage.LocalStorage(root), now=later)
    assert counts == {"examined": 1, "removed": 0}
    assert (outside / "2026" / "precious.json.gz").read_bytes() == b"keep me"
