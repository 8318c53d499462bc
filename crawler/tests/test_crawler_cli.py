"""`pyworker payloads list|show|diff`, run with click's CliRunner against a real database.

Two payloads of one store are saved as the crawl saves them (storage.save_payload, under the
test's own TASKPOOL_STORAGE_DIR), recorded and applied through the SQL functions.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from worker_support import Run

from taskpool_crawler import storage


MENU_1 = [
    {
        "id": "p1",
        "name": "Blue Dream 3.5g",
        "brand": "Lumen",
        "category": "Flower",
        "price": 35.0,
        "stock": 12,
    },
    {
        "id": "p2",
        "name": "Runtz 1g",
        "brand": "Sundial",
        "category": "Flower",
        "price": 9.99,
        "stock": 0,
    },
    {
        "id": "p3",
        "name": "Calm Tincture 30ml",
        "brand": None,
        "category": "Tinctures",
        "price": 40.0,
        "stock": 5,
    },
]
MENU_2 = [
    {
        "id": "p1",
        "name": "Blue Dream 3.5g",
        "brand": "Lumen",
        "category": "Flower",
        "price": 33.5,
        "stock": 12,
    },
    {
        "id": "p2",
        "name": "Runtz 1g",
        "brand": "Sundial",
        "category": "Flower",
        "price": 9.99,
        "stock": 8,
    },
    {
        "id": "p4",
        "name": "Mango Gummies 100mg",
        "brand": "Hazy Days",
        "category": "Edibles",
        "price": 18.0,
        "stock": 20,
    },
]


@pytest.fixture
def crawled(
    conn: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """A store with two applied payloads (MENU_1, then MENU_2), their files on disk."""
    monkeypatch.setenv(storage.STORAGE_DIR_ENV, str(tmp_path / "storage"))
    (store_id,) = conn.execute(
        "SELECT (upsert_discovered_stores('dutchie', %s::jsonb))[1]",
        (json.dumps([{"platform_store_id": "s1", "name": "Green Leaf", "state": "AZ"}]),),
    ).fetchone()
    ids = []
    for hour, products in ((8, MENU_1), (12, MENU_2)):
        fetched_at = datetime(2026, 3, 1, hour, tzinfo=timezone.utc)
        saved = storage.save_payload(
            json.dumps({"products": products}).encode(), store_id, fetched_at
        )
        (payload_id,) = conn.execute(
            "SELECT record_crawl_payload(%s, %s, %s, %s, %s)",
            (store_id, fetched_at, saved.storage_path, saved.size_bytes, saved.sha256),
        ).fetchone()
        conn.execute("SELECT apply_menu_payload(%s, %s::jsonb)", (payload_id, json.dumps(products)))
        ids.append(payload_id)
    return {"store": store_id, "payloads": ids, "storage": tmp_path / "storage"}


def test_list_shows_payloads_newest_first_and_filters(run: Run, crawled: dict[str, Any]) -> None:
    first, second = crawled["payloads"]
    result = run("payloads", "list")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:7] == [
        "id",
        "store",
        "name",
        "platform",
        "fetched_at",
        "status",
        "products",
    ]
    assert [line.split()[0] for line in lines[1:-1]] == [str(second), str(first)]
    assert "Green Leaf" in lines[1] and "applied" in lines[1]
    assert lines[-1] == "1-2 of 2 payloads (page 1 of 1)"

    listed = json.loads(run("payloads", "list", "--store", str(crawled["store"]), "--json").output)
    assert [row["id"] for row in listed] == [second, first]
    assert {row["product_count"] for row in listed} == {3}
    assert run("payloads", "list", "--status", "corrupt").output == (
        "no matching payloads on page 1: 0 matching payloads in all, 1 page of 50\n"
    )
    assert run("payloads", "list", "--status", "nope").exit_code == 2
    assert run("payloads", "list", "--limit", "1", "--page", "2").output.splitlines()[-1] == (
        "2-2 of 2 payloads (page 2 of 2)"
    )
    unknown = run("payloads", "list", "--store", "999999")
    assert unknown.exit_code == 2 and "dispensary 999999 does not exist" in unknown.output


def test_show_prints_the_payload_and_with_products_its_file(
    run: Run, crawled: dict[str, Any]
) -> None:
    first, _ = crawled["payloads"]
    result = run("payloads", "show", str(first), "--products")
    assert result.exit_code == 0, result.output
    assert "status:" in result.output and "applied" in result.output
    assert "products (3), from " in result.output
    assert "Calm Tincture 30ml" in result.output

    shown = json.loads(run("payloads", "show", str(first), "--products", "--json").output)
    assert shown["payload"]["store_name"] == "Green Leaf"
    assert shown["products"] == [{**product, "size": None, "image_url": None} for product in MENU_1]


def test_show_names_a_missing_file_and_an_unknown_payload(
    run: Run, crawled: dict[str, Any]
) -> None:
    first, _ = crawled["payloads"]
    (path,) = [
        p
        for p in crawled["storage"].rglob("*.json.gz")
        if p.name.endswith("T080000000000Z.json.gz")
    ]
    path.unlink()
    result = run("payloads", "show", str(first), "--products")
    assert result.exit_code == 1
    assert f"Error: payload file {path} does not exist" in result.output
    missing = run("payloads", "show", "999999")
    assert missing.exit_code == 2
    assert "payload 999999 does not exist" in missing.output


def test_diff_between_two_payloads(
    run: Run, crawled: dict[str, Any], conn: psycopg.Connection
) -> None:
    first, second = crawled["payloads"]
    result = run("payloads", "diff", str(first), str(second))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"payload {first} (")
    assert lines[0].endswith("1 added, 1 removed, 1 price changes, 1 stock changes")
    for heading in ("added (1):", "removed (1):", "price changes (1):", "stock changes (1):"):
        assert heading in lines
    assert "Mango Gummies 100mg" in result.output and "Calm Tincture 30ml" in result.output

    summary = run("payloads", "diff", str(first), str(second), "--summary")
    assert summary.output.splitlines() == lines[:1]


def test_diff_json_is_snake_case_in_a_fixed_order_and_honours_summary(
    run: Run, crawled: dict[str, Any], conn: psycopg.Connection
) -> None:
    first, second = crawled["payloads"]
    sql = conn.execute("SELECT diff_payloads(%s, %s)", (first, second)).fetchone()[0]
    document = json.loads(run("payloads", "diff", str(first), str(second), "--json").output)
    assert list(document) == ["from", "to", "diff", "details"]
    assert list(document["from"]) == ["id", "fetched_at", "product_count"]
    assert document["to"] == {
        "id": second, "fetched_at": sql["to"]["fetchedAt"], "product_count": 3
    }
    counts = ["added", "removed", "price_changes", "stock_changes"]
    assert list(document["diff"].items()) == [(key, 1) for key in counts]
    assert list(document["details"]) == counts
    (added,) = document["details"]["added"]
    assert list(added.items()) == list(MENU_2[2].items())
    assert document["details"]["price_changes"] == [
        {"id": "p1", "name": "Blue Dream 3.5g", "from": 35.0, "to": 33.5}
    ]
    assert list(document["details"]["stock_changes"][0]) == ["id", "name", "from", "to"]
    summary = json.loads(
        run("payloads", "diff", "--store", str(crawled["store"]), "--summary", "--json").output
    )
    assert summary == {key: document[key] for key in ("from", "to", "diff")}


def test_diff_of_a_store_compares_its_two_newest_payloads(
    run: Run, crawled: dict[str, Any]
) -> None:
    first, second = crawled["payloads"]
    result = run("payloads", "diff", "--store", str(crawled["store"]), "--summary")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"payload {first} (")
    assert f"-> payload {second} (" in result.output


def test_diff_refuses_bad_requests(
    run: Run, crawled: dict[str, Any], conn: psycopg.Connection
) -> None:
    first, second = crawled["payloads"]
    assert run("payloads", "diff").exit_code == 2
    assert run("payloads", "diff", str(first)).exit_code == 2
    both = run("payloads", "diff", str(first), str(second), "--store", str(crawled["store"]))
    assert both.exit_code == 2 and "not both" in both.output
    unknown = run("payloads", "diff", str(first), "999999")
    assert unknown.exit_code == 2 and "payload 999999 does not exist" in unknown.output
    no_store = run("payloads", "diff", "--store", "999999")
    assert no_store.exit_code == 2 and "dispensary 999999 does not exist" in no_store.output
    (other,) = conn.execute(
        "SELECT (upsert_discovered_stores('dutchie', %s::jsonb))[1]",
        (json.dumps([{"platform_store_id": "s2", "name": "Kind Roots"}]),),
    ).fetchone()
    lonely = run("payloads", "diff", "--store", str(other))
    assert lonely.exit_code == 1
    assert f"dispensary {other} has 0 applied payloads; a diff needs two" in lonely.output
