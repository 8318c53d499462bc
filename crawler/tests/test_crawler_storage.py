"""Payload files on disk (no database): where they go, what is recorded of them, the atomic
write, and reading them back, including a missing or altered file."""

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
    saved = storage.save_payload(BODY, 42, FETCHED_AT, root=tmp_path)
    assert saved.storage_path == "payloads/2026/03/01/store_42_20260301T080509123456Z.json.gz"
    assert saved.path == tmp_path / saved.storage_path
    data = saved.path.read_bytes()
    assert gzip.decompress(data) == BODY
    assert saved.size_bytes == len(data)
    assert saved.sha256 == hashlib.sha256(data).hexdigest()
    # Nothing else in the directory: the temporary file was renamed into place.
    assert [p.name for p in saved.path.parent.iterdir()] == [saved.path.name]


def test_the_same_body_gives_the_same_file(tmp_path: Path) -> None:
    first = storage.save_payload(BODY, 1, FETCHED_AT, root=tmp_path)
    second = storage.save_payload(BODY, 1, FETCHED_AT + timedelta(hours=4), root=tmp_path)
    assert first.sha256 == second.sha256
    assert first.path != second.path


def test_a_failed_write_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(storage.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        storage.save_payload(BODY, 42, FETCHED_AT, root=tmp_path)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_load_returns_the_raw_body_and_checks_the_sha256(tmp_path: Path) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, root=tmp_path)
    assert storage.load_payload(saved.storage_path, saved.sha256, root=tmp_path) == BODY
    assert storage.load_payload(saved.storage_path, saved.sha256.upper(), root=tmp_path) == BODY
    assert storage.load_payload(saved.storage_path, root=tmp_path) == BODY


def test_the_storage_dir_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(storage.STORAGE_DIR_ENV, raising=False)
    assert storage.storage_dir() == Path("storage")
    monkeypatch.setenv(storage.STORAGE_DIR_ENV, str(tmp_path / "store"))
    saved = storage.save_payload(BODY, 7, FETCHED_AT)
    assert saved.path == tmp_path / "store" / saved.storage_path
    assert storage.load_payload(saved.storage_path, saved.sha256) == BODY


def test_a_missing_file_names_its_path(tmp_path: Path) -> None:
    with pytest.raises(storage.PayloadFileMissing) as raised:
        storage.load_payload("payloads/2026/03/01/store_1_x.json.gz", root=tmp_path)
    assert raised.value.path == tmp_path / "payloads/2026/03/01/store_1_x.json.gz"
    assert str(tmp_path / "payloads/2026/03/01/store_1_x.json.gz") in str(raised.value)


def test_an_altered_file_is_corrupt(tmp_path: Path) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, root=tmp_path)
    saved.path.write_bytes(gzip.compress(BODY + b" "))
    with pytest.raises(storage.PayloadFileCorrupt, match="not the recorded"):
        storage.load_payload(saved.storage_path, saved.sha256, root=tmp_path)


def test_a_file_that_is_not_gzip_or_cut_short_is_corrupt(tmp_path: Path) -> None:
    saved = storage.save_payload(BODY, 42, FETCHED_AT, root=tmp_path)
    data = saved.path.read_bytes()
    saved.path.write_bytes(data[: len(data) // 2])
    with pytest.raises(storage.PayloadFileCorrupt, match="does not decompress"):
        storage.load_payload(saved.storage_path, root=tmp_path)
    saved.path.write_bytes(BODY)
    with pytest.raises(storage.PayloadFileCorrupt, match="does not decompress"):
        storage.load_payload(saved.storage_path, root=tmp_path)


def test_objects_are_stored_whole_read_within_a_bound_and_removed(tmp_path: Path) -> None:
    key = "images/ab/" + "ab" * 32 + ".png"
    assert not storage.object_exists(key, root=tmp_path)
    storage.store_object(key, b"\x89PNG bytes", root=tmp_path)
    assert storage.object_exists(key, root=tmp_path)
    assert (tmp_path / key).read_bytes() == b"\x89PNG bytes"
    assert [p.name for p in (tmp_path / "images/ab").iterdir()] == [Path(key).name]
    assert storage.load_object(key, 100, root=tmp_path) == b"\x89PNG bytes"
    with pytest.raises(storage.PayloadFileTooLarge, match="over the 4 bytes"):
        storage.load_object(key, 4, root=tmp_path)
    assert storage.remove_object(key, root=tmp_path) is True
    assert storage.remove_object(key, root=tmp_path) is False
    with pytest.raises(storage.PayloadFileMissing):
        storage.load_object(key, 100, root=tmp_path)


def test_an_object_key_outside_the_storage_dir_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    root.mkdir()
    (tmp_path / "outside").write_bytes(b"secret")
    for key in ("../outside", str(tmp_path / "outside")):
        for call in (
            lambda: storage.store_object(key, b"x", root=root),
            lambda: storage.load_object(key, 100, root=root),
            lambda: storage.object_exists(key, root=root),
            lambda: storage.remove_object(key, root=root),
        ):
            with pytest.raises(storage.PayloadPathRefused, match="object key"):
                call()
    assert (tmp_path / "outside").read_bytes() == b"secret"
