"""`pyworker payloads list|show|diff`: the crawler's menu payloads, from the operator's side.

Registered on the main group by pyworker.cli; the diff itself is SQL (diff_payloads,
diff_latest_payloads). These read raw_crawl_payloads and dispensaries directly, as every
operator command does: run them as the schema owner.
"""

from __future__ import annotations

from typing import Any

import click

from pyworker.cli import (
    Column,
    Settings,
    echo_fields,
    echo_json,
    echo_page,
    echo_table,
    json_option,
    pass_settings,
)
from pyworker.crawler import storage
from pyworker.crawler.normalize import CorruptMenu, normalize_menu
from pyworker.errors import NotFound

PAYLOAD_STATUSES = ("saved", "applied", "corrupt")

PAYLOAD_COLUMNS: list[Column] = [
    ("id", "id"),
    ("store", "dispensary_id"),
    ("name", "store_name"),
    ("platform", "platform"),
    ("fetched_at", "fetched_at"),
    ("status", "status"),
    ("products", "product_count"),
    ("bytes", "size_bytes"),
    ("path", "storage_path"),
    ("error", "error_message"),
]

PRODUCT_COLUMNS: list[Column] = [
    ("id", "id"),
    ("name", "name"),
    ("brand", "brand"),
    ("category", "category"),
    ("price", "price"),
    ("stock", "stock"),
]

CHANGE_COLUMNS: list[Column] = [("id", "id"), ("name", "name"), ("from", "from"), ("to", "to")]

# The diff's sections, in order: (key in diff_payloads' "diff" and "details", key in --json,
# columns, whose keys are also the order of a row's keys in --json).
DIFF_SECTIONS: list[tuple[str, str, list[Column]]] = [
    ("added", "added", PRODUCT_COLUMNS),
    ("removed", "removed", PRODUCT_COLUMNS),
    ("priceChanges", "price_changes", CHANGE_COLUMNS),
    ("stockChanges", "stock_changes", CHANGE_COLUMNS),
]


@click.group()
def payloads() -> None:
    """List, show and compare the menu payloads the crawler saved."""


@payloads.command("list")
@click.option(
    "--store", type=int, metavar="ID", help="Only payloads of this store (dispensary_id)."
)
@click.option("--status", type=click.Choice(PAYLOAD_STATUSES), help="Only payloads in this state.")
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=50,
    show_default=True,
    help="Payloads per page.",
)
@click.option(
    "--page", type=click.IntRange(min=1), default=1, show_default=True, help="Page number."
)
@json_option
@pass_settings
def list_payloads(
    settings: Settings, store: int | None, status: str | None, limit: int, page: int, as_json: bool
) -> None:
    """List payloads, newest fetch first, a page at a time, and how many there are in all.

    saved: recorded, not applied yet; applied: its products are in the database; corrupt: the
    body did not parse (the file is kept; the error says why). An unknown --store exits 2. With
    --json, the page's payload objects.
    """
    db = settings.db
    if store is not None:
        db.get_dispensary(store)
    rows = db.list_payloads(store=store, status=status, limit=limit, offset=(page - 1) * limit)
    if as_json:
        echo_json(rows)
        return
    total = db.count_payloads(store=store, status=status)
    filtered = store is not None or status is not None
    echo_page(
        rows, PAYLOAD_COLUMNS, total=total, page=page, limit=limit,
        noun="matching payload" if filtered else "payload",
    )


@payloads.command("show")
@click.argument("payload_id", metavar="ID", type=int)
@click.option(
    "--products",
    is_flag=True,
    help="Also read the payload's file (under TASKPOOL_STORAGE_DIR) and list its products.",
)
@json_option
@pass_settings
def show_payload(settings: Settings, payload_id: int, products: bool, as_json: bool) -> None:
    """Show payload ID: its store, file, checksum, status and what applying it changed.

    With --products, the products its file holds, normalized as product_refresh reads them; a
    missing or corrupt file is reported (exit 1).
    """
    row = settings.db.get_payload(payload_id)
    if row is None:
        raise NotFound(f"payload {payload_id} does not exist")
    rows: list[dict[str, Any]] | None = None
    if products:
        try:
            body = storage.load_payload(row["storage_path"], row["sha256"])
            rows = normalize_menu(body)
        except (
            storage.PayloadFileMissing,
            storage.PayloadFileCorrupt,
            storage.PayloadPathRefused,
            CorruptMenu,
        ) as error:
            if not as_json:
                echo_fields(row)
            raise click.ClickException(str(error)) from error
    if as_json:
        echo_json({"payload": row, **({"products": rows} if rows is not None else {})})
        return
    echo_fields(row)
    if rows is not None:
        click.echo()
        click.echo(f"products ({len(rows)}), from {storage.resolve(row['storage_path'])}:")
        echo_table(rows, PRODUCT_COLUMNS, empty="none")


@payloads.command("diff")
@click.argument("from_id", metavar="[FROM]", type=int, required=False)
@click.argument("to_id", metavar="[TO]", type=int, required=False)
@click.option(
    "--store", type=int, metavar="ID", help="Compare the store's two newest applied payloads."
)
@click.option("--summary", is_flag=True, help="Print the counts only, not each product.")
@json_option
@pass_settings
def diff_payloads(
    settings: Settings,
    from_id: int | None,
    to_id: int | None,
    store: int | None,
    summary: bool,
    as_json: bool,
) -> None:
    """Show what changed on a store's menu between payloads FROM and TO, or between the two
    newest applied payloads of --store: products added and removed, price and stock changes.

    Both payloads must be applied and of one store: an unknown payload or store, or payloads of
    two stores, exit 2; a payload not applied, or a store without two, exits 1. With --json, the
    document diff_payloads returns, its keys in snake_case and in a fixed order: from, to (id,
    fetched_at, product_count), diff (the counts), then details, which --summary leaves out.
    """
    db = settings.db
    if store is not None:
        if from_id is not None or to_id is not None:
            raise click.UsageError("give FROM and TO, or --store ID, not both")
        document = db.diff_latest_payloads(store)
    elif from_id is not None and to_id is not None:
        document = db.diff_payloads(from_id, to_id)
    else:
        raise click.UsageError("give two payload ids, FROM and TO, or --store ID")
    if as_json:
        echo_json(diff_json(document, details=not summary))
        return
    echo_diff(document, details=not summary)


def diff_json(document: dict[str, Any], *, details: bool) -> dict[str, Any]:
    """diff_payloads' document as --json prints it: snake_case keys in a fixed order, without
    the details for --summary."""

    def payload(side: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": side["id"],
            "fetched_at": side["fetchedAt"],
            "product_count": side["productCount"],
        }

    shown: dict[str, Any] = {
        "from": payload(document["from"]),
        "to": payload(document["to"]),
        "diff": {key: document["diff"][source] for source, key, _ in DIFF_SECTIONS},
    }
    if details:
        shown["details"] = {
            key: [{name: row[name] for _, name in columns} for row in document["details"][source]]
            for source, key, columns in DIFF_SECTIONS
        }
    return shown


def describe_diff(document: dict[str, Any]) -> str:
    """One line: which payloads, and how many of each change."""
    old, new, counts = document["from"], document["to"], document["diff"]
    return (
        f"payload {old['id']} ({old['fetchedAt']}, {old['productCount']} products) ->"
        f" payload {new['id']} ({new['fetchedAt']}, {new['productCount']} products):"
        f" {counts['added']} added, {counts['removed']} removed,"
        f" {counts['priceChanges']} price changes, {counts['stockChanges']} stock changes"
    )


def echo_diff(document: dict[str, Any], *, details: bool = True) -> None:
    """A diff for people: the summary line, then a table per kind of change."""
    click.echo(describe_diff(document))
    if not details:
        return
    for source, key, columns in DIFF_SECTIONS:
        rows = document.get("details", {}).get(source) or []
        if rows:
            click.echo()
            click.echo(f"{key.replace('_', ' ')} ({len(rows)}):")
            echo_table(rows, columns, empty="none")
