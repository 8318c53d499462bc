"""The crawler's handlers, one per role.

Installed (crawler/pyproject.toml), the package names this module in the `pyworker.handlers`
entry-point group: every worker imports it, and it registers these handlers for the roles that
have none yet, so a handler module named with --handlers keeps its roles (`--handlers
taskpool_crawler.handlers` does the same without the entry point).

    store_discovery        list each platform's stores by state; upsert_discovered_stores;
                           return {"newStoreIds": [...]}, the stores awaiting their first crawl
                           (SQL chains product_discovery per store)
    entry_point_discovery  a store known by its menu URL: resolve its platform id, record it
                           (set_store_platform_id), and queue its first crawl if it had none
    product_discovery      a store's first crawl, and
    product_resync         every later one: fetch the menu, store the raw body (a directory or
                           a bucket), then record_crawl_payload; return {"payload_id": ...} (SQL
                           chains product_refresh with that payload_id)
    product_refresh        load the payload from storage (never the platform), normalize it and
                           hand the rows to apply_menu_payload (which gives a product without an
                           id its product_hash_id), then their image URLs to
                           link_product_images (which queues image_download per URL not stored)
    image_download         download one image URL (through the platform's rate limit), check it
                           is an image, store it once per content hash at
                           images/ab/abcdef….png in the storage (a directory or a bucket), and
                           record_product_image; a broken image fails this task only
    analytics_refresh      refresh_analytics()
    payload_file_removal   remove the files of the payloads retention deleted (the outbox
                           payload_files_to_remove), then forget them; a file already gone counts
    payload_storage_sweep  remove the stored payloads no row names (unrecorded_payload_paths)
                           once older than a grace period: a worker killed between its upload
                           and record_crawl_payload leaves one

Every platform request takes a token of its platform's rate limit (in SQL) before it goes: the
claim took it for the one request of a product_discovery, product_resync or image_download
task (CLAIMS_PLATFORM_TOKEN: claim_task hands out none of their tasks while the platform has no
token), and any other request reserves one with reserve_platform_request and sleeps the wait
it names (an abort stops the wait). Each reports its outcome with record_platform_result. A
platform whose circuit is open snoozes the task (no retry spent); claim_task hands out none of
its tasks until the cooldown ends.

A platform with proxies (crawler_proxies, `pyworker proxies add`) is crawled through them: the
HTTP client takes the next healthy one for each request (taskpool_crawler.proxies) and tries
the next when one fails. The request still takes one turn of the rate limit, however many
proxies it tried. When no proxy could carry it (all rested, or each tried failed), the attempt
fails, to be retried, and the circuit breaker is not told: the platform was never reached.

Outcomes: a platform error worth retrying (HTTP 429 and 5xx, a timeout, a dropped connection)
and a corrupt menu fail the attempt, retried with the role's backoff; a corrupt menu's raw body
is kept, recorded and marked corrupt (mark_payload_corrupt) first. What a retry cannot fix fails
the task at once (PermanentError): an unknown or deleted store, a store the platform does not
know (404), a missing or altered payload file (the error names the path), a payload path
outside the storage or not a regular file (never read), a payload file over
storage.MAX_PAYLOAD_FILE_BYTES or decompressing past storage.MAX_PAYLOAD_BODY_BYTES (a gzip
bomb; marked corrupt).

Settings, from the environment:
    TASKPOOL_PLATFORM_URL      the platform's base URL (the simulator's), for the HTTP client
    TASKPOOL_PLATFORM_TIMEOUT  seconds each try of a platform request may take, all of it:
                               connecting, the headers, every read (default 10; through
                               proxies, at most 3 tries)
    TASKPOOL_PLATFORM_MAX_MENU_BYTES
                               the most a menu (or a store listing, a resolve) may be; a larger
                               answer is refused as soon as reading passes it (default 8 MiB,
                               at most storage.MAX_PAYLOAD_BODY_BYTES)
    TASKPOOL_STORAGE           where payloads go: a directory (a path or file:// URL) or a
                               bucket, s3://bucket[/prefix] (default ./storage; the older
                               TASKPOOL_STORAGE_DIR names a directory); see storage
    AWS_ENDPOINT_URL           a bucket's S3-compatible server, when it is not AWS (boto3's
                               own setting, as are its credentials)
    TASKPOOL_PLATFORMS         store_discovery's platforms when its task names none
                               (default dutchie,jane: the simulator's)
    TASKPOOL_STATES            store_discovery's states when its task names none
                               (default AZ,CA,CO,MI)

Each handler works on its attempt's own database connection (`database(task)`, which is
`task.database(CrawlerDatabase)`: borrowed from the worker's pool, sized to its --concurrency,
and given back when the attempt ends), never on one shared by the process: store_discovery's
transaction holds its own upserts only, whatever else the process runs at the same time.

The handlers call only functions granted to taskpool_worker (get_dispensary, get_crawl_payload
and the rest), so a crawler worker needs no table privileges. A real platform plugs in through
`set_client_factory(lambda platform: MyClient(...))`, in a module loaded after this one.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

from pyworker import (
    Aborted,
    Completion,
    ConfigurationError,
    NotFound,
    PermanentError,
    Refused,
    Registry,
    Snooze,
    Task,
    current_task,
    registry,
)
from taskpool_crawler import storage
from taskpool_crawler.client import (
    DEFAULT_MAX_MENU_BYTES,
    HttpPlatformClient,
    PlatformClient,
    PlatformError,
    ProxyUnavailable,
)
from taskpool_crawler.db import CrawlerDatabase
from taskpool_crawler.proxies import DatabaseProxies
from taskpool_crawler.normalize import CorruptMenu, normalize_menu

log = logging.getLogger("pyworker")

# The crawler's handlers, by role; `register` hands them to a worker's registry.
crawler_handlers = Registry()
handler = crawler_handlers.handler

PLATFORM_URL_ENV = "TASKPOOL_PLATFORM_URL"
PLATFORM_TIMEOUT_ENV = "TASKPOOL_PLATFORM_TIMEOUT"
PLATFORM_MAX_MENU_BYTES_ENV = "TASKPOOL_PLATFORM_MAX_MENU_BYTES"
PLATFORMS_ENV = "TASKPOOL_PLATFORMS"
STATES_ENV = "TASKPOOL_STATES"
DEFAULT_PLATFORMS = ("dutchie", "jane")
DEFAULT_STATES = ("AZ", "CA", "CO", "MI")
DEFAULT_TIMEOUT_SECONDS = 10.0
# The roles whose claim takes their platform's token (task_roles.claims_platform_token, set by
# the crawler's Sqitch change crawler_roles_claim_platform_tokens): each of their tasks makes one
# request, to task.platform, and sends it without asking the rate limit again.
CLAIMS_PLATFORM_TOKEN = frozenset({"product_discovery", "product_resync", "image_download"})
# A task that finds its platform's circuit open goes back for this long, spending no retry;
# claim_task keeps the platform's tasks back until the cooldown ends anyway.
CIRCUIT_OPEN_SNOOZE_SECONDS = 5.0

ClientFactory = Callable[[str], PlatformClient]


# Settings, the platform client and the database connection


def http_client(platform: str) -> HttpPlatformClient:
    """The default client: the simulator's HTTP API at $TASKPOOL_PLATFORM_URL, through the
    platform's proxies (crawler_proxies) when it has any."""
    base_url = os.environ.get(PLATFORM_URL_ENV)
    if not base_url:
        raise ConfigurationError(
            f"{PLATFORM_URL_ENV} is not set: the crawler needs the platform's base URL"
            " (the simulator's, e.g. http://127.0.0.1:8765)"
        )
    raw_timeout = os.environ.get(PLATFORM_TIMEOUT_ENV) or str(DEFAULT_TIMEOUT_SECONDS)
    try:
        timeout = float(raw_timeout)
    except ValueError:
        raise ConfigurationError(
            f"{PLATFORM_TIMEOUT_ENV} must be a number of seconds, not {raw_timeout!r}"
        ) from None
    return HttpPlatformClient(
        base_url,
        platform,
        timeout=timeout,
        proxies=DatabaseProxies(_running_task_database),
        max_menu_bytes=max_menu_bytes(),
    )


def max_menu_bytes() -> int:
    """$TASKPOOL_PLATFORM_MAX_MENU_BYTES, or the client's default: never more than a saved
    payload may decompress to, which product_refresh could not load."""
    raw = os.environ.get(PLATFORM_MAX_MENU_BYTES_ENV)
    if not raw:
        return DEFAULT_MAX_MENU_BYTES
    bound = int(raw) if raw.strip().isdigit() else 0
    if not 1 <= bound <= storage.MAX_PAYLOAD_BODY_BYTES:
        raise ConfigurationError(
            f"{PLATFORM_MAX_MENU_BYTES_ENV} must be a whole number of bytes from 1 to"
            f" {storage.MAX_PAYLOAD_BODY_BYTES} (what a saved payload may decompress to),"
            f" not {raw!r}"
        )
    return bound


_client_factory: ClientFactory = http_client


def set_client_factory(factory: ClientFactory) -> None:
    """Crawl with `factory(platform)`'s clients instead of the HTTP one (a real platform, a fake)."""
    global _client_factory
    _client_factory = factory


def client_for(platform: str) -> PlatformClient:
    return _client_factory(platform)


def database(task: Task) -> CrawlerDatabase:
    """The crawler's calls on the attempt's own connection (task.database(): borrowed from the
    worker's pool for this attempt alone), so a transaction holds this handler's statements only."""
    return task.database(CrawlerDatabase)


def _running_task_database() -> CrawlerDatabase:
    """The database of the attempt running in this context (the HTTP client's proxies ask it)."""
    task = current_task.get()
    if task is None:
        raise ConfigurationError("the crawler's platform client asks the database only within a task's attempt")
    return database(task)


def _names(value: Any, what: str, normal: Callable[[str], str]) -> list[str]:
    """A list of names from a payload field (a list or a comma-separated string)."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PermanentError(f"{what} must be a list of names, not {value!r}")
    names = [normal(v.strip()) for v in value if v.strip()]
    if not names:
        raise PermanentError(f"{what} is empty")
    return list(dict.fromkeys(names))


def _from_env(name: str, default: tuple[str, ...]) -> list[str]:
    raw = os.environ.get(name)
    return [part.strip() for part in raw.split(",") if part.strip()] if raw else list(default)


# Source governance


def _check_abort(task: Task) -> None:
    if task.abort.fired:
        raise Aborted(task.abort.reason)


def await_turn(task: Task, platform: str) -> None:
    """Wait until the platform's rate limit lets one request through.

    At once when the task's claim took the token (a role of CLAIMS_PLATFORM_TOKEN, to the task's
    own platform); else reserve_platform_request takes the next token, now or ahead, and the
    handler sleeps the wait it names, asking nothing more (no polling: one call a request).
    Snooze when the circuit is open; Aborted when the attempt is aborted while waiting.
    """
    _check_abort(task)
    if task.role in CLAIMS_PLATFORM_TOKEN and platform == task.platform:
        return
    try:
        wait = database(task).reserve_platform_request(platform)
    except Refused as refused:
        log.warning(
            "Task %s: %s; snoozing %.0f s", task.id, refused, CIRCUIT_OPEN_SNOOZE_SECONDS
        )
        raise Snooze(CIRCUIT_OPEN_SNOOZE_SECONDS) from refused
    if wait > 0 and task.abort.wait(wait):
        raise Aborted(task.abort.reason)


def report(task: Task, platform: str, succeeded: bool, error: str | None = None) -> None:
    """Tell the circuit breaker how a platform request went; log a failure that finds it open."""
    circuit = database(task).record_platform_result(platform, succeeded, error)
    if not succeeded and circuit == "open":
        log.warning(
            "Platform %s: its circuit is open (claims of its tasks wait for the cooldown);"
            " last error: %s",
            platform,
            error,
        )


def report_error(task: Task, platform: str, error: PlatformError) -> None:
    """Tell the circuit breaker of a failed platform request: a platform that answered, even 404,
    is up, so only retryable errors count as failures; a request no proxy could carry never
    reached the platform, so the breaker is not told."""
    if isinstance(error, ProxyUnavailable):
        log.warning("Platform %s: %s", platform, error.message)
        return
    report(task, platform, not error.retryable, error.message if error.retryable else None)


def platform_call(task: Task, platform: str, call: Callable[[], Any]) -> Any:
    """`call()` (one platform request) within the platform's rate limit, its outcome reported
    (report_error). Any request to a platform goes through this, e.g. with
    `client_for(platform).get(url)` as `call` for a URL of the platform's."""
    await_turn(task, platform)
    try:
        value = call()
    except PlatformError as error:
        report_error(task, platform, error)
        raise
    report(task, platform, True)
    return value


def _fail_for_good_unless_retryable(error: PlatformError, what: str) -> None:
    """Raise PermanentError for a platform error no retry can fix (a 404, another 4xx); return
    for one worth retrying, which the caller re-raises."""
    if not error.retryable:
        raise PermanentError(f"{what}: {error.message}") from error


# Stores


def _store(task: Task) -> dict[str, Any]:
    """The task's store (get_dispensary); PermanentError when the task has none or it is gone."""
    if task.dispensary_id is None:
        raise PermanentError(f"role {task.role} needs a dispensary_id and the task has none")
    try:
        return database(task).get_dispensary(task.dispensary_id)
    except NotFound as error:
        raise PermanentError(
            f"dispensary {task.dispensary_id} does not exist (deleted?)"
        ) from error


def _store_platform(task: Task, store: dict[str, Any]) -> str:
    platform = store.get("platform") or task.platform
    if not platform:
        raise PermanentError(
            f"dispensary {store['id']} has no platform: set dispensaries.platform to crawl it"
        )
    return platform


def _inactive(store: dict[str, Any]) -> dict[str, Any] | None:
    """The result that skips an inactive store, or None for an active one."""
    if store.get("active", True):
        return None
    log.info("Dispensary %s is inactive: nothing to crawl", store["id"])
    return {"skipped": f"dispensary {store['id']} is inactive"}


# The handlers


@handler("store_discovery")
def store_discovery(task: Task) -> dict[str, Any]:
    """List each platform's stores in each state, then upsert them all in one transaction.

    Payload: {"platform": "dutchie"} or {"platforms": [...]}, {"states": ["AZ", ...]} or
    {"state_code": "AZ"} (what a schedule with a state sets); what it leaves out comes from the
    task's platform, then TASKPOOL_PLATFORMS and TASKPOOL_STATES. Every listing comes first and
    the upserts commit together. newStoreIds are the stores awaiting their first crawl: the new
    ones, and known ones never crawled with no product_discovery queued (upsert_discovered_stores
    says which). So an attempt that dies after its upsert committed, before its completion
    chained their product_discovery, loses none: its retry returns them again.
    """
    payload = task.payload or {}
    if "platforms" in payload:
        platforms = _names(payload["platforms"], "platforms", str.lower)
    elif payload.get("platform") or task.platform:
        platforms = [str(payload.get("platform") or task.platform)]
    else:
        platforms = _from_env(PLATFORMS_ENV, DEFAULT_PLATFORMS)
    if "states" in payload:
        states = _names(payload["states"], "states", str.upper)
    elif payload.get("state_code"):
        states = _names([payload["state_code"]], "state_code", str.upper)
    else:
        states = _from_env(STATES_ENV, DEFAULT_STATES)

    listed: dict[str, list[dict[str, Any]]] = {}
    for platform in platforms:
        client = client_for(platform)
        stores: list[dict[str, Any]] = []
        for state in states:
            try:
                found = platform_call(task, platform, partial(client.list_stores, state))
            except PlatformError as error:
                _fail_for_good_unless_retryable(error, f"listing {platform} stores in {state}")
                raise
            log.info("Task %s: %s lists %s stores in %s", task.id, platform, len(found), state)
            stores.extend(found)
        listed[platform] = stores
    _check_abort(task)

    db = database(task)
    new_ids: list[int] = []
    summary: dict[str, Any] = {}
    with db.transaction():
        for platform, stores in listed.items():
            ids = db.upsert_discovered_stores(platform, stores) if stores else []
            new_ids.extend(ids)
            summary[platform] = {"stores": len(stores), "new": len(ids)}
    log.info(
        "Task %s: %s stores listed, %s awaiting their first crawl",
        task.id,
        sum(map(len, listed.values())),
        len(new_ids),
    )
    return {
        "newStoreIds": new_ids,
        "stores": sum(len(stores) for stores in listed.values()),
        "states": states,
        "platforms": summary,
    }


@handler("entry_point_discovery")
def entry_point_discovery(task: Task) -> Any:
    """Resolve the platform id of a store known by its menu URL, and record it.

    A store never crawled gets its first crawl queued (product_discovery) in the same
    completion. A store that has its id already is left as it is.
    """
    store = _store(task)
    platform = _store_platform(task, store)
    if store.get("platform_dispensary_id"):
        return {
            "platform": platform,
            "platform_dispensary_id": store["platform_dispensary_id"],
            "resolved": False,
        }
    menu_url = store.get("menu_url")
    if not menu_url:
        raise PermanentError(
            f"dispensary {store['id']} has neither a platform id nor a menu URL: nothing to resolve"
        )
    client = client_for(platform)
    try:
        platform_id = platform_call(task, platform, lambda: client.resolve(menu_url))
    except PlatformError as error:
        _fail_for_good_unless_retryable(error, f"resolving {menu_url} on {platform}")
        raise
    if platform_id is None:
        raise PermanentError(f"{platform} knows no store with the menu URL {menu_url}")
    database(task).set_store_platform_id(store["id"], platform_id)
    log.info("Task %s: dispensary %s is %s store %s", task.id, store["id"], platform, platform_id)
    result = {"platform": platform, "platform_dispensary_id": platform_id, "resolved": True}
    if store.get("last_crawled_at") is None and store.get("active", True):
        return Completion(
            result,
            follow_ups=[{"role": "product_discovery", "dispensary_id": store["id"]}],
        )
    return result


def fetch_and_save(task: Task) -> dict[str, Any]:
    """product_discovery and product_resync: fetch the store's menu and keep it as a payload.

    The raw body is saved and recorded whatever it holds. A body that does not parse is then
    marked corrupt (kept for inspection) and the attempt fails, to be retried; the platform
    counts it as a failed request.
    """
    store = _store(task)
    skipped = _inactive(store)
    if skipped is not None:
        return skipped
    platform = _store_platform(task, store)
    platform_id = store.get("platform_dispensary_id")
    if not platform_id:
        raise PermanentError(
            f"dispensary {store['id']} has no {platform} store id yet:"
            " run entry_point_discovery for it (it resolves the menu URL)"
        )
    client = client_for(platform)
    label = f"{platform} store {platform_id}"

    await_turn(task, platform)
    try:
        body = client.fetch_menu(platform_id)
    except PlatformError as error:
        report_error(task, platform, error)
        _fail_for_good_unless_retryable(error, f"fetching the menu of {label}")
        raise
    fetched_at = datetime.now(timezone.utc)
    problem: CorruptMenu | None = None
    try:
        products = normalize_menu(body)
    except CorruptMenu as corrupt:
        problem = corrupt
    report(
        task,
        platform,
        problem is None,
        None if problem is None else f"corrupt menu of {label}: {problem}",
    )

    saved = storage.save_payload(body, store["id"], fetched_at)
    db = database(task)
    payload_id = db.record_crawl_payload(
        store["id"], fetched_at, saved.storage_path, saved.size_bytes, saved.sha256
    )
    if problem is not None:
        message = (
            f"the menu of {label} is corrupt: {problem}; its raw payload {payload_id} is kept"
            f" at {saved.location}"
        )
        db.mark_payload_corrupt(payload_id, str(problem))
        raise CorruptMenu(message) from problem
    log.info(
        "Task %s: saved the menu of dispensary %s (%s products, %s bytes) as payload %s",
        task.id,
        store["id"],
        len(products),
        saved.size_bytes,
        payload_id,
    )
    return {
        "payload_id": payload_id,
        "products": len(products),
        "storage_path": saved.storage_path,
        "size_bytes": saved.size_bytes,
    }


handler("product_discovery")(fetch_and_save)
handler("product_resync")(fetch_and_save)


@handler("product_refresh")
def product_refresh(task: Task) -> dict[str, Any]:
    """Apply a saved payload: its file, checked against the recorded sha256, normalized.

    Payload: {"payload_id": N}. Reads the storage only, inside its root, within the
    size bounds (see storage). A missing file, one that is not the bytes recorded, a path that
    storage refuses or a file too large fails the task at once with the path; so does a payload
    of another store.
    """
    payload_id = (task.payload or {}).get("payload_id")
    if not isinstance(payload_id, int) or isinstance(payload_id, bool):
        raise PermanentError(
            f'product_refresh needs a payload {{"payload_id": N}}, not {task.payload!r}'
        )
    db = database(task)
    try:
        payload = db.get_crawl_payload(payload_id)
    except NotFound as error:
        raise PermanentError(f"payload {payload_id} does not exist") from error
    if task.dispensary_id is not None and payload["dispensary_id"] != task.dispensary_id:
        raise PermanentError(
            f"payload {payload_id} is of dispensary {payload['dispensary_id']},"
            f" not of this task's dispensary {task.dispensary_id}"
        )
    if payload["status"] == "corrupt":
        raise PermanentError(f"payload {payload_id} is corrupt: {payload['error_message']}")
    try:
        body = storage.load_payload(payload["storage_path"], payload["sha256"])
        products = normalize_menu(body)
    except storage.PayloadFileMissing as error:
        raise PermanentError(str(error)) from error
    except storage.PayloadPathRefused as error:
        raise PermanentError(f"payload {payload_id}: {error}") from error
    except (storage.PayloadFileCorrupt, CorruptMenu) as error:
        problem = str(error)
        if isinstance(error, CorruptMenu):
            problem = f"payload file {storage.locate(payload['storage_path'])}: {problem}"
        if payload["status"] == "saved":
            # An applied payload keeps its status: its products are in the database already.
            db.mark_payload_corrupt(payload_id, problem)
        raise PermanentError(f"payload {payload_id}: {problem}") from error
    _check_abort(task)
    images = _product_images(db, products)
    result = db.apply_menu_payload(payload_id, products)
    # After the products exist; a retry applies the same products again (a no-op) and links.
    linked = db.link_product_images(payload_id, images)
    log.info(
        "Task %s: applied payload %s to dispensary %s: %s; images: %s",
        task.id,
        payload_id,
        payload["dispensary_id"],
        result,
        linked,
    )
    return {"payload_id": payload_id, **result, "images": linked}


def _product_images(db: CrawlerDatabase, products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each product's {"id", "image_url"}, taken out of its row (apply_menu_payload takes no
    image_url). A product without an id is under the id apply_menu_payload gives it, which the
    database computes (product_hash_id); of products hashing the same, only the first, the one
    apply_menu_payload keeps."""
    unnamed = [row for row in products if row["id"] is None]
    hashed = iter(
        db.product_hash_ids([{key: row[key] for key in ("name", "brand", "category", "size")} for row in unnamed])
    )
    images: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in products:
        image_url = row.pop("image_url")
        product_id = row["id"] if row["id"] is not None else next(hashed)
        if product_id not in seen:
            seen.add(product_id)
            images.append({"id": product_id, "image_url": image_url})
    return images


# The most an image may be: a product photo is well under it; a larger answer is refused unread.
MAX_IMAGE_BYTES = 4 * 1024 * 1024
# What each accepted type's bytes start with, end with, and its extension in the storage key.
IMAGE_TYPES: dict[str, tuple[tuple[bytes, ...], tuple[bytes, ...], str]] = {
    "image/png": ((b"\x89PNG\r\n\x1a\n",), (b"IEND\xaeB`\x82",), "png"),
    "image/jpeg": ((b"\xff\xd8\xff",), (b"\xff\xd9",), "jpg"),
    "image/gif": ((b"GIF87a", b"GIF89a"), (b";",), "gif"),
}


class BrokenImage(Exception):
    """An answer that is not a whole image of the type it says: an HTML page, bytes cut short."""


def image_extension(data: bytes, content_type: str) -> str:
    """The storage extension of an image whose bytes are a whole image of `content_type`
    (its magic bytes at the start, its end marker at the end); BrokenImage otherwise."""
    declared = content_type.split(";")[0].strip().lower()
    if declared not in IMAGE_TYPES:
        raise BrokenImage(
            f"the answer's Content-Type is {content_type or 'missing'!r}, not one of"
            f" {', '.join(IMAGE_TYPES)}"
        )
    starts, ends, extension = IMAGE_TYPES[declared]
    if not data.startswith(starts):
        raise BrokenImage(
            f"the answer says {declared} but its {len(data)} bytes do not start as one"
            f" (they start {data[:16]!r})"
        )
    if not data.endswith(ends):
        raise BrokenImage(f"the {declared} is cut short: its {len(data)} bytes lack the end marker")
    return extension


@handler("image_download")
def image_download(task: Task) -> dict[str, Any]:
    """Download a product image once, and keep it once per content hash.

    Payload: {"image_url": URL}, on the task's platform (link_product_images queues it so), whose
    rate limit and circuit breaker the request goes through. The bytes, at most MAX_IMAGE_BYTES,
    must be a whole image of the type the answer says (image_extension). They are stored at
    images/<ab>/<sha256>.<ext> unless that key holds them already (another URL, an earlier
    attempt), then recorded (record_product_image, idempotent per hash). A 404 or an answer over
    the bound fails the task at once; a broken image (not an image, cut short) and a platform
    error fail the attempt, retried. Every failure is recorded on the URL
    (record_image_download_failure) and fails this task only: the products, the menu and the
    other images are not held back.
    """
    url = (task.payload or {}).get("image_url")
    if not isinstance(url, str) or not url:
        raise PermanentError(f'image_download needs a payload {{"image_url": URL}}, not {task.payload!r}')
    if not task.platform:
        raise PermanentError(f"image_download of {url} needs the task's platform (whose rate limit it obeys)")
    client = client_for(task.platform)
    db = database(task)
    try:
        data, content_type = platform_call(
            task, task.platform, partial(client.fetch_image, url, MAX_IMAGE_BYTES)
        )
        extension = image_extension(data, content_type)
    except PlatformError as error:
        db.record_image_download_failure(url, error.message)
        _fail_for_good_unless_retryable(error, f"downloading the image {url}")
        raise
    except BrokenImage as error:
        db.record_image_download_failure(url, str(error))
        raise BrokenImage(f"the image {url} is broken: {error}") from error
    sha256 = hashlib.sha256(data).hexdigest()
    key = storage.image_storage_key(sha256, extension)
    written = not storage.object_exists(key)
    if written:
        storage.store_object(key, data)
    recorded = db.record_product_image(
        url, sha256, key, len(data), content_type.split(";")[0].strip().lower()
    )
    log.info(
        "Task %s: image %s is %s (%s bytes, %s)",
        task.id,
        url,
        key,
        len(data),
        "stored" if written else "stored already",
    )
    return {
        "image_url": url,
        "storage_key": key,
        "size_bytes": len(data),
        "written": written,
        "new": recorded["new"],
    }


@handler("analytics_refresh")
def analytics_refresh(task: Task) -> dict[str, Any]:
    """Refresh the analytics materialized views (concurrently, in SQL)."""
    rows = database(task).refresh_analytics()
    log.info("Task %s: analytics refreshed: %s", task.id, rows)
    return rows


# How many payload files payload_file_removal removes before it forgets them in the database.
REMOVAL_BATCH = 100


@handler("payload_file_removal")
def payload_file_removal(task: Task) -> dict[str, Any]:
    """Remove the files of the payloads and product images whose rows retention deleted, a batch
    at a time: each file first, then its outbox row. A crash in between leaves the row, and the next run removes a
    file that is gone already, which counts as removed. A path outside the storage directory is
    never touched, only forgotten (and counted as refused)."""
    db = database(task)
    counts = {"removed": 0, "missing": 0, "refused": 0}
    while True:
        _check_abort(task)
        paths = db.payload_files_to_remove(REMOVAL_BATCH)
        if not paths:
            break
        for storage_path in paths:
            try:
                remove = storage.remove_image if storage_path.startswith(storage.IMAGES_PREFIX) else storage.remove_payload
                counts["removed" if remove(storage_path) else "missing"] += 1
            except storage.PayloadPathRefused as error:
                log.warning("Task %s: %s", task.id, error)
                counts["refused"] += 1
        db.forget_removed_payload_files(paths)
    log.info("Task %s: payload files: %s", task.id, counts)
    return counts


# The longest grace the sweep takes: a year (longer keeps every orphan as long as retention would).
MAX_SWEEP_GRACE = 365 * 24 * 3600


@handler("payload_storage_sweep")
def payload_storage_sweep(task: Task) -> dict[str, Any]:
    """Remove the stored payloads that no row names, once older than the grace period.

    Payload: {"older_than_seconds": N} (default storage.DEFAULT_SWEEP_GRACE, 6 hours), from 60
    to a year. A payload is stored before its row is recorded; a worker killed in between leaves an
    object no row will ever name. The sweep lists payloads/ in the storage, asks
    unrecorded_payload_paths which of those old enough have no row, and removes them (and, in
    a directory, the temporary files of writes that never finished).
    """
    seconds = (task.payload or {}).get("older_than_seconds", storage.DEFAULT_SWEEP_GRACE.total_seconds())
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 60 <= seconds <= MAX_SWEEP_GRACE:
        raise PermanentError(
            f'payload_storage_sweep takes {{"older_than_seconds": N}}, N from 60 to {MAX_SWEEP_GRACE},'
            f" not {task.payload!r}"
        )
    db = database(task)
    # The database's clock, as retention's: an object's age is told against the same time.
    counts = storage.sweep_unrecorded_payloads(
        db.unrecorded_payload_paths, older_than=timedelta(seconds=seconds), now=db.now()
    )
    log.info("Task %s: unrecorded payloads: %s", task.id, counts)
    return counts


def register(target: Registry) -> None:
    """Give `target` the crawler's handlers for the roles that have no handler there yet."""
    for role in crawler_handlers.roles:
        if target.get(role) is None:
            target.register(role, crawler_handlers.get(role))


# Importing this module (the entry point, or --handlers) registers them with the worker's registry.
register(registry)
