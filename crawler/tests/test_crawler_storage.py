"""Payloads and objects in a local directory (no database): where they go, what is recorded of
them, the atomic write, reading them back (a missing or altered file included), the storage
setting and the keys refused. The same in a bucket: test_crawler_object_storage.py."""

from __future__ import annotations

import gzip
import hashlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from taskpool_crawler import storage

FETCHED_AT = datetime(2026, 3, 1, 8, 5, 9, 123456, tzinfo=timezone.utc)
BODY = b'{"products": [{"id": "p1", "name": "Blue Dream 3.5g", "price": 35.0, "stock": 12}]}'


def test_the_path_names_the_store_and_the_utc_time_of_the_fetch() -> None:
    assert storage.payload_storage_path(42, FETCHED_AT) == (
        "payloads/2026/03/01/store_42_20260301T080509123456Z.json.gz"
    )
    # The same instant in another zone: the same UTC day and name.
    local = FETCHED_AT.astimezone(timezone(timedelta(hours=-10)))
    assert local.day == 28
    assert storage.payload_storage_path(42, local) == storage.payload_storage_path(42, FETCHED_AT)
    with pytest.raises(ValueError, match="time zone"):
        storage.payload_storage_path(42, datetime(2026, 3, 1))


def test_save_writes_gzip_and_reports_the_size_and_sha256_of_the_file(tmp_path: Path) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, store=storage.LocalStorage(tmp_path))
    assert saved.storage_path == "payloads/2026/03/01/store_42_20260301T080509123456Z.json.gz"
    assert Path(saved.location) == tmp_path / saved.storage_path
    data = Path(saved.location).read_bytes()
    assert gzip.decompress(data) == BODY
    assert saved.size_bytes == len(data)
    assert saved.sha256 == hashlib.sha256(data).hexdigest()
    # Nothing else in the directory: the temporary file was renamed into place.
    assert [p.name for p in Path(saved.location).parent.iterdir()] == [Path(saved.location).name]


def test_the_same_body_gives_the_same_file(tmp_path: Path) -> None:
    first = storage.save_payload(BODY, 1, FETCHED_AT, store=storage.LocalStorage(tmp_path))
    second = storage.save_payload(BODY, 1, FETCHED_AT + timedelta(hours=4), store=storage.LocalStorage(tmp_path))
    assert first.sha256 == second.sha256
    assert first.location != second.location


def test_a_failed_write_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(storage.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        storage.save_payload(BODY, 42, FETCHED_AT, store=storage.LocalStorage(tmp_path))
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_load_returns_the_raw_body_and_checks_the_sha256(tmp_path: Path) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, store=storage.LocalStorage(tmp_path))
    assert storage.load_payload(saved.storage_path, saved.sha256, store=storage.LocalStorage(tmp_path)) == BODY
    assert storage.load_payload(saved.storage_path, saved.sha256.upper(), store=storage.LocalStorage(tmp_path)) == BODY
    assert storage.load_payload(saved.storage_path, store=storage.LocalStorage(tmp_path)) == BODY


def test_the_storage_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TASKPOOL_STORAGE first, then TASKPOOL_STORAGE_DIR (its older name), then ./storage."""
    monkeypatch.delenv(storage.STORAGE_ENV, raising=False)
    monkeypatch.delenv(storage.STORAGE_DIR_ENV, raising=False)
    assert storage.storage_setting() == "storage"
    monkeypatch.setenv(storage.STORAGE_DIR_ENV, str(tmp_path / "old"))
    saved = storage.save_payload(BODY, 7, FETCHED_AT)
    assert Path(saved.location) == tmp_path / "old" / saved.storage_path
    assert storage.load_payload(saved.storage_path, saved.sha256) == BODY
    monkeypatch.setenv(storage.STORAGE_ENV, (tmp_path / "new").as_uri())
    saved = storage.save_payload(BODY, 7, FETCHED_AT)
    assert Path(saved.location) == tmp_path / "new" / saved.storage_path
    assert storage.current_store() is storage.current_store()


def test_a_storage_url_names_a_directory_or_a_bucket(tmp_path: Path) -> None:
    local = storage.store_from_setting(f"file://{tmp_path}/with%20space")
    assert isinstance(local, storage.LocalStorage) and local.root == tmp_path / "with space"
    bucket = storage.store_from_setting("s3://crawls/fleet/a/")
    assert isinstance(bucket, storage.S3Storage)
    assert (bucket.bucket, bucket.prefix) == ("crawls", "fleet/a")
    assert bucket.location("payloads/x.json.gz") == "s3://crawls/fleet/a/payloads/x.json.gz"
    for wrong in ("s3://", "s3:///prefix", "gs://crawls", "s3://crawls/../up", "file://host/x"):
        with pytest.raises(ValueError):
            storage.store_from_setting(wrong)


@pytest.mark.parametrize(
    "key", ["", "/etc/passwd", "../up", "a/../../up", "a//b", "./a", "a/./b", "a\\b", "a\nb", "x" * 1025]
)
def test_a_malformed_key_is_refused_before_anything_is_touched(tmp_path: Path, key: str) -> None:
    local = storage.LocalStorage(tmp_path / "root")
    for attempt in (
        lambda: storage.store_object(key, b"x", store=local),
        lambda: storage.load_object(key, 10, store=local),
        lambda: storage.object_exists(key, store=local),
        lambda: storage.remove_object(key, store=local),
    ):
        with pytest.raises(storage.StorageKeyRefused):
            attempt()
    assert not (tmp_path / "root").exists()


def test_objects_round_trip_within_their_bound(tmp_path: Path) -> None:
    local = storage.LocalStorage(tmp_path)
    assert storage.object_exists("images/ab/cd.jpg", store=local) is False
    storage.store_object("images/ab/cd.jpg", b"12345", store=local)
    assert storage.object_exists("images/ab/cd.jpg", store=local) is True
    assert storage.load_object("images/ab/cd.jpg", 5, store=local) == b"12345"
    with pytest.raises(storage.StoredObjectTooLarge):
        storage.load_object("images/ab/cd.jpg", 4, store=local)
    assert storage.remove_object("images/ab/cd.jpg", store=local) is True
    assert storage.remove_object("images/ab/cd.jpg", store=local) is False
    with pytest.raises(storage.StoredObjectMissing):
        storage.load_object("images/ab/cd.jpg", 5, store=local)


def test_a_payload_key_outside_the_layout_is_refused(tmp_path: Path) -> None:
    local = storage.LocalStorage(tmp_path)
    storage.store_object("images/menu.json.gz", gzip.compress(BODY), store=local)
    with pytest.raises(storage.PayloadPathRefused, match="not under payloads/"):
        storage.load_payload("images/menu.json.gz", store=local)
    with pytest.raises(storage.PayloadPathRefused, match="not under payloads/"):
        storage.remove_payload("images/menu.json.gz", store=local)
    assert storage.object_exists("images/menu.json.gz", store=local)


def test_a_missing_file_names_its_path(tmp_path: Path) -> None:
    with pytest.raises(storage.PayloadFileMissing) as raised:
        storage.load_payload("payloads/2026/03/01/store_1_x.json.gz", store=storage.LocalStorage(tmp_path))
    assert raised.value.location == str(tmp_path / "payloads/2026/03/01/store_1_x.json.gz")
    assert str(tmp_path / "payloads/2026/03/01/store_1_x.json.gz") in str(raised.value)


def test_an_altered_file_is_corrupt(tmp_path: Path) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, store=storage.LocalStorage(tmp_path))
    Path(saved.location).write_bytes(gzip.compress(BODY + b" "))
    with pytest.raises(storage.PayloadFileCorrupt, match="not the recorded"):
        storage.load_payload(saved.storage_path, saved.sha256, store=storage.LocalStorage(tmp_path))


def test_a_file_that_is_not_gzip_or_cut_short_is_corrupt(tmp_path: Path) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, store=storage.LocalStorage(tmp_path))
    data = Path(saved.location).read_bytes()
    Path(saved.location).write_bytes(data[: len(data) // 2])
    with pytest.raises(storage.PayloadFileCorrupt, match="does not decompress"):
        storage.load_payload(saved.storage_path, store=storage.LocalStorage(tmp_path))
    Path(saved.location).write_bytes(BODY)
    with pytest.raises(storage.PayloadFileCorrupt, match="does not decompress"):
        storage.load_payload(saved.storage_path, store=storage.LocalStorage(tmp_path))
