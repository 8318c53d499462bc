"""The crawler's commands: `pyworker payloads list|show|diff`, the menu payloads from the
operator's side, `pyworker resync generate`, a day of product resyncs, `pyworker crawl --role R
--state XX`, a crawl of every active store of a state, `pyworker stores add`
(add_store(), with the crawler's columns: platform, state, city, menu URL), and `pyworker
proxies list|add|remove|enable|disable`, the proxies platform requests go through.

The package's `pyworker.commands` entry points add them to pyworker's main group (with
`simulator`, taskpool_crawler.simulator.cli); they take its global options and settings. The
diff itself is SQL (diff_payloads, diff_latest_payloads). These read raw_crawl_payloads and
dispensaries directly, as every operator command does: run them as the schema owner.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from pyworker import NotFound
from pyworker.admin import (
    Column,
    Settings,
    Shown,
    counted,
    echo_fields,
    echo_page,
    echo_table,
    pass_settings,
    prints,
)
from taskpool_crawler import storage
from taskpool_crawler.db import CrawlerDatabase
from taskpool_crawler.normalize import CorruptMenu, normalize_menu

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


def crawler_db(settings: Settings) -> CrawlerDatabase:
    """The command's connection, made as pyworker's own (Settings.db) is, closed with it."""
    db = CrawlerDatabase(
        settings.database_url, application_name="pyworker-cli", exact_numbers=True, pooled=settings.pooled
    )
    click.get_current_context().call_on_close(db.close)
    return db


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
@prints()
@pass_settings
def list_payloads(settings: Settings, store: int | None, status: str | None, limit: int, page: int) -> Shown:
    """List payloads, newest fetch first, a page at a time, and how many there are in all.

    saved: recorded, not applied yet; applied: its products are in the database; corrupt: the
    body did not parse (the file is kept; the error says why). An unknown --store exits 2. With
    --json, the page's payload objects.
    """
    db = crawler_db(settings)
    if store is not None:
        db.get_dispensary(store)
    rows = db.list_payloads(store=store, status=status, limit=limit, offset=(page - 1) * limit)

    def page_of_all() -> None:
        total = db.count_payloads(store=store, status=status)
        filtered = store is not None or status is not None
        echo_page(
            rows, PAYLOAD_COLUMNS, total=total, page=page, limit=limit,
            noun="matching payload" if filtered else "payload",
        )

    return Shown(rows, page_of_all)


@payloads.command("show")
@click.argument("payload_id", metavar="ID", type=int)
@click.option(
    "--products",
    is_flag=True,
    help="Also read the payload from storage (TASKPOOL_STORAGE) and list its products.",
)
@prints()
@pass_settings
def show_payload(settings: Settings, payload_id: int, products: bool) -> Shown:
    """Show payload ID: its store, file, checksum, status and what applying it changed.

    With --products, the products its file holds, normalized as product_refresh reads them; a
    missing or corrupt file is reported (exit 1).
    """
    row = crawler_db(settings).get_payload(payload_id)
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
            storage.StorageUnavailable,
            CorruptMenu,
        ) as error:
            if not click.get_current_context().params.get("as_json"):
                echo_fields(row)
            raise click.ClickException(str(error)) from error
    return Shown(
        {"payload": row, **({"products": rows} if rows is not None else {})}, lambda: echo_payload(row, rows)
    )


def echo_payload(row: dict[str, Any], rows: list[dict[str, Any]] | None) -> None:
    echo_fields(row)
    if rows is not None:
        click.echo()
        click.echo(f"products ({len(rows)}), from {storage.locate(row['storage_path'])}:")
        echo_table(rows, PRODUCT_COLUMNS, empty="none")


@payloads.command("diff")
@click.argument("from_id", metavar="[FROM]", type=int, required=False)
@click.argument("to_id", metavar="[TO]", type=int, required=False)
@click.option(
    "--store", type=int, metavar="ID", help="Compare the store's two newest applied payloads."
)
@click.option("--summary", is_flag=True, help="Print the counts only, not each product.")
@prints()
@pass_settings
def diff_payloads(
    settings: Settings,
    from_id: int | None,
    to_id: int | None,
    store: int | None,
    summary: bool,
) -> Shown:
    """Show what changed on a store's menu between payloads FROM and TO, or between the two
    newest applied payloads of --store: products added and removed, price and stock changes.

    Both payloads must be applied and of one store: an unknown payload or store, or payloads of
    two stores, exit 2; a payload not applied, or a store without two, exits 1. With --json, the
    document diff_payloads returns, its keys in snake_case and in a fixed order: from, to (id,
    fetched_at, product_count), diff (the counts), then details, which --summary leaves out.
    """
    db = crawler_db(settings)
    if store is not None:
        if from_id is not None or to_id is not None:
            raise click.UsageError("give FROM and TO, or --store ID, not both")
        document = db.diff_latest_payloads(store)
    elif from_id is not None and to_id is not None:
        document = db.diff_payloads(from_id, to_id)
    else:
        raise click.UsageError("give two payload ids, FROM and TO, or --store ID")
    return Shown(diff_json(document, details=not summary), lambda: echo_diff(document, details=not summary))


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


@click.group()
def resync() -> None:
    """Plan product resyncs."""


@resync.command("generate")
@click.option(
    "--batches",
    type=int,
    default=6,
    show_default=True,
    metavar="N",
    help="Spread the stores over N slots a day (1..1440), starting at local midnight.",
)
@click.option(
    "--day",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    metavar="YYYY-MM-DD",
    help="The day to plan (default: today in the time zone).",
)
@click.option(
    "--time-zone",
    metavar="TZ",
    help="The slots' wall-clock time zone, e.g. America/New_York (default: the session's).",
)
@click.option(
    "--priority", type=int, default=0, show_default=True, help="The tasks' priority (-100..100)."
)
@prints()
@pass_settings
def generate_resync(
    settings: Settings,
    batches: int,
    day: datetime | None,
    time_zone: str | None,
    priority: int,
) -> Shown:
    """Plan a day of product_resync: one task per active store, in --batches slots.

    Idempotent: a store planned for that day once, or with a product_resync under way, is
    skipped. Prints how many tasks it created and how many stores it skipped, for which reason
    (generate_resync_plan); with --json, {"day", "time_zone", "created", "already_planned",
    "resync_under_way", "batches", "priority"}.
    """
    plan = crawler_db(settings).generate_resync_plan(
        batches, day.date() if day is not None else None, time_zone, priority
    )
    return Shown(
        {**plan, "batches": batches, "priority": priority}, lambda: click.echo(describe_resync_plan(plan, batches))
    )


def describe_resync_plan(plan: dict[str, Any], batches: int) -> str:
    """One line: what a plan created, for which day and slots, and why it skipped the rest."""
    line = (
        f"planned {counted(plan['created'], 'product_resync task')} for {plan['day'].isoformat()}"
        f" ({batches} batch{'' if batches == 1 else 'es'}, time zone {plan['time_zone']})"
    )
    skipped = [
        f"{counted(count, 'store')} {why}"
        for count, why in (
            (plan["already_planned"], "already planned for that day"),
            (plan["resync_under_way"], "with a product_resync pending, claimed or running"),
        )
        if count
    ]
    if skipped:
        return f"{line}; skipped {' and '.join(skipped)}"
    if not plan["created"]:
        return f"{line}: there is no active store"
    return line


@click.command("crawl")
@click.option(
    "--role",
    default="product_resync",
    show_default=True,
    metavar="ROLE",
    help="The crawl each store gets: product_resync or product_discovery.",
)
@click.option("--state", required=True, metavar="XX", help="The state's two capital letters, e.g. AZ.")
@click.option("--dry-run", is_flag=True, help="Count what it would queue and skip; queue nothing.")
@prints()
@pass_settings
def crawl(settings: Settings, role: str, state: str, dry_run: bool) -> Shown:
    """Queue a crawl (--role) of every active store of --state, one task each
    (enqueue_state_crawl), as seed 001's enqueue-state does.

    A store with a task of the role pending, claimed or running is skipped, so running it twice
    queues nothing more. Prints how many tasks it made and how many stores it skipped; with
    --json, {"role", "state", "dry_run", "made", "already_active"}. A role that is not a crawl
    of a store's menu, or a malformed state, exits 2 naming it.
    """
    counts = crawler_db(settings).enqueue_state_crawl(role, state, dry_run=dry_run)
    shown = {"role": role, "state": state, "dry_run": dry_run, **counts}
    return Shown(shown, lambda: click.echo(describe_state_crawl(shown)))


def describe_state_crawl(crawled: dict[str, Any]) -> str:
    """One line: the tasks a state crawl made (or would make) and the stores it skipped."""
    made = counted(crawled["made"], f"{crawled['role']} task")
    line = f"{'would queue' if crawled['dry_run'] else 'queued'} {made} for {crawled['state']}"
    if crawled["already_active"]:
        return (
            f"{line}; skipped {counted(crawled['already_active'], 'store')}"
            f" with a {crawled['role']} pending, claimed or running"
        )
    if not crawled["made"]:
        return f"{line}: {crawled['state']} has no active store"
    return line


@click.group()
def stores() -> None:
    """Add the stores (dispensaries) that per-store tasks name."""


@stores.command("add")
@click.argument("name")
@click.option("--platform", metavar="P", help="The platform that serves its menu, e.g. dutchie.")
@click.option("--state-code", metavar="XX", help="Its state's two capital letters, e.g. CA.")
@click.option("--city", metavar="CITY", help="Its city.")
@click.option(
    "--menu-url",
    metavar="URL",
    help="Where its menu is; entry_point_discovery resolves it to the store's platform id.",
)
@prints()
@pass_settings
def add_store(
    settings: Settings,
    name: str,
    platform: str | None,
    state_code: str | None,
    city: str | None,
    menu_url: str | None,
) -> dict[str, Any]:
    """Add store NAME (add_store()), active from now on, and print it: its id is what
    `enqueue --store` takes.

    A bad value exits 2, naming it; a menu URL another store has exits 1, naming that store.
    """
    return crawler_db(settings).add_store(name, platform=platform, state_code=state_code, city=city, menu_url=menu_url)


PROXY_COLUMNS: list[Column] = [
    ("id", "id"),
    ("platform", "platform"),
    ("url", "url"),
    ("state", "state"),
    ("requests", "requests_total"),
    ("failures", "failures_total"),
    ("in_a_row", "consecutive_failures"),
    ("rested_until", "rested_until"),
    ("last_success", "last_success_at"),
    ("last_failure", "last_failure_at"),
    ("last_error", "last_error"),
]


@click.group()
def proxies() -> None:
    """List and manage the proxies each platform's requests go through, in turn.

    A platform with no enabled proxy is crawled directly, unless it requires proxies (`proxies
    require`): then its requests fail, to be retried, until one is enabled. A proxy that fails a request is rested
    (passed over) for its rest_base, doubling with each failure in a row up to its rest_cap; a
    success clears its failures. Credentials in proxy URLs (user and password) are shown masked.
    """


@proxies.command("list")
@click.option("--platform", metavar="P", help="Only the proxies of this platform.")
@prints(
    PROXY_COLUMNS,
    empty="no proxies: every platform is crawled directly but those that require proxies (proxies platforms)",
)
@pass_settings
def list_proxies(settings: Settings, platform: str | None) -> list[dict[str, Any]]:
    """List the proxies by platform with their health: state (ready, rested or disabled), the
    requests taken through each and those that failed at it, failures in a row, until when it
    rests, and its last success, failure and error. With --json, the v_crawler_proxies rows."""
    return crawler_db(settings).list_proxies(platform)


PROXY_PLATFORM_COLUMNS: list[Column] = [
    ("platform", "platform"),
    ("required", "proxies_required"),
    ("requests", "requests"),
    ("proxies", "proxies"),
    ("enabled", "enabled_proxies"),
    ("ready", "ready_proxies"),
]


@proxies.command("platforms")
@prints(
    PROXY_PLATFORM_COLUMNS,
    empty="no platform has proxies or requires them: every platform is crawled directly",
)
@pass_settings
def list_proxy_platforms(settings: Settings) -> list[dict[str, Any]]:
    """List the platforms that have proxies or require them: whether each requires proxies, how
    its requests go (proxied, direct, or refused: it requires proxies and has none enabled), and
    its proxies, enabled and ready. With --json, the v_crawler_proxy_platforms rows."""
    return crawler_db(settings).list_proxy_platforms()


@proxies.command("require")
@click.argument("platform")
@prints()
@pass_settings
def require_proxies(settings: Settings, platform: str) -> dict[str, Any]:
    """Require proxies for PLATFORM (set_proxies_required()): with none enabled (none added, or
    all disabled), its requests fail, to be retried, and never go direct. Prints the platform's
    row; an unknown platform exits 2."""
    return crawler_db(settings).set_proxies_required(platform, True)


@proxies.command("allow-direct")
@click.argument("platform")
@prints()
@pass_settings
def allow_direct(settings: Settings, platform: str) -> dict[str, Any]:
    """Let PLATFORM's requests go direct when it has no enabled proxy (the default), undoing
    `proxies require`. Prints the platform's row; an unknown platform exits 2."""
    return crawler_db(settings).set_proxies_required(platform, False)


@proxies.command("add")
@click.argument("platform")
@click.argument("url")
@click.option(
    "--rest-base",
    metavar="INTERVAL",
    help="How long a first failure rests it, e.g. '30 seconds' (the default).",
)
@click.option(
    "--rest-cap",
    metavar="INTERVAL",
    help="The longest rest, however many failures in a row, e.g. '30 minutes' (the default).",
)
@prints()
@pass_settings
def add_proxy(
    settings: Settings, platform: str, url: str, rest_base: str | None, rest_cap: str | None
) -> dict[str, Any]:
    """Add proxy URL, http(s)://[user:password@]host[:port], to PLATFORM's rotation (add_proxy()),
    enabled, and print it (its credentials masked).

    An unknown platform or a bad URL exits 2, naming it; a URL the platform has already exits 1.
    """
    return crawler_db(settings).add_proxy(platform, url, rest_base=rest_base, rest_cap=rest_cap)


@proxies.command("remove")
@click.argument("proxy_id", metavar="ID", type=int)
@prints()
@pass_settings
def remove_proxy(settings: Settings, proxy_id: int) -> dict[str, Any]:
    """Remove proxy ID for good and print the row it had; an unknown ID exits 2."""
    return crawler_db(settings).remove_proxy(proxy_id)


@proxies.command("enable")
@click.argument("proxy_id", metavar="ID", type=int)
@prints()
@pass_settings
def enable_proxy(settings: Settings, proxy_id: int) -> dict[str, Any]:
    """Put proxy ID back into its platform's rotation (its health kept) and print it."""
    return crawler_db(settings).enable_proxy(proxy_id)


@proxies.command("disable")
@click.argument("proxy_id", metavar="ID", type=int)
@prints()
@pass_settings
def disable_proxy(settings: Settings, proxy_id: int) -> dict[str, Any]:
    """Take proxy ID out of its platform's rotation (its row and health kept) and print it."""
    return crawler_db(settings).disable_proxy(proxy_id)
