"""The crawl_payloads retention policy and the payload files: a payload's row goes first, its path
into the outbox (payload_file_removals) in the same transaction, and a payload_file_removal task,
run by a real crawler worker, removes the file, then forgets the path. A crash between the row and
the file (or between the file and the outbox row) leaves an outbox row that the next run finishes;
a file already gone counts as removed. (The SQL side: crawler/sql_tests/retention.sql.)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from taskpool_crawler import storage
from worker_support import Workers, fetch_one, wait_for_status

BODY = b'{"products": []}'


def saved_payload(
    conn: psycopg.Connection, root: Path, store_id: int, fetched_at: datetime
) -> Path:
    """A payload file written as the crawler writes it, and its row (status saved)."""
    saved = storage.save_payload(BODY, store_id, fetched_at, store=storage.LocalStorage(root))
    conn.execute(
        "SELECT record_crawl_payload(%s, %s, %s, %s, %s)",
        (store_id, fetched_at, saved.storage_path, saved.size_bytes, saved.sha256),
    )
    return Path(saved.location)


def outbox(conn: psycopg.Connection) -> list[str]:
    return [
        row[0]
        for row in conn.execute(
            "SELECT storage_path FROM payload_file_removals ORDER BY 1"
        )
    ]


def test_payload_files_go_after_their_rows_and_a_crash_in_between_is_finished_by_the_next_run(
    conn: psycopg.Connection,
    workers: Workers,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "storage"
    monkeypatch.setenv(storage.STORAGE_DIR_ENV, str(root))
    (store_id,) = fetch_one(
        conn,
        "INSERT INTO dispensaries (name, platform) VALUES ('old', 'dutchie') RETURNING id",
    )
    (now,) = fetch_one(conn, "SELECT taskpool_now()")
    old = [
        saved_payload(conn, root, store_id, now - timedelta(days=40, minutes=minute))
        for minute in range(3)
    ]
    young = saved_payload(conn, root, store_id, now - timedelta(days=1))

    # Retention deletes the rows: the files are still there, queued in the outbox. This is the
    # state a crash right after the deleting transaction leaves.
    (pruned,) = fetch_one(
        conn, "SELECT pruned FROM apply_retention() WHERE policy = 'crawl_payloads'"
    )
    assert pruned == 3
    (rows,) = fetch_one(conn, "SELECT count(*) FROM raw_crawl_payloads")
    assert rows == 1
    assert all(path.exists() for path in old)
    assert outbox(conn) == sorted(str(path.relative_to(root)) for path in old)

    # One file was removed by a run that crashed before it forgot the path: gone from disk,
    # still in the outbox.
    old[0].unlink()
    # A path outside the storage directory is never touched, only forgotten.
    outside = tmp_path / "outside.json.gz"
    outside.write_bytes(b"not the crawler's")
    conn.execute(
        "INSERT INTO payload_file_removals (storage_path, payload_id) VALUES ('../outside.json.gz', 0)"
    )

    (task_id,) = fetch_one(
        conn,
        "SELECT id FROM worker_tasks WHERE role = 'payload_file_removal' AND status = 'pending'",
    )
    worker = workers.start(
        "payload_file_removal", "removal-1", handlers="taskpool_crawler.handlers"
    )
    row = wait_for_status(
        conn, task_id, ("completed", "failed"), 30, also=worker.describe
    )
    assert row["status"] == "completed", row["error_message"]
    assert row["result"] == {"removed": 2, "missing": 1, "refused": 1}
    assert not any(path.exists() for path in old)
    assert young.exists(), "a payload whose row stays keeps its file"
    assert outside.read_bytes() == b"not the crawler's"
    assert outbox(conn) == []


def test_image_files_go_after_the_urls_no_product_shows(
    conn: psycopg.Connection,
    workers: Workers,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The product_images policy deletes a URL unlinked for longer than its keep and the image only
    it named; the image's file goes through the same outbox and task as a payload's."""
    root = tmp_path / "storage"
    monkeypatch.setenv(storage.STORAGE_DIR_ENV, str(root))
    conn.execute("UPDATE retention_policies SET enabled = (name = 'product_images')")
    (store_id,) = fetch_one(
        conn, "INSERT INTO dispensaries (name, platform) VALUES ('img', 'dutchie') RETURNING id"
    )
    saved_payload(conn, root, store_id, datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    (payload_id,) = fetch_one(conn, "SELECT max(id) FROM raw_crawl_payloads")
    conn.execute(
        """SELECT apply_menu_payload(%s, '[{"id": "a", "name": "A", "price": 1, "stock": 1},'
                                         ' {"id": "b", "name": "B", "price": 2, "stock": 1}]')""",
        (payload_id,),
    )
    images = {"a": ("http://img.test/a.png", "aa" * 32), "b": ("http://img.test/b.png", "bb" * 32)}
    conn.execute(
        "SELECT link_product_images(%s, %s::jsonb)",
        (payload_id, '[{"id": "a", "image_url": "http://img.test/a.png"}, {"id": "b", "image_url": "http://img.test/b.png"}]'),
    )
    files = {}
    for product, (url, sha256) in images.items():
        key = storage.image_storage_key(sha256, "png")
        storage.store_object(key, b"\x89PNG " + product.encode(), store=storage.LocalStorage(root))
        conn.execute("SELECT record_product_image(%s, %s, %s, 6, 'image/png')", (url, sha256, key))
        files[product] = root / key

    # b's product stops showing an image; a quarter later its URL and image go, then the file.
    conn.execute(
        """SELECT link_product_images(%s, '[{"id": "a", "image_url": "http://img.test/a.png"},'
                                          ' {"id": "b", "image_url": null}]')""",
        (payload_id,),
    )
    conn.execute("UPDATE product_image_urls SET unlinked_at = unlinked_at - interval '91 days' WHERE unlinked_at IS NOT NULL")
    (pruned,) = fetch_one(conn, "SELECT pruned FROM apply_retention() WHERE policy = 'product_images'")
    assert pruned == 1
    assert outbox(conn) == [storage.image_storage_key("bb" * 32, "png")]
    assert files["b"].exists(), "the file goes after its row, by the removal task"

    (task_id,) = fetch_one(
        conn, "SELECT id FROM worker_tasks WHERE role = 'payload_file_removal' AND status = 'pending'"
    )
    worker = workers.start("payload_file_removal", "removal-img", handlers="taskpool_crawler.handlers")
    row = wait_for_status(conn, task_id, ("completed", "failed"), 30, also=worker.describe)
    assert row["status"] == "completed", row["error_message"]
    assert row["result"] == {"removed": 1, "missing": 0, "refused": 0}
    assert not files["b"].exists()
    assert files["a"].exists(), "the image of a URL still shown keeps its file"
    assert outbox(conn) == []


def test_remove_image_refuses_a_key_outside_the_image_layout(tmp_path: Path) -> None:
    local = storage.LocalStorage(tmp_path)
    storage.store_object("images/zz/menu.png", b"x", store=local)
    for key in ("images/zz/menu.png", "payloads/2026/01/01/x.json.gz", "images/../../etc/passwd",
                "images/aa/" + "bb" * 32 + ".png"):
        with pytest.raises(storage.PayloadPathRefused):
            storage.remove_image(key, store=local)
    assert storage.object_exists("images/zz/menu.png", store=local)
    key = storage.image_storage_key("ab" * 32, "gif")
    storage.store_object(key, b"GIF89a", store=local)
    assert storage.remove_image(key, store=local) is True
    assert storage.remove_image(key, store=local) is False, "gone counts as removed"


def test_remove_payload_counts_a_missing_file_and_refuses_a_path_outside(
    tmp_path: Path,
) -> None:
    fetched_at = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    saved = storage.save_payload(BODY, 1, fetched_at, store=storage.LocalStorage(tmp_path))
    assert storage.remove_payload(saved.storage_path, store=storage.LocalStorage(tmp_path)) is True
    assert not Path(saved.location).exists()
    assert storage.remove_payload(saved.storage_path, store=storage.LocalStorage(tmp_path)) is False
    with pytest.raises(
        storage.PayloadPathRefused, match="outside the storage directory"
    ):
        storage.remove_payload("../elsewhere.json.gz", store=storage.LocalStorage(tmp_path))
    with pytest.raises(storage.PayloadPathRefused):
        storage.remove_payload(str(tmp_path / "absolute.json.gz"), store=storage.LocalStorage(tmp_path))


def test_a_symlink_is_removed_not_its_target(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    target = tmp_path / "precious"
    target.write_text("keep me")
    link = (
        root
        / "payloads"
        / "2026"
        / "03"
        / "01"
        / "store_1_20260301T080000000000Z.json.gz"
    )
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    assert storage.remove_payload(str(link.relative_to(root)), store=storage.LocalStorage(root)) is True
    assert not link.is_symlink()
    assert target.read_text() == "keep me"
